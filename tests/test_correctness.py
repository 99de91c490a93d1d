"""Is the answer right: exact match and token F1 (SQuAD v1.1's definitions, CJK characters), answer_rouge_l,
answer_similarity, answer_correctness and RAGChecker's diagnostics.

The formulas run on the deterministic fake judge (tests/fake_backend.py), where every verdict is 0 or 1 and
the values must be RAGChecker's; the metrics then run end to end on the real tiny judge, and the quality
claims on the real default judge.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import localeval
from fake_backend import FakeBackend, between, fake_kit
from localeval.data.records import sample_from_record
from localeval.judge.backend import DistributionCall
from localeval.metrics import JudgeOptions, MetricOptions, build_metrics
from localeval.metrics.answer_match import exact_match, normalize_answer, token_f1
from localeval.metrics.registry import groups
from localeval.scoring import measure_rows

TINY = "smollm2-135m-instruct-q4_1"
DIAGNOSTICS = ["claim_recall", "context_utilization", "noise_sensitivity", "hallucination", "self_knowledge"]
JUDGED = ["answer_correctness", *DIAGNOSTICS]


# ---- exact match and token F1: the SQuAD v1.1 evaluation script's definitions ------------------------

@pytest.mark.parametrize("answer, reference, expected", [
    ("The Eiffel Tower", "eiffel tower!", 1.0),        # case, punctuation, the article
    ("An apple", "apple", 1.0),
    ("theater", "ater", 0.0),                           # 'the' only as a word
    ("U.S.", "us", 1.0),                                # punctuation removed, not replaced by a space
    ("1,000 people", "1000 people", 1.0),
    ("  Paris \n France ", "Paris France", 1.0),       # whitespace collapsed
    ("Paris, France", "Paris", 0.0),
    ("", "", 1.0),                                      # two empty normalisations are equal
    ("café", "cafe", 0.0),                              # no accent folding in SQuAD's normalisation
])
def test_exact_match_is_squad_v1_1(answer: str, reference: str, expected: float) -> None:
    assert exact_match(answer, reference) == expected


@pytest.mark.parametrize("answer, reference, f1, precision, recall", [
    ("the cat sat on the mat", "a cat sat", 2 / 3, 0.5, 1.0),      # pred cat sat on mat / gold cat sat
    ("x x y", "x y y", 2 / 3, 2 / 3, 2 / 3),                      # shared tokens counted with multiplicity
    ("Paris", "Paris", 1.0, 1.0, 1.0),
    ("Berlin", "Paris", 0.0, 0.0, 0.0),
    ("", "", 0.0, 0.0, 0.0),                                        # v1.1: no shared token scores 0
    ("the", "a", 0.0, 0.0, 0.0),                                    # only articles: nothing left
    ("It was 1889.", "in 1889", 0.4, 1 / 3, 0.5),
])
def test_token_f1_is_squad_v1_1(answer: str, reference: str, f1: float, precision: float, recall: float) -> None:
    assert token_f1(answer, reference) == pytest.approx((f1, precision, recall), abs=1e-12)


def test_normalisation_is_squads_order_punctuation_before_articles() -> None:
    assert normalize_answer("The-cat") == "thecat"  # the hyphen goes first, so 'The' is no longer a word
    assert normalize_answer("(A) dog") == "dog"


@pytest.mark.parametrize("answer, reference, em, f1", [
    ("长城。", "长城", 1.0, 1.0),                                  # full-width punctuation dropped
    ("明朝修建的", "主要是明朝修建", 0.0, 8 / 12),                 # 4 shared characters of 5 and 7
    ("iPhone 15发布", "iphone 15 发布了", 0.0, 8 / 9),            # word runs and characters mixed
    ("北京", "上海", 0.0, 0.0),
    ("明朝", "明 朝", 1.0, 1.0),                                  # spaces between characters do not count
    ("１９９０年", "1990年", 1.0, 1.0),                            # full-width digits are their ASCII forms
    ("ＡＢＣ公司", "abc公司", 1.0, 1.0),
])
def test_chinese_is_compared_character_by_character(answer: str, reference: str, em: float, f1: float) -> None:
    assert exact_match(answer, reference) == em
    assert token_f1(answer, reference)[0] == pytest.approx(f1, abs=1e-12)


def test_a_full_width_bracket_does_not_make_english_text_chinese() -> None:
    """Only a Han or kana letter switches to the character reading: an English pair with a full-width mark
    keeps SQuAD's rules (the article is dropped), as the official script reads it."""
    assert exact_match("The Louvre\u3000museum", "Louvre museum") == 1.0  # U+3000 splits, as str.split() does
    # SQuAD's tokens: eiffel tower 1889 | eiffel tower（1889） (full-width brackets are no ASCII punctuation)
    assert token_f1("the Eiffel Tower (1889)", "Eiffel Tower（1889）") == pytest.approx((0.4, 1 / 3, 1 / 2))


