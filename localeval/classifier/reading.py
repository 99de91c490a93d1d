"""What a cross-encoder reads of a pair: for answer_faithfulness, the statement with each content word that
its context does not name put in brackets ("Charles Bronson died on August [31], 2003.").

A classifier learns from a few hundred generated pairs, and from the plain texts it learned something else
than support: its held-out AUROC stayed at chance on every seed and recipe tried, while the share of a
statement's words that its context names, a rule with nothing to learn, did better on the same pairs
(docs/pages/benchmarks/accuracy.md, "Trained classifier judges"). Marked, the words the context lacks are a
signal the model reads directly; what marks cannot tell (a name swapped for another name of the same passage,
a negation) it still has to learn from the pairs. The marks are made the same way where the
classifier learns and where it scores, so it always reads what it was trained on. Square brackets already
in a statement become round ones, so a bracket only ever means a mark (a citation "[1]" is not one).
"""

from __future__ import annotations

from ..metrics.steps import content_words, word_spans
from .judgements import Judgement

OPEN, CLOSE = "[", "]"


def shown(judgement: Judgement, first: str, second: str) -> tuple[str, str]:
    """The pair as the judgement's cross-encoder reads it."""
    if judgement.name != "answer_faithfulness":
        return first, second
    return first, marked(second, content_words(first))


def marked(statement: str, named: set[str]) -> str:
    """The statement with its content words that are not in `named` bracketed. Against no context every
    content word is marked, the most tokens a statement can take (classified.py sizes windows with it)."""
    text = statement.replace(OPEN, "(").replace(CLOSE, ")")
    pieces, end = [], 0
    for start, stop in word_spans(text):
        word = text[start:stop]
        if content_words(word) and word.lower() not in named:
            pieces += [text[end:start], OPEN, word, CLOSE]
            end = stop
    return "".join(pieces) + text[end:]
