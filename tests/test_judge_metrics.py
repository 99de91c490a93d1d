"""The judge metrics end to end with the real tiny judge (SmolLM2) and the real MiniLM, their formulas on
the worked examples, and — with the default 1.5B judge, since the 135M model cannot tell supported from
contradicted — that a clearly unfaithful answer scores below a faithful one."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import localeval
from localeval.metrics import JudgeOptions, MetricOptions
from localeval.metrics.answer_relevance import rating_score
from localeval.metrics.context_precision_recall import precision_weighted

TINY = "smollm2-135m-instruct-q4_1"
JUDGE_METRICS = ["faithfulness", "grounding", "answer_relevance", "answer_relevance_rating", "context_relevance",
                 "context_precision", "context_recall"]
RECORDS = [
    {"id": "en", "question": "When was the Eiffel Tower completed?",
     "answer": "The Eiffel Tower was completed in 1889.",
     "contexts": [{"id": "d1", "text": "The Eiffel Tower is in Paris. It was completed in 1889 for the World's Fair."},
                  {"id": "d2", "text": "The Louvre is a museum in Paris."}],
     "reference": "It was completed in 1889.", "reference_doc_ids": ["d1"],
     "reference_docs": ["The Eiffel Tower was completed in 1889."]},
    {"id": "zh", "question": "长城主要是在哪个朝代修建的？", "answer": "现存的长城大部分是明朝修建的。",
     "contexts": ["长城是中国古代的军事防御工程。现存的长城遗迹主要为明朝时期修建的明长城。", "中国是茶的故乡。"],
     "reference": "现存的长城主要是明朝修建的。"},
]


def options(cache: Path, judge: str = TINY, **more) -> MetricOptions:
    return MetricOptions(judge=JudgeOptions(judge=judge, cache=str(cache), n_ctx=2048, n_threads=1), **more)


@pytest.mark.parametrize("relevant, expected", [
    ([1, 0, 1, 0, 1], (1 + 2 / 3 + 3 / 5) / 3),  # the tutorial's worked example: 0.7556
    ([0, 0, 0, 1, 1], (1 / 4 + 2 / 5) / 2),      # 0.325
    ([1, 1, 1, 0, 0], 1.0),
    ([0, 0, 0], 0.0),                             # nothing relevant: 0, not NaN
    ([], 0.0),
])
def test_context_precision_formula(relevant: list[int], expected: float) -> None:
    assert precision_weighted([bool(r) for r in relevant]) == pytest.approx(expected, abs=1e-12)
    assert round(precision_weighted([True, False, True, False, True]), 4) == 0.7556


def test_rating_maps_one_to_five_onto_unit_interval() -> None:
    assert (rating_score(1.0), rating_score(3.0), rating_score(5.0)) == (0.0, 0.5, 1.0)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[localeval.Result, Path]:
    cache = tmp_path_factory.mktemp("cache") / "judge.sqlite"
    return localeval.evaluate(RECORDS, metrics=JUDGE_METRICS, options=options(cache)), cache


@pytest.mark.model(TINY, "all-minilm-l6-v2", "use-multilingual-v3")
def test_every_judge_metric_scores_english_and_chinese(tiny_run) -> None:
    result, _ = tiny_run
    for row in result.rows:
        assert row["skipped"] == {}, row["skipped"]
        for column, value in row["metrics"].items():
            assert 0.0 <= value <= 1.0, (row["id"], column, value)
    en, zh = result.rows
    assert en["details"]["faithfulness"]["lang"] == "en" and zh["details"]["faithfulness"]["lang"] == "zh"
    for row in result.rows:
        statements = row["details"]["faithfulness"]["statements"]
        assert statements and all(0.0 <= s["p"] <= 1.0 and s["text"] for s in statements)
        assert row["metrics"]["faithfulness"] == pytest.approx(sum(s["p"] for s in statements) / len(statements), abs=1e-5)
        assert len(row["details"]["answer_relevance"]["questions"]) == 3
        assert sum(row["details"]["answer_relevance_rating"]["distribution"].values()) == pytest.approx(1.0, abs=1e-5)
        assert len(row["details"]["context_precision"]["useful"]) == 2
        assert row["details"]["faithfulness"]["judge"]["calls"] >= len(statements)  # a verdict per statement
        grounding = row["details"]["grounding"]
        assert grounding["judge"]["calls"] == 1 and grounding["tokens"] >= 5
        assert row["metrics"]["grounding.min"] == pytest.approx(math.exp(grounding["lowest"][0]), abs=1e-4)
        assert row["metrics"]["grounding.min"] <= row["metrics"]["grounding"] <= row["metrics"]["grounding.mean"]
        recall = row["details"]["context_recall"]  # the default statements: the reference's own sentences
        assert [s["text"] for s in recall["statements"]] == [row["reference"]]  # each reference is one sentence
        attributable = [s["attributable"] for s in recall["statements"]]
        assert row["metrics"]["context_recall.share"] == sum(attributable) / len(attributable)
        assert row["metrics"]["context_recall"] == pytest.approx(
            sum(s["p"] for s in recall["statements"]) / len(recall["statements"]), abs=1e-5)
    assert result.summary["settings"]["context_recall"]["statements"] == "sentences"
    assert result.summary["judge"]["judge_sha256"] == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    assert result.summary["judge"]["usage"]["faithfulness"]["calls"] >= 2


@pytest.mark.model(TINY, "all-minilm-l6-v2", "use-multilingual-v3")
def test_second_run_makes_no_model_call_and_gives_identical_numbers(tiny_run) -> None:
    first, cache = tiny_run
    second = localeval.evaluate(RECORDS, metrics=JUDGE_METRICS, options=options(cache))
    assert [r["metrics"] for r in second.rows] == [r["metrics"] for r in first.rows]
    for usage in second.summary["judge"]["usage"].values():
        assert usage["calls"] == 0 and usage["cache_hits"] > 0


@pytest.mark.model(TINY)
def test_missing_fields_are_skipped_with_reasons(tmp_path: Path) -> None:
    records = [{"id": 1, "question": "Why?", "answer": "", "contexts": ["Because."]},
               {"id": 2, "question": "Why?", "contexts": ["Because."]}]
    result = localeval.evaluate(records, metrics=["faithfulness", "context_recall", "context_precision"],
                                options=options(tmp_path / "c.sqlite"))
    first, second = result.rows
    assert first["skipped"]["context_recall"] == "missing field 'reference'"
    assert second["skipped"] == {"faithfulness": "missing field 'answer'", "context_recall": "missing field 'reference'",
                                 "context_precision": "missing field 'reference' (or 'answer')"}
    assert result.summary["metrics"]["faithfulness"]["n"] + result.summary["metrics"]["faithfulness"]["n_skipped"] == 2


@pytest.mark.model(TINY)
def test_long_contexts_are_windowed_not_truncated(tmp_path: Path) -> None:
    # 80 sentences: ~1,360 tokens, where n_ctx 1024 leaves each metric about 720 (context_relevance's
    # numbered list) to 940 (grounding) for the context: every metric needs two windows or more
    long_text = "The Eiffel Tower is in Paris and was completed in 1889. " * 80
    record = {"id": 1, "question": "When was the Eiffel Tower completed?", "answer": "In 1889.",
              "contexts": [long_text], "reference": "1889"}
    result = localeval.evaluate([record], metrics=["faithfulness", "grounding", "context_relevance"],
                                options=MetricOptions(judge=JudgeOptions(judge=TINY, cache=str(tmp_path / "c.sqlite"),
                                                                         n_ctx=1024)))
    [row] = result.rows
    assert row["skipped"] == {}
    assert row["details"]["faithfulness"]["windows"] > 1
    assert row["details"]["grounding"]["windows"] > 1
    assert row["details"]["context_relevance"]["windows"] > 1
    assert row["details"]["context_relevance"]["sentences"] == 80


@pytest.mark.model(TINY)
def test_faithfulness_against_reference_docs(tmp_path: Path) -> None:
    result = localeval.evaluate(RECORDS[:1], metrics=["faithfulness"],
                                options=options(tmp_path / "c.sqlite", faithfulness_against="reference_docs"))
    assert result.rows[0]["details"]["faithfulness"]["against"] == "reference_docs"
    missing = localeval.evaluate(RECORDS[1:], metrics=["faithfulness"],
                                 options=options(tmp_path / "c.sqlite", faithfulness_against="reference_docs"))
    assert missing.rows[0]["skipped"]["faithfulness"] == "missing field 'reference_docs'"


@pytest.mark.default_judge
def test_default_judge_ranks_faithful_above_unfaithful(tmp_path: Path) -> None:
    """The 1.5B default judge (the 135M one cannot make this distinction; see test_judge.py)."""
    context = ("Marie Curie was a physicist and chemist born in Warsaw in 1867. She won the Nobel Prize in "
               "Physics in 1903 and the Nobel Prize in Chemistry in 1911.")
    records = [
        {"id": "faithful", "question": "Where was Marie Curie born?", "answer": "Marie Curie was born in Warsaw.",
         "contexts": [context], "reference": "In Warsaw, in 1867."},
        {"id": "unfaithful", "question": "Where was Marie Curie born?", "answer": "Marie Curie was born in Madrid.",
         "contexts": [context], "reference": "In Warsaw, in 1867."},
    ]
    result = localeval.evaluate(records, metrics=["faithfulness"],
                                options=MetricOptions(judge=JudgeOptions(cache=str(tmp_path / "c.sqlite"))))
    faithful, unfaithful = (r["metrics"] for r in result.rows)
    evidence = json.dumps([r["details"] for r in result.rows], indent=1)
    # Measured with the answers' own sentences (the default): mean P 0.906 vs 0.114, share 1.0 vs 0.0; with
    # the judge's decomposition the share was 1.0 vs 0.5 (a background statement "Madrid is a city in Spain"
    # it half-accepts).
    assert faithful["faithfulness.share"] == 1.0 > unfaithful["faithfulness.share"], evidence
    assert faithful["faithfulness"] > unfaithful["faithfulness"] + 0.3, evidence
    claim = next(s for s in result.rows[1]["details"]["faithfulness"]["statements"] if "Madrid" in s["text"])
    assert claim["p"] < 0.2, evidence


GROUNDING_CASES = [  # (question, context, faithful answer, the same answer with one unsupported detail)
    # an added detail in English, a substituted one in Chinese (a substituted English one, Warsaw -> Krakow,
    # measured 3,100x, as clear as the added one)
    ("When did Curie win her first Nobel Prize?", "Marie Curie was a physicist and chemist born in Warsaw in 1867. She "
     "won the Nobel Prize in Physics in 1903 and the Nobel Prize in Chemistry in 1911.",
     "She won the Nobel Prize in Physics in 1903.", "She won the Nobel Prize in Physics in 1903, together with Einstein."),
    ("长城主要是在哪个朝代修建的？", "长城是中国古代的军事防御工程。现存的长城遗迹主要为明朝时期修建的明长城，总长度约八千八百公里。",
     "现存的长城主要是明朝修建的。", "现存的长城主要是唐朝修建的。"),
]


@pytest.mark.default_judge
def test_default_judge_finds_an_unsupported_detail_less_expected(tmp_path: Path) -> None:
    """grounding with the 1.5B default judge: the answer with a substituted or added detail scores lower, in
    English and Chinese (the tiny judge's likelihoods carry no such signal)."""
    records = [{"id": f"{i}-{kind}", "question": q, "answer": answer, "contexts": [context]}
               for i, (q, context, good, bad) in enumerate(GROUNDING_CASES) for kind, answer in (("good", good), ("bad", bad))]
    result = localeval.evaluate(records, metrics=["grounding"],
                                options=MetricOptions(judge=JudgeOptions(cache=str(tmp_path / "c.sqlite"))))
    scores = {row["id"]: row["metrics"]["grounding"] for row in result.rows}
    evidence = json.dumps({row["id"]: [row["metrics"], row["details"]["grounding"]["lowest"]] for row in result.rows})
    # Measured: 2,500x and 1.9x (the Chinese pair shares its least expected token, how it begins).
    for i in range(len(GROUNDING_CASES)):
        assert scores[f"{i}-good"] > 1.5 * scores[f"{i}-bad"], evidence


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One judge cache for the faithfulness variants and the decomposed context_recall: what two of them ask
    alike is answered once, above all the judge's decomposition of RECORDS' answers (a JSON generation, the
    slowest call), which the "judge" and "both" variants and context_recall's "judge" statements all ask."""
    return tmp_path_factory.mktemp("shared") / "judge.sqlite"


# The defaults (sentences, related evidence, two-way, no question) run in tiny_run, against="reference_docs"
# below; every other value of statements, evidence, question and verdict runs here. Evidence "selected" with
# the default two-way verdict is no variant of its own: the verdict's prompt is chosen apart from the
# evidence (steps.support).
@pytest.mark.parametrize("variant", [
    {"faithfulness_statements": "judge"},
    {"faithfulness_statements": "both", "faithfulness_verdict": "three-way"},
    {"faithfulness_evidence": "context"},
    {"faithfulness_statements": "sentences", "faithfulness_evidence": "selected", "faithfulness_verdict": "three-way"},
    {"faithfulness_statements": "sentences", "faithfulness_question": "beside"},
])
@pytest.mark.model(TINY)
def test_every_faithfulness_variant_runs_in_english_and_chinese(shared_cache: Path, variant: dict) -> None:
    result = localeval.evaluate(RECORDS, metrics=["faithfulness"], options=options(shared_cache, **variant))
    for row in result.rows:
        details = row["details"]["faithfulness"]
        assert row["skipped"] == {} and details["statements"], row
        probs = [s["p"] for s in details["statements"]]
        assert row["metrics"]["faithfulness.min"] == pytest.approx(min(probs), abs=1e-5)
        if variant.get("faithfulness_statements") == "sentences":
            assert [s["text"] for s in details["statements"]] == [row["answer"]]  # each answer is one sentence
    settings = result.summary["settings"]["faithfulness"]
    assert {k.split("_")[1]: settings[k.split("_")[1]] for k in variant} == {k.split("_")[1]: v for k, v in variant.items()}


@pytest.mark.model(TINY)
def test_judge_decomposed_context_recall_runs_in_english_and_chinese(shared_cache: Path) -> None:
    """context_recall's "judge" statements (its default, the reference's own sentences, runs in tiny_run).
    Each reference here is its record's answer, so the decomposition is the one the faithfulness variants
    asked for (shared_cache): the same prompt, generated once."""
    records = [dict(record, reference=record["answer"]) for record in RECORDS]
    result = localeval.evaluate(records, metrics=["context_recall"],
                                options=options(shared_cache, context_recall_statements="judge"))
    for row in result.rows:
        details = row["details"]["context_recall"]
        assert row["skipped"] == {} and details["statements"], row
        attributable = [s["attributable"] for s in details["statements"]]
        assert row["metrics"]["context_recall.share"] == sum(attributable) / len(attributable)
        probs = [s["p"] for s in details["statements"]]
        assert row["metrics"]["context_recall"] == pytest.approx(sum(probs) / len(probs), abs=1e-5)
    assert result.summary["settings"]["context_recall"]["statements"] == "judge"


@pytest.mark.model(TINY)
def test_sentence_and_passage_relevance_probabilities_run_in_english_and_chinese(tmp_path: Path) -> None:
    result = localeval.evaluate(RECORDS, metrics=["context_relevance", "passage_relevance"],
                                options=options(tmp_path / "c.sqlite", context_relevance_method="probability"))
    for row in result.rows:
        assert row["skipped"] == {}, row
        sentences = row["details"]["context_relevance"]
        assert len(sentences["p"]) == sentences["sentences"] and sentences["windows"] == 1
        passages = row["details"]["passage_relevance"]["passages"]
        assert [p["rank"] for p in passages] == [1, 2]
        assert row["metrics"]["passage_relevance"] == pytest.approx(sum(p["p"] for p in passages) / 2, abs=1e-5)


@pytest.mark.default_judge
def test_default_judge_ranks_the_passage_with_the_answer_above_one_on_the_same_topic(tmp_path: Path) -> None:
    """passage_relevance with the 1.5B judge, English and Chinese: the passage that answers the question
    beats a passage about the same film that does not (the hard case: a topical match)."""
    cases = [("Who directed the film The Silent Harbor?",
              "The Silent Harbor is a 2019 drama directed by Lena Marsh. It follows a fisherman who hides a "
              "stranger during a storm.",
              "The Silent Harbor premiered at the Toronto film festival in 2019. Critics were divided, and its "
              "lead actor won a regional award."),
             ("电影《寂静港湾》的导演是谁？",
              "《寂静港湾》是2019年上映的剧情片，由林默执导，讲述了一名渔民在暴风雨中收留陌生人的故事。",
              "《寂静港湾》于2019年在多伦多电影节首映，评论褒贬不一，主演凭借该片获得了一个地区性奖项。")]
    records = [{"id": f"c{i}", "question": question, "contexts": [{"id": "answers", "text": answers},
                                                                  {"id": "same-topic", "text": topical}]}
               for i, (question, answers, topical) in enumerate(cases)]
    result = localeval.evaluate(records, metrics=["passage_relevance"],
                                options=MetricOptions(judge=JudgeOptions(cache=str(tmp_path / "c.sqlite"))))
    for row in result.rows:
        answers, topical = row["details"]["passage_relevance"]["passages"]
        # Measured (passage first, question last): 0.962 vs 0.678 in English, 0.981 vs 0.807 in Chinese.
        assert answers["p"] >= 0.9 and answers["p"] > topical["p"] + 0.1, row["details"]


@pytest.mark.default_judge
def test_default_judge_finds_the_chunk_that_leads_to_the_reference_more_useful_than_a_topical_one(tmp_path: Path) -> None:
    """context_precision with the 1.5B judge: the chunk that gives the reference answer is useful, and more
    useful than a chunk on the same film that does not (the hard case: a topical match)."""
    record = {"id": "c0", "question": "Who directed the film The Silent Harbor?", "reference": "Lena Marsh directed it.",
              "contexts": [{"id": "same-topic", "text": "The Silent Harbor premiered at the Toronto film festival in "
                            "2019. Critics were divided, and its lead actor won a regional award."},
                           {"id": "answers", "text": "The Silent Harbor is a 2019 drama directed by Lena Marsh. It "
                            "follows a fisherman who hides a stranger during a storm."}]}
    result = localeval.evaluate([record], metrics=["context_precision"],
                                options=MetricOptions(judge=JudgeOptions(cache=str(tmp_path / "c.sqlite"))))
    (row,) = result.rows
    topical, answers = (u["p"] for u in row["details"]["context_precision"]["useful"])
    # Measured: P(useful) 0.674 for the chunk that names the director, 0.467 for the topical one (so the
    # metric is 1/2: the useful chunk is ranked second). The margin at 0.5 is thin; the ranking is the claim.
    assert answers >= 0.5 and answers > topical + 0.15, row["details"]


@pytest.mark.model(TINY)
def test_an_empty_or_punctuation_only_answer_has_no_checkable_statement(tmp_path: Path) -> None:
    records = [dict(RECORDS[0], id="empty", answer=""), dict(RECORDS[0], id="dots", answer=" ... ?! "),
               dict(RECORDS[1], id="zh-dots", answer="。。。")]
    for statements in ("judge", "sentences"):
        result = localeval.evaluate(records, metrics=["faithfulness"],
                                    options=options(tmp_path / "c.sqlite", faithfulness_statements=statements))
        assert [r["skipped"].get("faithfulness") for r in result.rows] == ["no checkable statement in the answer"] * 3
        assert result.summary["judge"]["usage"]["faithfulness"]["calls"] == 0  # nothing was sent to the judge
