"""What a cross-encoder reads of a pair: for answer_faithfulness, the statement with each content word that
its context does not name put in brackets ("Charles Bronson died on August [31], 2003.").

A classifier learns from about a thousand generated pairs, and from the plain texts it learned something
else than support: its held-out AUROC stayed at chance on every seed and recipe tried, while the share of a
statement's words that its context names, a rule with nothing to learn, did better on the same pairs
(docs/pages/benchmarks/accuracy.md, "Trained classifier judges"). Marked, the words the context lacks are a
signal the model reads directly; what marks cannot tell (a name swapped for another name of the same
passage, a negation) it still has to learn from the pairs.

The marks are made the same way where the classifier learns and where it scores, and only against what it
reads: when it learns, a passage too long for its window is cut first (`fitted`), as the trainer would cut
it, so no word is taken as named by a part it never saw. Square brackets already in a statement become
round ones and the word inside a mark is lower-cased (the base is uncased), so a bracket only ever means a
mark and never spells one of BERT's special tokens ("[SEP]"). The context is read without the "[n] "
labels that number the passages for the GGUF judge, which would name "1", "2", ... Any change to how the
marks are made is a new classifier format (folder.FORMAT_VERSION): a folder is scored as it learned.
"""

from __future__ import annotations

from typing import Any

from ..text import PASSAGE_LABEL, content_words, word_spans
from .judgements import Judgement

OPEN, CLOSE = "[", "]"
#: Special tokens a cross-encoder adds around a pair ([CLS] a [SEP] b [SEP]).
PAIR_OVERHEAD = 3


def shown(judgement: Judgement, first: str, second: str) -> tuple[str, str]:
    """The pair as the judgement's cross-encoder reads it."""
    if judgement.name != "answer_faithfulness":
        return first, second
    context = PASSAGE_LABEL.sub("", first)
    return context, marked(second, content_words(context))


def fitted(judgement: Judgement, first: str, second: str, tokenizer: Any, max_length: int) -> tuple[str, str]:
    """The pair as shown() for training: a faithfulness context cut first to the tokens left beside the
    statement with every content word marked, the most its marks can take (scoring sizes its windows the
    same way, judge/classified.py), so the marks are made against what the model reads of it."""
    if judgement.name != "answer_faithfulness":
        return first, second
    room = max(max_length - PAIR_OVERHEAD - len(tokenizer.tokenize(marked(second, set()))), 0)
    pieces = tokenizer.tokenize(first)
    if len(pieces) > room:
        first = tokenizer.convert_tokens_to_string(pieces[:room])
    return shown(judgement, first, second)


def marked(statement: str, named: set[str]) -> str:
    """The statement with its content words that are not in `named` bracketed. Against no context every
    content word is marked, the most tokens a statement can take."""
    text = statement.replace(OPEN, "(").replace(CLOSE, ")")
    pieces, end = [], 0
    for start, stop in word_spans(text):
        word = text[start:stop]
        if content_words(word) and word.lower() not in named:
            pieces += [text[end:start], OPEN, word.lower(), CLOSE]
            end = stop
    return "".join(pieces) + text[end:]
