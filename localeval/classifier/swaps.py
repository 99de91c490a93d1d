"""Unfaithful statements made from faithful ones by swapping one name or number, FactCC's transformations
(Kryściński et al., 2020, "Evaluating the Factual Consistency of Abstractive Text Summarization").

The negatives `localeval generate` gives a faithfulness classifier differ from the passage in topic
(another question's answer) or in the judge's style of contradiction, so a classifier can tell them apart
without checking a fact. A faithful statement with one name or number replaced differs in one fact only:
an intrinsic swap puts in another name or number of the same passage (every word still appears in it: word
overlap cannot tell), an extrinsic one a name or number that the passage never mentions. Names are runs of
capitalised words (one word that opens a sentence is not taken for a name unless it is the whole
statement), so the rule reads English (the classifier's base is English); a statement with no such span
gives no swap. A statement that is one name ("Aleksander Ford", an answer as short QA sets give it) is
only swapped for a name the passage does not hold: checked without its question, any name the passage
holds is supported.
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np

_NUMBER = r"\d+(?:[.,:/]\d+)*"
_NAME = r"[A-Z][\w'’-]*(?:(?:\s+(?:of|the|de|la|von|van|der|du|y))*\s+[A-Z][\w'’-]*)*"
_SPAN = re.compile(rf"(?<![\w'’-])(?:(?P<number>{_NUMBER})|(?P<name>{_NAME}))(?![\w'’-])")
#: What opens a sentence: a capital there says nothing about a name.
_OPENS = re.compile(r"(?:^|[.!?:;]\s+|[\"“(]\s*)$")
#: Words that open sentences capitalised without naming anything ("The Soviet Union": the name is the rest).
_OPENERS = frozenset("""a an the in on at of to for from by with as after before during when while since
until if it its he his she her they their this that these those there here we our you your both each every
some many most all no one two three""".split())
#: A sentence ends at . ! ? before a space, or before a capital with no space when a lower-case word, a digit or a
#: bracket ends it ("in 2013.Reggie Yates": passages joined without one), not after an initial ("U.S.").
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“])|(?<=[a-z0-9)][.!?])(?=[A-Z])")
_YEAR = re.compile(r"1\d{3}|20\d{2}")


def spans(text: str) -> list[tuple[str, str]]:
    """The names, years and other numbers of `text`, as (kind, span), in order and without repeats (a year
    is swapped for a year, not for "0.5")."""
    found: list[tuple[str, str]] = []
    for match in _SPAN.finditer(text):
        span = match.group(0)
        kind = ("year" if _YEAR.fullmatch(span) else "number") if match.group("number") else "name"
        if kind == "name" and _OPENS.search(text[: match.start()]) and not _whole(span, text):
            words = span.split(None, 1)
            if len(words) < 2:
                continue  # one capitalised word opening a sentence: a name or not, nothing tells
            if words[0].lower() in _OPENERS:
                span = words[1]
                if not span[:1].isupper():
                    continue
        if (kind != "name" or len(span) > 1) and (kind, span) not in found:
            found.append((kind, span))
    return found


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def swapped(statement: str, passage: str, elsewhere: Sequence[tuple[str, str]], rng: np.random.Generator) -> str | None:
    """`statement` with one of its names or numbers replaced: by another of the same kind from `passage`
    when it has one (intrinsic), else by one from `elsewhere` that the passage does not hold (extrinsic);
    None when nothing can be swapped. `statement` is taken as faithful to `passage`."""
    own = spans(statement)
    if not own:
        return None
    # A bare name is supported wherever the passage names it, so only a name from elsewhere makes it wrong.
    if not (len(own) == 1 and _whole(own[0][1], statement)):
        found = _swap(statement, own, spans(passage), rng)
        if found is not None:
            return found
    held = passage.lower()  # the corpus-wide pool, filtered only when the passage's own spans give no swap
    return _swap(statement, own, [s for s in elsewhere if s[1].lower() not in held], rng)


def _swap(statement: str, own: Sequence[tuple[str, str]], pool: Sequence[tuple[str, str]],
          rng: np.random.Generator) -> str | None:
    """One of the statement's spans replaced by one of the pool's of the same kind, drawn with rng."""
    lowered = statement.lower()
    options = [(old, new) for kind, old in own for other_kind, new in pool
               if kind == other_kind and new.lower() not in lowered and not _overlaps(old, new)]
    if not options:
        return None
    old, new = options[int(rng.integers(len(options)))]
    return statement.replace(old, new, 1)


def _whole(span: str, text: str) -> bool:
    """Whether the span is all the text says ("Paris.", an answer that is one name)."""
    return span == text.strip().rstrip(".!?").strip()


def _overlaps(a: str, b: str) -> bool:
    """Whether one span holds the other ("Ford" and "Aleksander Ford" name one person)."""
    a, b = a.lower(), b.lower()
    return a in b or b in a
