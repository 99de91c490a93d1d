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
# A run of Chinese marks ("……", "？！") and a closing quote or bracket after it ("。”") end one sentence
# together, after the run.
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；…])(?![。！？；…”’」』）)])\s*"
                           r"|(?<=[。！？；…][”’」』）)])(?![”’」』）)])\s*"
                           r"|(?<=[。！？；…][”’」』）)][”’」』）)])(?![”’」』）)])\s*|\n+")
# Full stops that end a word, not a sentence, on one line of English: a list marker standing alone or a
# first item's after a colon ("1.", "**b.", "They are: 1."), "e.g." and "i.e.", a title ("Mr.", "St.",
# "Dr."), "No." or "Fig." before a number, and an initial or dotted acronym before a word ("David A.
# Stewart", "the U.S. Army", "E. coli"). Split there, "1." and "Stewart." would each be judged as a
# statement of their own. A title or an initial before a capitalised word that usually opens a sentence
# ("... moved to the U.S. He became ...") still ends it; the cost is that a sentence ending in an initial before any other
# word ("He got an A. Nobody else did.") is read with the next one.
#: A list item's marker: digits, a letter or a roman numeral, then a full stop or a bracket, maybe in bold.
LIST_MARKER = r"[*_]*\(?(?:\d{1,3}|[A-Za-z]|[ivxIVX]{2,4})[.)][*_]*"
_MARKER_ALONE = re.compile(rf"\s*{LIST_MARKER}")
_LIST_AFTER_COLON = re.compile(r"(?<!\d)[:：]\s+[*_]*\(?1\.$")
_ABBREVIATION = re.compile(r"(?<![\w.])(?:vs|cf|e\.g|i\.e)\.$")
_TITLE = re.compile(r"(?<![\w.])(?:Mrs?|Ms|Dr|Prof|St|Mt|Ft|Rev|Gen|Col|Lt|Capt|Sgt|Gov|Sen|Rep)\.$")
_NUMBERED = re.compile(r"(?<![\w.])(?:No|Nos|Fig|Figs|Vol|pp|p)\.$")
_INITIAL = re.compile(r"(?<![\w'’-])[A-Z]\.$")
#: Words that open English sentences far more often than they follow a title or an initial.
_OPENERS = frozenset("""the it its he she they we you this that these those there his her their in on at after
before when while then however but and so yet if as for since""".split())
_WORD = re.compile(r"[^\W\d_]+")
#: How much of the text around a break `_mid_sentence` reads: more than the longest of the shapes above.
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
                                 text[end.end():end.end() + _TAIL], end.group()):
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
    the last sentence end (all of it when `whole`), `following` the start of the text after the break. Only
    these ends are read: the text since the last sentence end grows with every break skipped, and reading
    all of it would make a text of many initials ("A. B. C. ...") quadratic."""
    if "\n" in gap or not tail.endswith("."):
        return False
    if (whole and _MARKER_ALONE.fullmatch(tail)) or _LIST_AFTER_COLON.search(tail) or _ABBREVIATION.search(tail):
        return True
    if _NUMBERED.search(tail):
        return following[:1].isdigit()
    word = _WORD.match(following)
    # an opener ends the sentence only capitalised: "the U.S. and Canada" goes on, "the U.S. And then" does not
    if not word or (word.group()[0].isupper() and word.group().lower() in _OPENERS):
        return False
    # a title may stand before a name in any script; an initial before Chinese text ends an English sentence
    return bool(_TITLE.search(tail)) or (_INITIAL.search(tail) is not None and word.group().isascii())


def join_sentences(left: str, right: str) -> str:
    """Chinese sentences are joined without a space, English ones with one."""
    if not left:
        return right
    return left + right if CJK.match(left[-1]) or CJK.match(right[:1]) else f"{left} {right}"


#: English function words: two texts share them without saying anything in common. Chinese is matched by
#: overlapping character pairs, which carry content.
FUNCTION_WORDS = frozenset("""
a an the and or but if then than so of in on at to for from by with without about as into onto over under
is are was were be been being am do does did done have has had having will would shall should can could may
might must it its this that these those there here he she they we you i me him her them us my your his their
our who whom whose which what when where why how not no nor yes also very more most much many some any all
each every other such only own same just s t
""".split())
_CJK_PAIR = re.compile(f"(?=([{CJK_LETTERS}]{{2}}))")
_NON_CJK_WORD = re.compile(f"[^\\W_{CJK_LETTERS}]+")
#: The label metrics.steps.joined() opens each passage with, for the GGUF judge to see where one begins.
PASSAGE_LABEL = re.compile(r"^\[\d+\] ", re.M)


def content_words(text: str) -> set[str]:
    """Words that say what a text is about: its non-function words, and every pair of adjacent Chinese
    characters (overlapping, so that a pair does not depend on where a run of characters starts)."""
    lowered = text.lower()
    return {w for w in _NON_CJK_WORD.findall(lowered) if w not in FUNCTION_WORDS} | set(_CJK_PAIR.findall(lowered))


def word_spans(text: str) -> list[tuple[int, int]]:
    """Where each word that is not Chinese starts and ends: content_words' words, in place."""
    return [match.span() for match in _NON_CJK_WORD.finditer(text)]
