"""What a classifier judge reads of a pair (localeval/classifier/reading.py): a faithfulness statement with the
content words its context does not name in brackets, the same where it learns and where it scores."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from localeval.classifier.folder import Classifier, ClassifierFolder
from localeval.classifier.judgements import JUDGEMENTS
from localeval.classifier.reading import fitted, marked, shown

FAITHFUL = JUDGEMENTS["answer_faithfulness"]
CONTEXT = "Charles Bronson died on August 30, 2003 in Los Angeles, of pneumonia."


def test_the_words_the_context_does_not_name_are_bracketed() -> None:
    assert shown(FAITHFUL, CONTEXT, "Charles Bronson died on August 31, 2003.") == (
        CONTEXT, "Charles Bronson died on August [31], 2003.")
    # case does not matter, function words are never marked, and a named word is named wherever it stands;
    # a marked word is lower-cased, so that no mark spells a special token of the uncased base ("[SEP]")
    assert shown(FAITHFUL, CONTEXT, "In 2003, PNEUMONIA killed the actor Bronson in Chicago, SEP.")[1] == (
        "In 2003, PNEUMONIA [killed] the [actor] Bronson in [chicago], [sep].")
    assert shown(FAITHFUL, CONTEXT, "He died of it.")[1] == "He died of it."


def test_brackets_of_the_statement_become_round_so_a_bracket_is_only_a_mark() -> None:
    assert marked("Bronson died in 2003 [1].", {"bronson", "died", "2003", "1"}) == "Bronson died in 2003 (1)."
    assert marked("Bronson died [in 2003].", {"bronson", "died"}) == "Bronson died (in [2003])."


def test_the_labels_numbering_the_passages_name_nothing_and_are_not_read() -> None:
    context = "[1] Bronson had 2 sons.\n\n[2] He won an award in [3] cities."  # the last [3] is the passage's
    assert shown(FAITHFUL, context, "Bronson had 3 sons and 1 award.") == (
        "Bronson had 2 sons.\n\nHe won an award in [3] cities.", "Bronson had 3 sons and [1] award.")


class Words:
    """A tokenizer of whitespace-separated words (the real one is MiniLM's, in test_classifier.py)."""

    def tokenize(self, text: str) -> list[str]:
        return text.split()

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        return " ".join(tokens)


def test_in_training_a_word_named_only_past_the_window_is_marked() -> None:
    context = "Bronson was an actor. He died in 2003 of pneumonia in Los Angeles."
    # 3 special tokens + 4 for "[bronson] [died] in [2003]." leave 8 - 7 = 1 word of the context: "Bronson"
    assert fitted(FAITHFUL, context, "Bronson died in 2003.", Words(), 8) == (
        "Bronson", "Bronson [died] in [2003].")
    assert fitted(FAITHFUL, context, "Bronson died in 2003.", Words(), 128) == (context, "Bronson died in 2003.")
    relevance = JUDGEMENTS["context_relevance"]
    assert fitted(relevance, "Who died?", context, Words(), 8) == ("Who died?", context)  # the trainer cuts it


def test_against_no_context_every_content_word_is_marked() -> None:
    assert marked("The actor died in Los Angeles.", set()) == "The [actor] [died] in [los] [angeles]."


def test_in_chinese_text_only_what_is_not_chinese_is_marked() -> None:
    assert marked("他在2003年去世。", set()) == "他在[2003]年去世。"


def test_only_faithfulness_pairs_are_marked() -> None:
    for name in ("context_relevance", "answer_relevance"):
        assert shown(JUDGEMENTS[name], "What killed Bronson?", "Pneumonia [1].") == (
            "What killed Bronson?", "Pneumonia [1].")


class Recording:
    """A stand-in cross-encoder that records the pairs it is given (the real one is in test_classifier.py)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def predict(self, pairs: Sequence[tuple[str, str]], **kwargs: Any) -> np.ndarray:
        self.seen += list(pairs)
        return np.full(len(pairs), 0.5)


def test_a_classifier_scores_the_pair_as_it_was_trained_to_read_it() -> None:
    classifier = Classifier(ClassifierFolder(Path("clf"), {"judgements": {FAITHFUL.name: {}}}, "0" * 64))
    recording = Recording()
    classifier._models[FAITHFUL.name] = recording
    assert classifier.probabilities(FAITHFUL, [(CONTEXT, "Bronson died in Chicago.")]) == [0.5]
    assert recording.seen == [(CONTEXT, "Bronson died in [chicago].")]
