"""Document-level retrieval metrics that reproduce trec_eval 9.x (the code inside pytrec_eval and ir_measures).

Each sample gives a ranking (`context_ids`, rank = list position) and graded judgments (`relevance`,
{doc_id: grade}). A document is relevant when its grade is > 0, which is trec_eval's default relevance
level 1 for the integer grades it reads; grades <= 0 and unjudged documents are non-relevant and carry
zero gain. Each class names the trec_eval measure it reproduces; tests/test_retrieval.py checks them per
query against ir_measures to 1e-9.

Two deliberate departures from trec_eval, both visible in the output:

* A query whose judgments hold no relevant document is `Skipped("no relevant reference documents")`
  by every metric here. trec_eval would score it 0, which silently drags means down; a skip is counted
  in the summary instead.
* A document id retrieved more than once counts only at its first (best) rank: later copies are removed
  before measuring and their number is kept in `details["duplicate_ids_removed"]`. trec_eval refuses
  such a run outright ("duplicate docs"), so no trec_eval number disagrees with this.

Speed: a batch becomes one (batch x depth) matrix of grades and each metric is a few numpy reductions
over it. Building that matrix (a dict per ranking) is most of the cost, so the matrix of the last batch
is kept and reused when the next retrieval metric is handed the same samples, as happens when several
retrieval metrics are requested together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..data.records import Sample
from .base import Measurement, Metric, MetricContext, MetricOption, Outcome, Skipped
from .registry import register_metric

#: Reason given for queries without any relevant judged document (see the module docstring).
NO_RELEVANT = "no relevant reference documents"
#: NDCG gain functions: "linear" is trec_eval's ndcg_cut (gain = grade), "exponential" is Burges et al.
GAINS = ("linear", "exponential")
#: Above this grade the exponential gains of a query are computed scaled down (2^1024 overflows a float).
EXP_SAFE_GRADE = 512.0
REQUIRES = ("context_ids", "reference_doc_ids")


@dataclass(frozen=True, slots=True)
class _Batch:
    """A batch in matrix form. Rows of skipped samples are all zero and never read back."""

    grades: np.ndarray  # (n, depth) float64: grade of the doc at each rank if > 0, else 0 (also past the end)
    ideal: np.ndarray  # (n, max relevant) float64: each query's positive grades sorted descending, 0-padded
    num_rel: np.ndarray  # (n,) float64: relevant documents in the judgments (1 for skipped rows, to divide safely)
    skipped: list[Skipped | None]
    duplicates: list[int]


def _prepare(samples: Sequence[Sample]) -> _Batch:
    """One pass of Python over the batch; everything after it is numpy.

    Only relevant documents are placed in the grade matrix: each query's relevant ids are looked up
    in a {doc_id: rank} index of its ranking, which costs one dict build per query instead of one
    lookup per retrieved document.
    """
    rows: list[int] = []
    cols: list[int] = []
    values: list[float] = []
    depth = 0
    ideal_rows: list[float] = []
    rel_counts: list[int] = []
    skipped: list[Skipped | None] = []
    duplicates: list[int] = []
    for row, sample in enumerate(samples):
        contexts, relevance = sample.contexts, sample.relevance
        reason = None
        if contexts is None or relevance is None:
            reason = sample.missing("context_ids") or sample.missing("reference_doc_ids")
        else:
            positive = [(doc_id, grade) for doc_id, grade in relevance.items() if grade > 0]
            ids = [c.id for c in contexts]
            rank_of = dict(zip(ids, range(len(ids))))
            if None in rank_of:
                reason = "contexts have no ids"
            elif not positive:
                reason = NO_RELEVANT
        if reason is not None:
            skipped.append(Skipped(reason))
            duplicates.append(0)
            rel_counts.append(0)
            continue
        removed = len(contexts) - len(rank_of)
        if removed:
            # dict.fromkeys keeps each id's first occurrence, in rank order; ranks close up behind it.
            rank_of = {doc_id: rank for rank, doc_id in enumerate(dict.fromkeys(ids))}
        depth = max(depth, len(rank_of))
        get = rank_of.get
        for doc_id, grade in positive:
            rank = get(doc_id)
            if rank is not None:
                rows.append(row)
                cols.append(rank)
                values.append(grade)
        grades = sorted((grade for _, grade in positive), reverse=True)
        ideal_rows.extend(grades)
        rel_counts.append(len(grades))
        skipped.append(None)
        duplicates.append(removed)

    matrix = np.zeros((len(skipped), depth), dtype=np.float64)
    matrix[rows, cols] = values
    counts = np.asarray(rel_counts, dtype=np.float64)
    return _Batch(matrix, _pad(ideal_rows, rel_counts), np.maximum(counts, 1.0), skipped, duplicates)


def _pad(flat: list[float], lengths: list[int]) -> np.ndarray:
    """Ragged rows (concatenated in `flat`) into a zero-padded matrix, filled row-major by a mask."""
    sizes = np.asarray(lengths, dtype=np.intp)
    width = int(sizes.max(initial=0))
    matrix = np.zeros((len(lengths), width), dtype=np.float64)
    if flat:
        matrix[np.arange(width) < sizes[:, None]] = flat
    return matrix


_last: tuple[tuple[Sample, ...], _Batch] | None = None


def _batch_for(samples: Sequence[Sample]) -> _Batch:
    """The last batch's matrices when called again with the very same sample objects, else new ones.

    Identity (not equality) is checked, element by element, so a different or reordered batch is
    always rebuilt; samples are frozen, so identical objects mean identical inputs (mutating a
    sample's relevance dict in place between two metrics' calls is not supported). A single global
    reference is swapped atomically, so concurrent callers at worst build the matrix twice.
    """
    global _last
    last = _last
    if last is not None and len(last[0]) == len(samples) and all(a is b for a, b in zip(last[0], samples)):
        return last[1]
    batch = _prepare(samples)
    _last = (tuple(samples), batch)
    return batch


def _check_k(k: Any, optional: bool = False) -> int | None:
    if k is None and optional:
        return None
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"cutoff k must be a positive integer (k=0 does not mean 'all'), got {k!r}")
    return k


def _discount(width: int) -> np.ndarray:
    """log2(rank + 1) for ranks 1..width: trec_eval divides gain by log2(i + 2) for 0-based i."""
    return np.log2(np.arange(2, width + 2, dtype=np.float64))


class _RankMetric(Metric):
    """Shared plumbing: canonical name, column, batch preparation and outcome assembly."""

    requires: tuple[str, ...] = REQUIRES
    cutoff = "required"
    default_k: int | None = 5
    groups: tuple[str, ...] = ("retrieval", "classical")

    def __init__(self, k: int | None) -> None:
        self.k = k
        self.name = type(self).name if k is None else f"{type(self).name}@{k}"
        self.columns = (self.name,)

    @classmethod
    def create(cls, context: MetricContext, k: int | None) -> _RankMetric:
        return cls(k)  # type: ignore[call-arg]

    def settings(self) -> dict[str, Any]:
        return {"k": self.k}

    def measure(self, samples: Sequence[Sample]) -> list[Outcome]:
        batch = _batch_for(samples)
        values = self._compute(batch).tolist()
        name = self.name
        outcomes: list[Outcome] = []
        for skip, removed, value in zip(batch.skipped, batch.duplicates, values):
            if skip is not None:
                outcomes.append(skip)
            elif removed:
                outcomes.append(Measurement({name: value}, {"duplicate_ids_removed": removed}))
            else:
                outcomes.append(Measurement({name: value}))
        return outcomes

    def _compute(self, batch: _Batch) -> np.ndarray:
        raise NotImplementedError

    def _relevant(self, batch: _Batch) -> np.ndarray:
        """Boolean (n, min(k, depth)) matrix; fewer than k columns means the missing ranks are non-relevant."""
        return batch.grades[:, : self.k] > 0

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


@register_metric
class Precision(_RankMetric):
    """precision@k = (relevant documents in the top k) / k — trec_eval `P.k`.

    As in trec_eval, the divisor is k even when fewer than k documents were retrieved: missing ranks
    count as non-relevant, so a short ranking cannot score higher than a full one.
    """

    name = "precision"
    aliases = ("p",)

    def __init__(self, k: int) -> None:
        super().__init__(_check_k(k))

    def _compute(self, batch: _Batch) -> np.ndarray:
        return self._relevant(batch).sum(axis=1) / float(self.k)  # type: ignore[arg-type]


@register_metric
class Recall(_RankMetric):
    """recall@k = (relevant documents in the top k) / (relevant documents in the judgments) — trec_eval `recall.k`."""

    name = "recall"
    aliases = ("r",)

    def __init__(self, k: int) -> None:
        super().__init__(_check_k(k))

    def _compute(self, batch: _Batch) -> np.ndarray:
        return self._relevant(batch).sum(axis=1) / batch.num_rel


@register_metric
class Hit(_RankMetric):
    """hit@k = 1 if any relevant document is in the top k, else 0 — trec_eval `success.k`."""

    name = "hit"
    aliases = ("success", "hit_rate")

    def __init__(self, k: int) -> None:
        super().__init__(_check_k(k))

    def _compute(self, batch: _Batch) -> np.ndarray:
        return self._relevant(batch).any(axis=1).astype(np.float64)


@register_metric
class ReciprocalRank(_RankMetric):
    """mrr = 1 / rank of the first relevant document, 0 if none is retrieved — trec_eval `recip_rank`.

    With k (`mrr@k`) only the top k ranks are searched, as in ir_measures' `RR@k`. The "mean" is taken
    by the summary; per sample this is the reciprocal rank.
    """

    name = "mrr"
    aliases = ("rr", "recip_rank")
    cutoff = "optional"
    default_k = None

    def __init__(self, k: int | None = None) -> None:
        super().__init__(_check_k(k, optional=True))

    def _compute(self, batch: _Batch) -> np.ndarray:
        relevant = self._relevant(batch)
        if relevant.shape[1] == 0:
            return np.zeros(relevant.shape[0])
        first = relevant.argmax(axis=1)  # index of the first True; 0 also when there is none
        return np.where(relevant.any(axis=1), 1.0 / (first + 1.0), 0.0)


@register_metric
class AveragePrecision(_RankMetric):
    """ap = sum over relevant retrieved ranks r of precision@r, divided by the relevant documents in
    the judgments — trec_eval `map` (per query). `ap@k` only sums ranks <= k but keeps the same
    divisor, as trec_eval `map_cut.k` does (not min(k, R)).
    """

    name = "ap"
    aliases = ("map", "map_cut")
    cutoff = "optional"
    default_k = None

    def __init__(self, k: int | None = None) -> None:
        super().__init__(_check_k(k, optional=True))

    def _compute(self, batch: _Batch) -> np.ndarray:
        relevant = self._relevant(batch).astype(np.float64)
        precision_at = np.cumsum(relevant, axis=1) / np.arange(1, relevant.shape[1] + 1, dtype=np.float64)
        return (precision_at * relevant).sum(axis=1) / batch.num_rel


@register_metric
class NDCG(_RankMetric):
    """ndcg@k = DCG@k / ideal DCG@k, with DCG@k = sum over ranks r <= k of gain(grade_r) / log2(r + 1).

    The ideal ranking is the judgments' positive grades sorted descending, cut at k. `gain="linear"`
    uses gain = grade, exactly trec_eval `ndcg_cut.k` (Järvelin & Kekäläinen, ACM TOIS 20(4), 2002);
    `gain="exponential"` uses 2^grade - 1 (Burges et al., ICML 2005), as ranx's `ndcg_burges`. The two
    agree on binary judgments. Grades <= 0 have gain 0 under both.
    """

    name = "ndcg"
    aliases = ("ndcg_cut",)
    options = (MetricOption("ndcg_gain", "linear", "NDCG gain: the grade itself (trec_eval) or 2^grade - 1 (Burges).",
                            choices=GAINS),)

    def __init__(self, k: int, gain: str = "linear") -> None:
        if gain not in GAINS:
            raise ValueError(f"gain must be one of {', '.join(GAINS)}, got {gain!r}")
        super().__init__(_check_k(k))
        self.gain = gain

    @classmethod
    def create(cls, context: MetricContext, k: int | None) -> NDCG:
        return cls(k, context.options["ndcg_gain"])  # type: ignore[arg-type]

    def settings(self) -> dict[str, Any]:
        return {"k": self.k, "gain": self.gain}

    def _gains(self, grades: np.ndarray, shift: np.ndarray) -> np.ndarray:
        """Gains divided by 2^shift per query (shift 0 but for grades past EXP_SAFE_GRADE, where 2^grade
        overflows): every gain of a query scaled alike leaves DCG / ideal DCG as it was."""
        if self.gain == "linear":
            return grades
        return np.power(2.0, grades - shift) - np.power(2.0, -shift)

    def _compute(self, batch: _Batch) -> np.ndarray:
        top = batch.ideal[:, :1] if batch.ideal.shape[1] else np.zeros((len(batch.ideal), 1))
        shift = np.maximum(top - EXP_SAFE_GRADE, 0.0)
        gains = self._gains(batch.grades[:, : self.k], shift)
        ideal = self._gains(batch.ideal[:, : self.k], shift)
        # Divide rather than multiply by 1/log2 so each term is bit-for-bit trec_eval's.
        dcg = (gains / _discount(gains.shape[1])).sum(axis=1)
        idcg = (ideal / _discount(ideal.shape[1])).sum(axis=1)
        return dcg / np.where(idcg > 0, idcg, 1.0)
