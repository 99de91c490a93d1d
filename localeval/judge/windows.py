"""Cutting text that does not fit the judge's context into windows that do, at sentence ends.

Nothing is ever silently truncated: a metric whose passages are longer than the window checks every
window and says how many it took.
"""

from __future__ import annotations

from typing import Callable

from ..errors import JudgeError
from ..text import join_sentences, split_sentences

TokenCounter = Callable[[str], int]


def split_to_fit(text: str, max_tokens: int, count_tokens: TokenCounter) -> list[str]:
    """Pieces of at most max_tokens tokens, cut at sentence ends (English and Chinese punctuation); a single
    over-long sentence is cut by characters."""
    if max_tokens < 1:
        raise JudgeError(f"cannot split text into windows of {max_tokens} tokens; the prompt leaves no room")
    pieces: list[str] = []
    current = ""
    for sentence in split_sentences(text):
        for part in _cut_long(sentence, max_tokens, count_tokens):
            joined = join_sentences(current, part)
            if current and count_tokens(joined) > max_tokens:
                pieces.append(current)
                current = part
            else:
                current = joined
    if current:
        pieces.append(current)
    return pieces


def _cut_long(sentence: str, max_tokens: int, count_tokens: TokenCounter) -> list[str]:
    parts = []
    while count_tokens(sentence) > max_tokens:
        low, high = 1, len(sentence)  # longest character prefix that fits, by bisection
        while low < high:
            mid = (low + high + 1) // 2
            low, high = (mid, high) if count_tokens(sentence[:mid]) <= max_tokens else (low, mid - 1)
        parts.append(sentence[:low])
        sentence = sentence[low:]
    return parts + ([sentence] if sentence else [])
