"""Text helpers shared by the judge, the metrics, the corpus reader and the embedder: one definition of
"CJK character" and one sentence splitter, so windows, numbered sentences and chunks agree on what a
sentence is.
"""

from __future__ import annotations

import re

#: Han ideographs (with extension A and compatibility forms), kana, and CJK / full-width punctuation.
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")
# Sentence ends: English punctuation followed by space, Chinese punctuation, or a line break. A decimal
# point ("3.14") is not followed by a space, so it never ends a sentence.
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；…])\s*|\n+")


def has_cjk(text: str) -> bool:
    return CJK.search(text) is not None


def split_sentences(text: str) -> list[str]:
    """Sentences of English or Chinese text, stripped, empty ones dropped."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def join_sentences(left: str, right: str) -> str:
    """Chinese sentences are joined without a space, English ones with one."""
    if not left:
        return right
    return left + right if CJK.match(left[-1]) or CJK.match(right[:1]) else f"{left} {right}"
