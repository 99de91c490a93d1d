"""FactCC's name and number swaps that give a classifier judge negatives differing in one fact
(localeval/classifier/swaps.py), on hand-written statements with exact expected spans and swaps."""

from __future__ import annotations

import numpy as np
import pytest

from localeval.classifier.swaps import sentences, spans, swapped

PASSAGE = ("Aleksander Ford (born 24 November 1908 in Kiev) was a Polish film director. "
           "He died on 4 April 1980 in Naples, Florida.")


def test_spans_are_names_and_numbers_but_not_a_word_that_opens_a_sentence() -> None:
    assert spans(PASSAGE) == [("name", "Aleksander Ford"), ("number", "24"), ("name", "November"),
                              ("year", "1908"), ("name", "Kiev"), ("name", "Polish"), ("number", "4"),
                              ("name", "April"), ("year", "1980"), ("name", "Naples"), ("name", "Florida")]
    assert spans("The Soviet Union fell in 1991. In Paris, it rained.") == [
        ("name", "Soviet Union"), ("year", "1991"), ("name", "Paris")]
    assert spans("Paris is big.") == []  # one capitalised word opening a sentence
    assert spans("Paris.") == [("name", "Paris")]  # unless it is all the statement says
    assert spans("It cost 1,250.50 dollars on 3/4.") == [("number", "1,250.50"), ("number", "3/4")]
    assert spans("Battle of the Bulge") == [("name", "Battle of the Bulge")]


def test_sentences_split_where_a_new_one_starts() -> None:
    assert sentences(PASSAGE) == ["Aleksander Ford (born 24 November 1908 in Kiev) was a Polish film director.",
                                  "He died on 4 April 1980 in Naples, Florida."]
    # passages joined with no space between them (as HaluEval's are), but not after an initial
    assert sentences("It started on 30 March 2013.Reggie Yates (born 1983) works in the U.S. He is British.") == [
        "It started on 30 March 2013.", "Reggie Yates (born 1983) works in the U.S.", "He is British."]
    assert sentences("He is a director.Aleksander Ford was born in Kiev (Ukraine).He died.") == [
        "He is a director.", "Aleksander Ford was born in Kiev (Ukraine).", "He died."]


@pytest.mark.parametrize("seed", range(5))
def test_an_intrinsic_swap_takes_a_span_of_the_same_kind_from_the_passage(seed: int) -> None:
    statement = "Ford was born in 1908 in Kiev."
    out = swapped(statement, PASSAGE, [("name", "Lyon")], np.random.default_rng(seed))
    assert out is not None and out != statement
    removed = [old for kind, old in spans(statement) if old not in out]
    added = [new for kind, new in spans(out) if new not in statement]
    assert len(removed) == 1 and len(added) == 1
    kinds = {span: kind for kind, span in spans(PASSAGE) + spans(statement)}
    assert added[0] in PASSAGE and kinds[added[0]] == kinds[removed[0]]
    assert out == statement.replace(removed[0], added[0], 1)


def test_a_bare_name_and_a_statement_with_no_other_span_are_swapped_from_elsewhere() -> None:
    rng = np.random.default_rng(0)
    elsewhere = [("name", "Kiev"), ("name", "Lyon"), ("number", "0.5"), ("year", "1950")]
    assert swapped("Aleksander Ford", PASSAGE, elsewhere, rng) == "Lyon"  # Kiev is in the passage
    assert swapped("Kiev.", PASSAGE, elsewhere, rng) == "Lyon."
    assert swapped("It was in 1980.", "It was in 1980.", elsewhere, rng) == "It was in 1950."  # a year for a year


def test_nothing_to_swap_gives_none() -> None:
    rng = np.random.default_rng(0)
    assert swapped("He was a film director.", PASSAGE, [("name", "Lyon")], rng) is None
    assert swapped("Aleksander Ford", PASSAGE, [("name", "Aleksander Ford"), ("name", "Ford")], rng) is None
