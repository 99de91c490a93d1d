"""Retrieval metrics and TREC files: hand-worked numbers, an edge-case grid, and per-query agreement
with trec_eval (through ir_measures' pytrec_eval provider) and with ranx for exponential-gain nDCG."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import ir_measures
import numpy as np
import pytest
from ir_measures import AP, RR, R, P, Success, nDCG
from numba.typed import List as NumbaList
from ranx.metrics import ndcg_burges

from localeval.errors import InputError, MetricNameError
from localeval.metrics.base import Measurement, Skipped
from localeval.metrics.retrieval import (
    NDCG,
    NO_RELEVANT,
    AveragePrecision,
    Hit,
    Precision,
    Recall,
    ReciprocalRank,
)
from localeval.metrics import MetricOptions, build_metrics
from localeval.data.records import Context, Sample
from localeval.data.trec import read_qrels, read_run, samples_from_trec, trec_ranking

def retrieval_metric(name: str, gain: str = "linear"):
    """One metric built through the registry, as `localeval score -m NAME` builds it."""
    (metric,) = build_metrics(name, MetricOptions(ndcg_gain=gain))
    return metric


LOG2_3 = math.log2(3)  # discount at rank 2; rank 1 is log2(2) = 1, rank 3 is log2(4) = 2


def sample(ranking: list[str] | None, relevance: dict[str, float] | None, sid: str = "q") -> Sample:
    contexts = None if ranking is None else tuple(Context(text="", id=d) for d in ranking)
    return Sample(id=sid, question=sid, contexts=contexts, relevance=relevance)


def value(metric_name: str, s: Sample, gain: str = "linear") -> float:
    metric = retrieval_metric(metric_name, gain)
    (outcome,) = metric.measure([s])
    assert isinstance(outcome, Measurement), outcome
    (result,) = outcome.values.values()
    assert type(result) is float
    return result


# --- (a) hand-worked examples -------------------------------------------------------------------

# Ranking d1..d5; judgments: d1=1, d3=2, d5=0 (judged non-relevant), d9=1 (never retrieved).
# Relevant (grade > 0): d1, d3, d9, so R = 3. Relevant retrieved at ranks 1 and 3.
WORKED = sample(["d1", "d2", "d3", "d4", "d5"], {"d1": 1, "d3": 2, "d5": 0, "d9": 1})
WORKED_EXPECTED = {
    "precision@5": 2 / 5,  # d1, d3 in the top 5
    "precision@10": 2 / 10,  # still divided by k = 10 though only 5 were retrieved (trec_eval P.10)
    "recall@2": 1 / 3,  # d1 of {d1, d3, d9}
    "recall@10": 2 / 3,  # d9 never retrieved
    "hit@1": 1.0,  # d1 is relevant
    "mrr": 1.0,  # first relevant at rank 1
    "ap": (1 / 1 + 2 / 3) / 3,  # precision at ranks 1 and 3, over R = 3 -> 5/9
    "ap@2": (1 / 1) / 3,  # only rank 1 counts, divisor stays R = 3 (trec_eval map_cut)
    # DCG@3 = 1/log2(2) + 0/log2(3) + 2/log2(4) = 2; ideal grades [2, 1, 1] -> 2 + 1/log2(3) + 1/2.
    "ndcg@3": 2 / (2 + 1 / LOG2_3 + 1 / 2),
    # Gains 1 and 2 at ranks 1, 3; ideal [2, 1, 1] cut at 1 -> 2/1. DCG@1 = 1.
    "ndcg@1": 1 / 2,
}


@pytest.mark.parametrize("name", sorted(WORKED_EXPECTED))
def test_worked_example(name: str) -> None:
    assert value(name, WORKED) == pytest.approx(WORKED_EXPECTED[name], abs=1e-15)


def test_worked_example_exponential_gain() -> None:
    # 2^g - 1: d1 -> 1, d3 -> 3. DCG@3 = 1 + 3/2 = 2.5; ideal gains [3, 1, 1] -> 3 + 1/log2(3) + 1/2.
    assert value("ndcg@3", WORKED, gain="exponential") == pytest.approx(2.5 / (3.5 + 1 / LOG2_3), abs=1e-15)
    # Binary judgments: both gains give the same number.
    binary = sample(["a", "x", "b"], {"a": 1, "b": 1, "c": 1})
    assert value("ndcg@3", binary, "exponential") == value("ndcg@3", binary, "linear")


def test_exponential_gain_of_grades_past_the_float_range() -> None:
    # 2^2000 overflows a float: the gains are scaled per query instead, which leaves the ratio as it is
    # (the limit of grades g - 1 and g, ranked worse first, as g grows).
    s = sample(["a", "b"], {"a": 1999, "b": 2000})
    assert value("ndcg@2", s, "exponential") == pytest.approx((0.5 + 1 / LOG2_3) / (1 + 0.5 / LOG2_3), abs=1e-12)
    # Under the threshold where scaling starts, the numbers are the unscaled ones, bit for bit.
    low = sample(["a", "b"], {"a": 9, "b": 10})
    assert value("ndcg@2", low, "exponential") == (511 + 1023 / LOG2_3) / (1023 + 511 / LOG2_3)


def test_reciprocal_rank_with_and_without_cutoff() -> None:
    s = sample(["x", "y", "r"], {"r": 1})
    assert value("mrr", s) == pytest.approx(1 / 3)  # first relevant at rank 3
    assert value("mrr@3", s) == pytest.approx(1 / 3)
    assert value("mrr@2", s) == 0.0  # rank 3 is beyond the cutoff
    assert value("hit@2", s) == 0.0
    assert value("hit@3", s) == 1.0


# --- edge-case grid: every metric over every case ---------------------------------------------------

GRID_METRICS = ["precision@5", "recall@5", "hit@1", "mrr", "mrr@1", "ap", "ap@2", "ndcg@5"]
DUP_NDCG = (1 / LOG2_3 + 1 / 2) / (1 + 1 / LOG2_3)  # relevant at ranks 2, 3; ideal two 1s at ranks 1, 2
GRID = {
    # Nothing retrieved: every metric is 0 (not skipped: the query has relevant documents).
    "empty run": (sample([], {"a": 1}), dict.fromkeys(GRID_METRICS, 0.0), None),
    # One doc of k = 5, relevant; R = 2. P@5 = 1/5 (divisor k), AP = (1/1)/2, nDCG@5 = 1 / (1 + 1/log2 3).
    "fewer docs than k": (
        sample(["a"], {"a": 1, "b": 1}),
        {"precision@5": 1 / 5, "recall@5": 1 / 2, "hit@1": 1.0, "mrr": 1.0, "mrr@1": 1.0, "ap": 1 / 2, "ap@2": 1 / 2,
         "ndcg@5": 1 / (1 + 1 / LOG2_3)},
        None,
    ),
    "no relevant retrieved": (sample(["x", "y", "z"], {"a": 2, "x": 0}), dict.fromkeys(GRID_METRICS, 0.0), None),
    # [x, a, x, a, b] -> [x, a, b] with 2 copies removed; relevant a, b at ranks 2, 3; R = 2.
    # AP = (1/2 + 2/3) / 2 = 7/12; AP@2 = (1/2)/2.
    "duplicates": (
        sample(["x", "a", "x", "a", "b"], {"a": 1, "b": 1}),
        {"precision@5": 2 / 5, "recall@5": 1.0, "hit@1": 0.0, "mrr": 1 / 2, "mrr@1": 0.0, "ap": 7 / 12, "ap@2": 1 / 4,
         "ndcg@5": DUP_NDCG},
        {"duplicate_ids_removed": 2},
    ),
    # Grades -1 and 0 are non-relevant with zero gain; a=3 at rank 2, b=1 at rank 3; R = 2.
    # DCG@5 = 3/log2(3) + 1/2; ideal [3, 1] -> 3 + 1/log2(3).
    "graded with non-positive grades": (
        sample(["n", "a", "b"], {"n": -1, "z": 0, "a": 3, "b": 1}),
        {"precision@5": 2 / 5, "recall@5": 1.0, "hit@1": 0.0, "mrr": 1 / 2, "mrr@1": 0.0, "ap": 7 / 12, "ap@2": 1 / 4,
         "ndcg@5": (3 / LOG2_3 + 1 / 2) / (3 + 1 / LOG2_3)},
        None,
    ),
    # Graded ranking in ideal order scores exactly 1 at every cutoff.
    "ideal graded ranking": (
        sample(["a", "b", "c"], {"c": 1, "a": 3, "b": 2}),
        {"precision@5": 3 / 5, "recall@5": 1.0, "hit@1": 1.0, "mrr": 1.0, "mrr@1": 1.0, "ap": 1.0, "ap@2": 2 / 3,
         "ndcg@5": 1.0},
        None,
    ),
}
SKIP_GRID = {
    "no relevant judgments": (sample(["a", "b"], {"a": 0, "b": -1}), NO_RELEVANT),
    "empty judgments": (sample(["a"], {}), NO_RELEVANT),
    "no contexts": (sample(None, {"a": 1}), "missing field 'contexts'"),
    "no judgments": (sample(["a"], None), "missing field 'reference_doc_ids'"),
    "contexts without ids": (
        Sample(id="q", question="q", contexts=(Context("plain text"),), relevance={"a": 1}),
        "contexts have no ids",
    ),
}


@pytest.mark.parametrize("case", sorted(GRID))
@pytest.mark.parametrize("name", GRID_METRICS)
def test_edge_grid(case: str, name: str) -> None:
    s, expected, details = GRID[case]
    (outcome,) = retrieval_metric(name).measure([s])
    assert outcome == Measurement({name: pytest.approx(expected[name], abs=1e-15)}, details or {})


@pytest.mark.parametrize("case", sorted(SKIP_GRID))
@pytest.mark.parametrize("name", GRID_METRICS)
def test_skip_grid(case: str, name: str) -> None:
    s, reason = SKIP_GRID[case]
    assert retrieval_metric(name).measure([s]) == [Skipped(reason)]


def test_grid_as_one_batch_in_order() -> None:
    """The whole grid as one ragged batch, each metric in turn (the second onwards reuses the matrix)."""
    cases = [GRID[c] for c in sorted(GRID)]
    skips = [SKIP_GRID[c] for c in sorted(SKIP_GRID)]
    batch = [c[0] for c in cases[:3]] + [s for s, _ in skips] + [c[0] for c in cases[3:]]
    for name in GRID_METRICS:
        outcomes = retrieval_metric(name).measure(batch)
        measured = outcomes[:3] + outcomes[3 + len(skips):]
        assert outcomes[3:3 + len(skips)] == [Skipped(reason) for _, reason in skips]
        for (_, expected, details), outcome in zip(cases, measured):
            assert outcome == Measurement({name: pytest.approx(expected[name], abs=1e-15)}, details or {})


def test_new_batch_with_same_length_is_not_served_from_the_cache() -> None:
    first = [sample(["a"], {"a": 1}), sample(["x"], {"a": 1})]
    second = [sample(["x"], {"a": 1}), sample(["a"], {"a": 1})]
    metric = Precision(1)
    assert [o.values["precision@1"] for o in metric.measure(first)] == [1.0, 0.0]
    assert [o.values["precision@1"] for o in metric.measure(second)] == [0.0, 1.0]
    assert [o.values["precision@1"] for o in metric.measure(list(reversed(second)))] == [1.0, 0.0]


def test_measure_does_not_mutate_samples() -> None:
    relevance = {"a": 2, "b": -1}
    s = sample(["b", "a", "a"], relevance)
    before = (s.contexts, dict(relevance))
    for name in GRID_METRICS:
        retrieval_metric(name).measure([s])
    assert (s.contexts, dict(relevance)) == before


# --- names, settings, construction ------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, cls, settings",
    [
        ("precision@5", Precision, {"k": 5}),
        ("recall@10", Recall, {"k": 10}),
        ("hit@1", Hit, {"k": 1}),
        ("mrr", ReciprocalRank, {"k": None}),
        ("mrr@10", ReciprocalRank, {"k": 10}),
        ("ap", AveragePrecision, {"k": None}),
        ("ap@100", AveragePrecision, {"k": 100}),
        ("ndcg@10", NDCG, {"k": 10, "gain": "linear"}),
    ],
)
def test_canonical_names(name: str, cls: type, settings: dict) -> None:
    metric = retrieval_metric(name)
    assert isinstance(metric, cls)
    assert metric.name == name and metric.columns == (name,)
    assert metric.requires == ("context_ids", "reference_doc_ids")
    assert metric.settings() == settings


def test_exponential_gain_is_recorded_in_settings() -> None:
    metric = retrieval_metric("ndcg@10", gain="exponential")
    assert metric.name == "ndcg@10" and metric.settings() == {"k": 10, "gain": "exponential"}


@pytest.mark.parametrize("name", ["rouge_l", "faithfulness"])
def test_other_metrics_are_not_retrieval_metrics(name: str) -> None:
    assert not isinstance(retrieval_metric(name), (Precision, Recall, Hit, ReciprocalRank, AveragePrecision, NDCG))


@pytest.mark.parametrize("name", ["ndcg_at_10", "bleu@4"])
def test_unknown_names_are_refused(name: str) -> None:
    with pytest.raises(MetricNameError, match="is not a known metric"):
        retrieval_metric(name)


@pytest.mark.parametrize(
    "name, fragment",
    [
        ("ndcg@0", "expected 'ndcg@K' where K is a positive integer, e.g. 'ndcg@10' (0 does not mean 'all')"),
        ("ndcg@x", "expected 'ndcg@K'"),
        ("ndcg@-1", "expected 'ndcg@K'"),
        ("ndcg@010", "expected 'ndcg@K'"),
        ("precision", "'precision' needs a cutoff: expected 'precision@K'"),
        ("ndcg", "needs a cutoff"),
        ("mrr@", "expected 'mrr' or 'mrr@K'"),
        ("ap@1.5", "expected 'ap' or 'ap@K'"),
        ("NDCG@10", "did you mean 'ndcg@10'?"),
        ("map", "did you mean 'ap'?"),
        ("P@5", "did you mean 'precision@5'?"),
        ("recip_rank", "did you mean 'mrr'?"),
    ],
)
def test_malformed_names(name: str, fragment: str) -> None:
    with pytest.raises(MetricNameError) as raised:
        retrieval_metric(name)
    message = str(raised.value)
    assert fragment in message and "\n" not in message


@pytest.mark.parametrize("k", [0, -3, True, 2.0, None])
def test_constructor_rejects_bad_cutoffs(k: object) -> None:
    with pytest.raises(ValueError, match="positive integer"):
        Precision(k)  # type: ignore[arg-type]


def test_constructor_rejects_unknown_gain() -> None:
    with pytest.raises(ValueError, match="linear, exponential"):
        NDCG(10, gain="log")


# --- (b) randomized comparison with trec_eval via ir_measures -----------------------------------------

KS = (1, 3, 5, 10, 20)


def random_trec(seed: int, n_queries: int = 80) -> tuple[dict, dict]:
    """Runs with many exact and float32-only score ties, docnos whose strcmp order is not numeric
    order, graded judgments 0..3 (some queries with no relevant doc), and queries in only one file."""
    rng = np.random.default_rng(seed)
    pool = [f"d{i}" for i in range(60)] + [f"D{i}x" for i in range(5)]
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for q in range(n_queries):
        qid = f"q{q}"
        if q % 17 != 16:  # a few qrels-only queries
            docs = rng.choice(pool, size=int(rng.integers(1, 30)), replace=False)
            whole = rng.integers(0, 6, size=len(docs)).astype(float)
            # +1e-9 is below float32 resolution at these magnitudes: a tie for trec_eval, not in float64.
            nudge = rng.choice([0.0, 0.0, 1e-9, 0.5], size=len(docs))
            run[qid] = {str(d): float(s) for d, s in zip(docs, whole + nudge)}
        if q % 13 != 12:  # a few run-only queries
            judged = rng.choice(pool, size=int(rng.integers(0, 15)), replace=False)
            qrels[qid] = {str(d): int(g) for d, g in zip(judged, rng.integers(0, 4, size=len(judged)))}
    return run, qrels


def measure_all(samples: list[Sample], names: list[str]) -> dict[str, dict[str, float | None]]:
    """{metric name: {qid: value, or None when skipped}}."""
    results: dict[str, dict[str, float | None]] = {}
    for name in names:
        outcomes = retrieval_metric(name).measure(samples)
        results[name] = {s.id: (o.values[name] if isinstance(o, Measurement) else None) for s, o in zip(samples, outcomes)}
    return results


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_trec_eval_per_query(seed: int) -> None:
    run, qrels = random_trec(seed)
    samples, counts = samples_from_trec({q: list(d.items()) for q, d in run.items()}, qrels)
    assert counts == {"run_only": sum(q not in qrels for q in run), "qrels_only": sum(q not in run for q in qrels)}

    pairs = {"ap": AP, "mrr": RR}
    for k in KS:
        pairs.update({f"precision@{k}": P @ k, f"recall@{k}": R @ k, f"hit@{k}": Success @ k,
                      f"ndcg@{k}": nDCG @ k, f"ap@{k}": AP @ k})
    ours = measure_all(samples, list(pairs) + [f"mrr@{k}" for k in KS])
    theirs: dict[str, dict[str, float]] = {name: {} for name in pairs}
    by_measure = {m: name for name, m in pairs.items()}
    for row in ir_measures.pytrec_eval.iter_calc(list(pairs.values()), qrels, run):
        theirs[by_measure[row.measure]][row.query_id] = row.value

    has_relevant = {q for q, judged in qrels.items() if any(g > 0 for g in judged.values())}
    compared = 0
    for name in pairs:
        for qid, mine in ours[name].items():
            if qid in has_relevant:
                assert mine == pytest.approx(theirs[name][qid], abs=1e-9), (name, qid)
                compared += 1
            else:
                assert mine is None and theirs[name][qid] == 0.0  # trec_eval's 0 is our skip
    # pytrec_eval has no RR@k: it is RR where the first relevant rank is <= k, else 0.
    for k in KS:
        for qid, mine in ours[f"mrr@{k}"].items():
            if qid in has_relevant:
                rr = theirs["mrr"][qid]
                assert mine == pytest.approx(rr if rr >= 1 / k - 1e-12 else 0.0, abs=1e-9)
    assert compared > 20 * len(pairs)  # most queries really were compared


# --- (c) exponential-gain nDCG against ranx ---------------------------------------------------------


def test_exponential_ndcg_matches_ranx_ndcg_burges() -> None:
    # ranx uses 2^grade - 1, log2(rank + 1) and an ideal cut at k: the same definition. Its tie order is
    # unspecified, so scores here are distinct; every query has a relevant document (ranx scores others 0).
    rng = np.random.default_rng(7)
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for q in range(60):
        docs = rng.choice(200, size=int(rng.integers(1, 40)), replace=False)
        run[f"q{q}"] = {f"d{d}": float(s) for d, s in zip(docs, rng.permutation(len(docs)) + 0.5)}
        judged = rng.choice(200, size=int(rng.integers(1, 20)), replace=False)
        grades = rng.integers(0, 5, size=len(judged))
        grades[0] = max(int(grades[0]), 1)
        qrels[f"q{q}"] = {f"d{d}": int(g) for d, g in zip(judged, grades)}
    samples, _ = samples_from_trec({q: list(d.items()) for q, d in run.items()}, qrels)

    # ranx's metric function on the arrays its Run/Qrels would hand it (rows [doc number, score or
    # grade], sorted descending), which skips several seconds of numba loading for ranx.evaluate.
    numbers: dict[str, int] = {}

    def rows(pairs: dict) -> np.ndarray:
        ranked = sorted(pairs.items(), key=lambda item: -item[1])
        return np.array([[numbers.setdefault(d, len(numbers)), v] for d, v in ranked], dtype=np.float64).reshape(-1, 2)

    qids = [s.id for s in samples]
    ranx_qrels = NumbaList([rows(qrels[q]) for q in qids])
    ranx_run = NumbaList([rows(run[q]) for q in qids])
    for k in (5, 20):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numba's uint64 cast warning inside ranx
            expected = ndcg_burges(ranx_qrels, ranx_run, k)
        metric = NDCG(k, gain="exponential")
        for outcome, theirs in zip(metric.measure(samples), expected.tolist(), strict=True):
            assert outcome.values[metric.name] == pytest.approx(theirs, abs=1e-9)


# --- (d) TREC files ------------------------------------------------------------------------------------


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def test_run_is_ranked_like_trec_eval_not_by_rank_column(tmp_path: Path) -> None:
    # Ranks in the file are deliberately wrong. Order by score desc; 2.0 ties broken by docno
    # descending strcmp: "d9" > "d10" > "D1" (uppercase sorts before lowercase).
    run_path = write(tmp_path, "run.txt", """
