"""ROUGE-L of contexts against the reference, in English and Chinese, with hand-computed expectations."""

from __future__ import annotations

import pytest
from rouge_score import rouge_scorer

from localeval.metrics.base import Measurement, Skipped
from localeval.metrics.rouge import CJKTokenizer, RougeL
from localeval.data.records import sample_from_record


def rouge(reference: str, contexts: list[str], stemmer: bool = True) -> dict[str, float]:
    sample = sample_from_record({"id": 1, "question": "q", "reference": reference, "contexts": contexts})
    [outcome] = RougeL(use_stemmer=stemmer).measure([sample])
    assert isinstance(outcome, Measurement)
    return outcome.values


def test_english_by_hand() -> None:
    # reference: the cat sat on the mat (6 tokens); contexts joined: the cat | was sitting(->sit) on a mat (7 tokens)
    # LCS = the, cat, on, mat = 4 -> recall 4/6, precision 4/7, F = 2PR/(P+R) = 8/13
    values = rouge("The cat sat on the mat.", ["The cat", "was sitting on a mat"])
    assert values["rouge_l.recall"] == pytest.approx(4 / 6, abs=1e-12)
    assert values["rouge_l.precision"] == pytest.approx(4 / 7, abs=1e-12)
    assert values["rouge_l.f"] == pytest.approx(8 / 13, abs=1e-12)


def test_chinese_by_hand() -> None:
    # reference 明朝修建长城 = 6 character tokens; context 长城是明朝修建的 = 8; LCS 明朝修建 = 4
    # recall 4/6, precision 4/8, F = 2 * (1/2)(2/3) / (1/2 + 2/3) = 4/7
    values = rouge("明朝修建长城", ["长城是明朝修建的"])
    assert values["rouge_l.recall"] == pytest.approx(4 / 6, abs=1e-12)
    assert values["rouge_l.precision"] == pytest.approx(4 / 8, abs=1e-12)
    assert values["rouge_l.f"] == pytest.approx(4 / 7, abs=1e-12)


def test_chinese_would_score_zero_with_the_default_tokenizer() -> None:
    """Why the CJK tokenizer exists: rouge-score's own tokenizer drops every Han character."""
    default = rouge_scorer.RougeScorer(["rougeL"]).score("明朝修建长城", "长城是明朝修建的")["rougeL"]
    assert default.fmeasure == 0.0


def test_tokenizer_keeps_cjk_characters_and_words() -> None:
    tokenizer = CJKTokenizer(use_stemmer=False)
    assert tokenizer.tokenize("GPT-4模型，“很好”! Café") == ["gpt", "4", "模", "型", "很", "好", "café"]
    assert tokenizer.tokenize("ひらがなカタカナ") == list("ひらがなカタカナ")


@pytest.mark.parametrize("stemmer", [True, False])
def test_ascii_text_matches_rouge_score_exactly(stemmer: bool) -> None:
    reference = "Mitochondria generate most of the cell's supply of ATP, used as chemical energy (e.g. in 2024)."
    contexts = ["The mitochondrion generates most of the chemical energy needed by the cells' reactions.", "ATP: used!"]
    ours = rouge(reference, contexts, stemmer)
    theirs = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=stemmer).score(reference, "\n".join(contexts))["rougeL"]
    assert (ours["rouge_l.precision"], ours["rouge_l.recall"], ours["rouge_l.f"]) == (
        theirs.precision, theirs.recall, theirs.fmeasure
    )


def test_empty_contexts_score_zero_and_a_reference_of_punctuation_is_skipped() -> None:
    assert rouge("Canberra.", []) == {"rouge_l.precision": 0.0, "rouge_l.recall": 0.0, "rouge_l.f": 0.0}
    sample = sample_from_record({"id": 1, "question": "q", "reference": "...", "contexts": ["Canberra"]})
    [outcome] = RougeL().measure([sample])  # rouge-score's 0 would say nothing about the contexts
    assert outcome == Skipped("the reference has no word to match (only punctuation)")
