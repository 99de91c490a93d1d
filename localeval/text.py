"""Text helpers shared by the judge, the metrics, the corpus reader and the embedder: one definition of
"CJK character" and one sentence splitter, so windows, numbered sentences and chunks agree on what a
sentence is.
"""

from __future__ import annotations

import re

#: Kana and Han ideographs (with extensions A-F and compatibility forms): each is about one word.
CJK_LETTERS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
#: CJK letters plus CJK and full-width punctuation: what marks text as Chinese or Japanese.
CJK = re.compile(f"[{CJK_LETTERS}\u3000-\u303f\uff00-\uffef]")
_CJK_LETTER = re.compile(f"[{CJK_LETTERS}]")
# Sentence ends: English punctuation followed by space, Chinese punctuation, or a line break. A decimal
# point ("3.14") is not followed by a space, so it never ends a sentence.
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；…])\s*|\n+")
# Full stops that end a word, not a sentence, on one line of English: a list marker standing alone or after
# a colon ("1.", "**iv.**", "They are: 1."), a title ("Mr.", "St.", "Dr."), "e.g." and "i.e.", "No." or
# "Fig." before a number, and an initial or dotted acronym before a word ("David A. Stewart", "the U.S.
# Army", "E. coli"). Split there, "1." and "Stewart." would each be judged as a statement of their own; the
# cost is that a sentence really ending in an initial ("He got an A. Then...") is read with the next one.
_MARKER = r"[*_]*\(?(?:\d{1,3}|[A-Za-z]|[ivxIVX]{2,4})[.)][*_]*"
_LIST_MARKER = re.compile(rf"\s*{_MARKER}")
_MARKER_AFTER_COLON = re.compile(rf"[:：]\s*{_MARKER}$")
_TITLE = re.compile(r"(?<![\w.])(?:Mrs?|Ms|Dr|Prof|St|Mt|Ft|Rev|Gen|Col|Lt|Capt|Sgt|Gov|Sen|Rep|vs|cf|e\.g|i\.e)\.$")
_NUMBERED = re.compile(r"(?<![\w.])(?:No|Nos|Fig|Figs|Vol|pp|p)\.$")
_INITIAL = re.compile(r"(?<![\w'’-])[A-Z]\.$")
#: How much of the text before a break `_mid_sentence` reads: more than the longest of the shapes above.
_TAIL = 32


def has_cjk(text: str) -> bool:
    return CJK.search(text) is not None


def count_cjk_letters(text: str) -> int:
    return len(_CJK_LETTER.findall(text))


def split_sentences(text: str) -> list[str]:
    """Sentences of English or Chinese text, stripped, empty ones dropped."""
    return [text[start:end] for start, end in sentence_spans(text)]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Where each of `split_sentences`' sentences lies in `text` (start, end), for cutting some out in place."""
    spans, position = [], 0
    for end in [*_SENTENCE_END.finditer(text), None]:
        if end and _mid_sentence(text[max(position, end.start() - _TAIL):end.start()], end.start() - position <= _TAIL,
                                 text[end.end():end.end() + 1], end.group()):
            continue
        stop = end.start() if end else len(text)
        piece = text[position:stop]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            spans.append((position + lead, position + len(piece.rstrip())))
        if end:
            position = end.end()
    return spans


def _mid_sentence(tail: str, whole: bool, following: str, gap: str) -> bool:
    """Whether a break falls inside a sentence rather than ending one. `tail` is the end of the text since
    the last sentence end (all of it when `whole`), `following` the first character after the break. Only
    that end is read: the text since the last sentence end grows with every break skipped, and reading all
    of it would make a text of many initials ("A. B. C. ...") quadratic."""
    if "\n" in gap or not tail.endswith("."):
        return False
    return ((whole and _LIST_MARKER.fullmatch(tail) is not None)
            or _MARKER_AFTER_COLON.search(tail) is not None or _TITLE.search(tail) is not None
            or (_NUMBERED.search(tail) is not None and following.isdigit())
            or (_INITIAL.search(tail) is not None and following.isalpha()))


def join_sentences(left: str, right: str) -> str:
    """Chinese sentences are joined without a space, English ones with one."""
    if not left:
        return right
    return left + right if CJK.match(left[-1]) or CJK.match(right[:1]) else f"{left} {right}"