q1 Q0 d10 1 2.0 tag
q1 Q0 low 2 -1 tag
q1 Q0 d9  3 2.0 tag
q1 Q0 top 4 3.5 tag
q1 Q0 D1  5 2 tag

q2 Q0 x 1 1.000000001 tag
q2 Q0 y 2 1.0 tag
""")
    run = read_run(run_path)
    assert run["q1"][0] == ("d10", 2.0)  # file order is kept by read_run
    assert trec_ranking(run["q1"]) == ["top", "d9", "d10", "D1", "low"]
    # 1.000000001 and 1.0 are the same 32-bit float, so "y" > "x" wins the tie as in trec_eval.
    assert trec_ranking(run["q2"]) == ["y", "x"]


def test_qrels_trec_and_tsv_formats(tmp_path: Path) -> None:
    trec = write(tmp_path, "qrels.txt", "1 0 d1 2\n1 0 d2 0\n2 0 d1 -1\n2 Q0 d3 1.0\n")
    tsv = write(tmp_path, "qrels.tsv", "query-id\tcorpus-id\tscore\n1\td1\t2\n1\td2\t0\n2\td1\t-1\n2\td3\t1\n")
    expected = {"1": {"d1": 2.0, "d2": 0.0}, "2": {"d1": -1.0, "d3": 1.0}}
    assert read_qrels(trec) == expected
    assert read_qrels(tsv) == expected


def test_samples_only_for_queries_in_both(tmp_path: Path) -> None:
    run = read_run(write(tmp_path, "run", "b Q0 x 1 1 t\na Q0 y 1 1 t\na Q0 z 2 2 t\nrunonly Q0 x 1 1 t\n"))
    qrels = read_qrels(write(tmp_path, "qrels", "a 0 z 1\nb 0 q 1\nqrelsonly1 0 x 1\nqrelsonly2 0 x 1\n"))
    samples, counts = samples_from_trec(run, qrels)
    assert counts == {"run_only": 1, "qrels_only": 2}
    assert [s.id for s in samples] == ["b", "a"]  # run order
    a = samples[1]
    assert a.question == "a" and a.context_ids == ("z", "y") and a.relevance == {"z": 1.0}
    assert all(c.text == "" for c in a.contexts)
    assert value("mrr", a) == 1.0


def test_trec_files_agree_with_ir_measures_end_to_end(tmp_path: Path) -> None:
    run, qrels = random_trec(11, n_queries=30)
    run_path = write(tmp_path, "run", "".join(
        f"{q} Q0 {d} {i} {s!r} t\n" for q, docs in run.items() for i, (d, s) in enumerate(docs.items())))
    qrels_path = write(tmp_path, "qrels", "".join(f"{q} 0 {d} {g}\n" for q, j in qrels.items() for d, g in j.items()))
    samples, _ = samples_from_trec(read_run(run_path), read_qrels(qrels_path))
    ours = measure_all(samples, ["ndcg@10", "ap"])
    irm_run = list(ir_measures.read_trec_run(str(run_path)))
    irm_qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
    rows = list(ir_measures.pytrec_eval.iter_calc([nDCG @ 10, AP], irm_qrels, irm_run))
    for row in rows:
        if row.query_id not in run:
            continue  # ir_measures also reports qrels-only queries, as if their run were empty
        mine = ours["ndcg@10" if row.measure == nDCG @ 10 else "ap"][row.query_id]
        if mine is None:
            assert row.value == 0.0  # trec_eval's 0 for a query without relevant documents is our skip
        else:
            assert mine == pytest.approx(row.value, abs=1e-9), row
    assert len([r for r in rows if r.query_id in run]) == 2 * len(samples)


@pytest.mark.parametrize(
    "reader, text, line, field, fragment",
    [
        (read_run, "q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 high t\n", 2, "score", "must be a number, got 'high'"),
        (read_run, "q1 Q0 d1 1 nan t\n", 1, "score", "must be a finite number"),
        (read_run, "\nq1 Q0 d1 1 1.0\n", 2, None, "expected 6 whitespace-separated fields"),
        (read_qrels, "q1 0 d1 1\nq1 0 d2\n", 2, None, "expected 4 whitespace-separated fields"),
        (read_qrels, "q1 0 d1 1\nq1 0 d2 0.5\n", 2, "grade", "must be an integer"),
        (read_qrels, "q1 0 d1 yes\n", 1, "grade", "must be an integer (trec_eval reads grades as integers), got 'yes'"),
        (read_qrels, "q1 0 d1 1\nq1 0 d2 1e1\n", 2, "grade", "got '1e1'"),  # Python reads 10, atol 1
        (read_qrels, "q1 0 d1 1_0\n", 1, "grade", "got '1_0'"),
        (read_qrels, "q1 0 d1 1\nq2 0 d1 1\nq1 0 d1 2\n", 3, "docno", "duplicate judgment of 'd1' for query 'q1' (first on line 1)"),
        (read_qrels, "query-id\tcorpus-id\tscore\nq1\td1\n", 2, None, "expected 3 fields"),
        (read_run, b"q1 Q0 d1 1 1.0 t\nq1 Q0 \xff 2 0.5 t\n", 2, None, "is not valid UTF-8"),
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path: Path, reader, text, line, field, fragment) -> None:
    path = write(tmp_path, "input.txt", text)
    with pytest.raises(InputError) as raised:
        reader(path)
    error = raised.value
    assert (error.source, error.line, error.field) == (str(path), line, field)
    assert str(error).startswith(f"{path}:{line}: ") and fragment in str(error)


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_run(tmp_path / "nope.txt")