def test_a_reference_with_no_word_left_is_skipped_not_scored() -> None:
    samples = [sample_from_record({"id": i, "question": "q?", "answer": answer, "reference": reference}, "<t>", 1)
               for i, (answer, reference) in enumerate([("A", "A"), ("Paris", "—"), ("Paris", "Paris")])]
    skipped = {"exact_match": [True, False, False], "token_f1": [True, False, False],  # SQuAD drops "A", keeps "—"
               "answer_rouge_l": [False, True, False]}  # ROUGE's tokens keep "a" and drop "—"
    for metric in build_metrics(",".join(skipped)):
        reasons = [getattr(o, "reason", None) for o in metric.measure(samples)]
        assert [r is not None and "no word" in r for r in reasons] == skipped[metric.name], (metric.name, reasons)


@pytest.mark.model("all-minilm-l6-v2")
def test_classical_answer_metrics_end_to_end(embedder) -> None:
    records = [{"id": "a", "question": "q?", "answer": "The Eiffel Tower.", "reference": "eiffel tower"},
               {"id": "b", "question": "q?", "answer": "It opened in 1889.", "reference": "1889"},
               {"id": "c", "question": "q?", "answer": "No reference here."},
               {"id": "d", "question": "q?", "answer": "Bananas are yellow.", "reference": "The tower is in Paris."},
               {"id": "e", "question": "q?", "answer": "The tower is in Paris.", "reference": "The tower is in Paris."}]
    result = localeval.evaluate(records, ["exact_match", "token_f1", "answer_rouge_l", "answer_similarity"])
    rows = {row["id"]: row for row in result.rows}
    assert rows["a"]["metrics"]["exact_match"] == 1.0 and rows["b"]["metrics"]["exact_match"] == 0.0
    assert rows["b"]["metrics"]["token_f1"] == pytest.approx(2 * 0.25 / 1.25)
    assert rows["b"]["metrics"]["answer_rouge_l.recall"] == 1.0
    similarity = {i: rows[i]["metrics"]["answer_similarity"] for i in "abde"}
    assert similarity["e"] == pytest.approx(1.0, abs=1e-5)
    assert similarity["a"] > 0.8 > 0.3 > similarity["d"]
    assert rows["a"]["details"]["answer_similarity"]["embedder"] == "all-minilm-l6-v2"
    for name in ("exact_match", "token_f1", "answer_rouge_l", "answer_similarity"):
        assert rows["c"]["skipped"][name] == "missing field 'reference'"
    assert set(groups()["correctness"]) >= {"answer_correctness", "exact_match", "token_f1", "answer_similarity"}


# ---- answer_correctness and the diagnostics on the fake judge: RAGChecker's values -------------------

def words(text: str) -> set[str]:
    return {w.strip(".,").lower() for w in text.split()} - {"[1]"}


def entailed_if_words_present(call: DistributionCall) -> dict[str, float]:
    """Every verdict prompt: yes (1) when every word of the statement is in the text it is checked against."""
    if "yes" not in call.groups:
        return {k: 1.0 for k in call.groups}
    statement = words(between(call.text, "<statement>", "</statement>"))
    for tag in ("context", "reference_answer", "answer"):
        if f"<{tag}>" in call.text:
            evidence = words(between(call.text, f"<{tag}>", f"</{tag}>"))
            break
    return {"yes": 1.0, "no": 0.0} if statement <= evidence else {"yes": 0.0, "no": 1.0}


CASE = {"id": "t", "question": "Who designed the tower and when was it completed?",
        "reference": "Gustave Eiffel designed the tower. It was completed in 1889.",
        "answer": "Gustave Eiffel designed the tower. It was completed in 1887. It is made of gold.",
        "contexts": ["Gustave Eiffel designed the tower in Paris.", "Some say it was completed in 1887.",
                     "The Louvre is a museum."]}


def run_fake(tmp_path: Path, names: list[str], record: dict = CASE, parallel: int = 1,
             **options: object) -> tuple[dict, FakeBackend]:
    backend = FakeBackend(probability_rule=entailed_if_words_present)
    kit = fake_kit(backend, tmp_path / "c.sqlite", parallel=parallel)
    metrics = build_metrics(names, MetricOptions(**options), kit=kit)
    (row,) = measure_rows([sample_from_record(record)], metrics)
    return row, backend


def test_answer_correctness_and_diagnostics_equal_ragcheckers_on_true_false_verdicts(tmp_path: Path) -> None:
    # answer claims: a1 correct and in chunk 1; a2 wrong (1887) and in chunk 2, which holds no reference claim;
    # a3 wrong and in no chunk. Reference claims: r1 in the answer and chunk 1; r2 (1889) in neither.
    row, _ = run_fake(tmp_path, JUDGED)
    expected = {"answer_correctness.precision": 1 / 3, "answer_correctness.recall": 1 / 2,
                "answer_correctness": 2 * (1 / 6) / (5 / 6), "claim_recall": 1 / 2, "context_utilization": 1.0,
                "noise_sensitivity.relevant": 0.0, "noise_sensitivity.irrelevant": 1 / 3,
                "hallucination": 1 / 3, "self_knowledge": 0.0}
    assert row["skipped"] == {}
    assert row["metrics"] == pytest.approx(expected, abs=1e-9)
    details = row["details"]
    assert [s["correct"] for s in details["answer_correctness"]["statements"]] == [True, False, False]
    assert [s["covered"] for s in details["answer_correctness"]["reference_statements"]] == [True, False]
    assert [c["chunk"] for c in details["hallucination"]["claims"]] == [1, 2, 1]
    assert [c["relevant"] > 0.5 for c in details["noise_sensitivity"]["chunks"]] == [True, False, False]


@pytest.mark.parametrize("parallel", [1, 4])
def test_all_diagnostics_ask_each_claim_evidence_pair_once(tmp_path: Path, parallel: int) -> None:
    row, backend = run_fake(tmp_path, JUDGED, parallel=parallel)
    # 3 answer claims x the reference, 2 reference claims x the answer, and the 4 distinct claims x 3 chunks
    # (the first answer claim is the first reference claim, word for word: asked of each chunk once)
    assert len(backend.calls) == 3 + 2 + 4 * 3
    assert len({call.text for call in backend.calls}) == len(backend.calls)
    alone, _ = run_fake(tmp_path / "alone", ["hallucination"])
    assert alone["metrics"]["hallucination"] == row["metrics"]["hallucination"]


def test_a_correct_answer_scores_one_and_a_wrong_one_zero(tmp_path: Path) -> None:
    right, _ = run_fake(tmp_path / "r", ["answer_correctness"], dict(CASE, answer=CASE["reference"]))
    wrong, _ = run_fake(tmp_path / "w", ["answer_correctness"], dict(CASE, answer="Nobody built it."))
    assert right["metrics"]["answer_correctness"] == pytest.approx(1.0)
    assert wrong["metrics"]["answer_correctness"] == pytest.approx(0.0, abs=1e-9)


def test_skips_say_why(tmp_path: Path) -> None:
    row, _ = run_fake(tmp_path / "a", JUDGED, dict(CASE, answer="...", contexts=["The Louvre is a museum."]))
    assert row["metrics"]["answer_correctness"] == 0.0  # states nothing: not right (RAGChecker scores it 0)
    assert row["details"]["answer_correctness"]["statements"] == []
    for name in ("noise_sensitivity", "hallucination", "self_knowledge"):
        assert row["skipped"][name] == "no checkable statement in the answer"
    assert row["skipped"]["context_utilization"] == "the contexts hold none of the reference's claims"
    assert row["metrics"]["claim_recall"] == pytest.approx(0.0, abs=1e-9)
    bare = {k: v for k, v in CASE.items() if k not in ("reference", "contexts")}
    row, backend = run_fake(tmp_path / "b", JUDGED, bare)
    assert row["skipped"]["answer_correctness"] == "missing field 'reference'"
    assert row["skipped"]["claim_recall"] == "missing field 'contexts'"
    assert backend.calls == []


# ---- end to end on the real tiny judge ---------------------------------------------------------------

RECORDS = [
    {"id": "en", "question": "When was the Eiffel Tower completed?", "answer": "The Eiffel Tower was completed in 1889.",
     "contexts": ["The Eiffel Tower is in Paris. It was completed in 1889 for the World's Fair.",
                  "The Louvre is a museum in Paris."],
     "reference": "It was completed in 1889, for the World's Fair."},
    {"id": "zh", "question": "长城主要是在哪个朝代修建的？", "answer": "现存的长城大部分是明朝修建的。",
     "contexts": ["长城是中国古代的军事防御工程。现存的长城遗迹主要为明朝时期修建的明长城。", "中国是茶的故乡。"],
     "reference": "现存的长城主要是明朝修建的。"},
    {"id": "no-ref", "question": "Who wrote Hamlet?", "answer": "Shakespeare.", "contexts": ["Hamlet is a play."]},
]


def judge_options(cache: Path, judge: str = TINY) -> MetricOptions:
    return MetricOptions(judge=JudgeOptions(judge=judge, cache=str(cache), n_ctx=2048, n_threads=1))


@pytest.mark.model(TINY)
def test_every_correctness_metric_runs_on_the_tiny_judge_in_english_and_chinese(tmp_path: Path) -> None:
    names = ["answer_correctness", *DIAGNOSTICS, "exact_match", "token_f1", "answer_rouge_l"]
    result = localeval.evaluate(RECORDS, names, judge_options(tmp_path / "c.sqlite"))
    rows = {row["id"]: row for row in result.rows}
    for sample_id in ("en", "zh"):
        values = rows[sample_id]["metrics"]
        for metric in build_metrics(names):
            if metric.name == "context_utilization" and metric.name in rows[sample_id]["skipped"]:
                assert rows[sample_id]["skipped"][metric.name] == "the contexts hold none of the reference's claims"
                continue  # the tiny judge may find no reference claim in the chunks
            for column in metric.columns:
                assert 0.0 <= values[column] <= 1.0, (sample_id, column)
        details = rows[sample_id]["details"]
        assert details["answer_correctness"]["statements"] and details["answer_correctness"]["reference_statements"]
        assert details["answer_correctness"]["lang"] == sample_id
        assert details["hallucination"]["claims"][0]["chunk"] in (1, 2)
    for name in JUDGED:
        assert rows["no-ref"]["skipped"][name] == "missing field 'reference'"
    usage = result.summary["judge"]["usage"]
    assert usage["answer_correctness"]["calls"] > 0
    again = localeval.evaluate(RECORDS, names, judge_options(tmp_path / "c.sqlite"))
    assert [r["metrics"] for r in again.rows] == [r["metrics"] for r in result.rows]
    assert sum(u["calls"] for u in again.summary["judge"]["usage"].values()) == 0


# ---- quality with the default judge ------------------------------------------------------------------

QUALITY = [
    # (question, reference, right answer, wrong answer). One pair per language: the English one is decided
    # by the reference, not by what a 1.5B judge knows (as the wrong year or the swapped gases could be), so
    # a verdict prompt that lost the reference fails it; the Chinese one runs the zh prompts.
    ("Who was born first, Pablo Trapero or Aleksander Ford?", "Aleksander Ford",
     "Aleksander Ford was born first.", "Pablo Trapero was born first."),
    ("长城主要是在哪个朝代修建的？", "现存的长城主要是明朝修建的。", "现存的长城大部分是明朝修建的。", "现存的长城主要是唐朝修建的。"),
]


@pytest.mark.default_judge
def test_default_judge_scores_the_right_answer_above_the_wrong_one(tmp_path: Path) -> None:
    records = []
    for i, (question, reference, right, wrong) in enumerate(QUALITY):
        records += [{"id": f"{i}-right", "question": question, "answer": right, "reference": reference},
                    {"id": f"{i}-wrong", "question": question, "answer": wrong, "reference": reference}]
    options = MetricOptions(judge=JudgeOptions(cache=str(tmp_path / "c.sqlite"), n_threads=1))
    result = localeval.evaluate(records, ["answer_correctness"], options)
    score = {row["id"]: row["metrics"]["answer_correctness"] for row in result.rows}
    for i in range(len(QUALITY)):
        assert score[f"{i}-right"] > 0.5 > score[f"{i}-wrong"], (QUALITY[i], score[f"{i}-right"], score[f"{i}-wrong"])
