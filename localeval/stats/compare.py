"""Comparing systems scored on the same test set: paired differences, their intervals, and a ranking.

Runs are aligned by sample id, so each difference d_i = a_i − b_i is taken on the same question; pairing
removes the between-question variance that dominates unpaired comparisons. Per metric column, only the
samples scored in every run are used (the rest are counted), so all pairs and the ranking see the same
samples.

Interval for the mean difference d̄:
- paired bootstrap (default): resample the n sample indices with replacement B times, take the mean of d
  over each resample, report the α/2 and 1 − α/2 percentiles (Efron & Tibshirani 1993, ch. 13). The same
  resampled indices serve every pair of a column, so the pairwise intervals are mutually consistent.
- PPI (when both runs have human labels for the column): the prediction-powered interval of ppi.py on
  Y = y_a − y_b (the humans' difference) with the judge's difference f = f_a − f_b as the prediction; the
  labelled ids are the rectifier set and the other aligned samples the unlabelled set, so the interval
  is about the difference the humans would see.

Two systems are "not distinguishable" on a column when the interval covers 0. Ranks use competition
ranking on those verdicts: rank = 1 + the number of systems significantly better, so indistinguishable
systems can share a rank. No multiple-comparison correction is applied: with k runs there are k(k−1)/2
intervals per column, each at the stated confidence.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from ..data.labels import Labels
from ..errors import InputError, LocalevalError, OptionError
from ..results.runs import ScoredRun
from .bootstrap import column_rng, paired_bootstrap_means
from .ppi import ppi_mean_ci

DEFAULT_BOOTSTRAP = 10_000


@dataclass(frozen=True)
class PairResult:
    """a − b on one column: the mean difference, its interval, and who is better (None: not distinguishable)."""

    a: str
    b: str
    diff: float | None  # None: no sample was scored in both runs
    low: float | None
    high: float | None
    method: str
    better: str | None
    n_labeled: int = 0


@dataclass(frozen=True)
class ColumnComparison:
    """One metric column across all runs."""

    column: str
    n: int
    n_dropped: int
    means: dict[str, float]
    ranks: dict[str, int]
    pairs: list[PairResult]
    #: Read so because the metric declares it (hallucination) or --lower-is-better named the column.
    lower_is_better: bool = False


@dataclass(frozen=True)
class Comparison:
    runs: list[str]
    n_aligned: int
    confidence: float
    n_bootstrap: int
    seed: int
    columns: list[ColumnComparison]

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def align(runs: Sequence[ScoredRun]) -> list[str]:
    """The common ids, in the first run's order; differing id sets are an error naming the missing ids."""
    first = runs[0]
    reference = set(first.ids)
    for run in runs[1:]:
        ids = set(run.ids)
        for lacking, having, missing in ((run, first, reference - ids), (first, run, ids - reference)):
            if missing:
                shown = ", ".join(f"'{i}'" for i in sorted(missing)[:5])
                more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
                raise InputError(lacking.source, None, "id", f"lacks {len(missing)} sample id(s) of {having.source}: "
                                                             f"{shown}{more}; compare runs scored on the same test set")
    return list(first.ids)


def compare_runs(
    runs: Sequence[ScoredRun],
    columns: Sequence[str] | None = None,
    n_boot: int = DEFAULT_BOOTSTRAP,
    confidence: float = 0.95,
    seed: int = 0,
    labels: Mapping[str, Labels] | None = None,
    lower_is_better: Sequence[str] = (),
) -> Comparison:
    """Every pair of runs on every shared column (or `columns`); `labels` maps run name → its human labels.
    Columns of metrics that declare lower values better are read so, as well as `lower_is_better`."""
    from ..metrics.registry import lower_is_better as declared

    if len(runs) < 2:
        raise LocalevalError("compare needs at least two runs")
    if len({r.name for r in runs}) != len(runs):
        raise LocalevalError("each run may be given once")
    if n_boot < 100:
        raise LocalevalError(f"--n-boot {n_boot} is too small for a percentile interval; use at least 100")
    ids = align(runs)
    shared = [c for c in runs[0].columns if all(c in r.columns for r in runs[1:])]
    for column in columns or ():
        lacking = [r.source for r in runs if column not in r.columns]
        if lacking:
            raise LocalevalError(f"metric column '{column}' is not in {', '.join(lacking)}; shared columns: "
                                 f"{', '.join(shared) or 'none'}")
    for column in lower_is_better:
        if column not in shared:
            raise OptionError(f"--lower-is-better '{column}' is not a metric column of every run; shared columns: "
                              f"{', '.join(shared) or 'none'}")
    lower = {*lower_is_better, *declared()}
    results = [
        _compare_column(runs, ids, column, n_boot, confidence, seed, labels or {}, column in lower)
        for column in (columns or shared)
    ]
    return Comparison(runs=[r.name for r in runs], n_aligned=len(ids), confidence=confidence, n_bootstrap=n_boot,
                      seed=seed, columns=results)


def _compare_column(runs: Sequence[ScoredRun], ids: list[str], column: str, n_boot: int, confidence: float, seed: int,
                    labels: Mapping[str, Labels], lower_better: bool) -> ColumnComparison:
    values = np.stack([run.values(column, ids) for run in runs])
    scored = ~np.isnan(values).any(axis=0)
    values = values[:, scored]
    kept = [i for i, keep in zip(ids, scored) if keep]
    names = [run.name for run in runs]
    n = values.shape[1]
    means = {name: float(v.mean()) if n else float("nan") for name, v in zip(names, values)}
    pair_index = list(combinations(range(len(runs)), 2))
    diffs = np.stack([values[i] - values[j] for i, j in pair_index])
    boot = None
    if n >= 2:
        rng = column_rng(seed, column)
        boot = np.quantile(paired_bootstrap_means(diffs, n_boot, rng), [(1 - confidence) / 2, (1 + confidence) / 2], axis=1)
    pairs = []
    for k, (i, j) in enumerate(pair_index):
        ppi = _ppi_difference(labels.get(names[i]), labels.get(names[j]), column, kept, values[i], values[j], confidence)
        if ppi is not None:
            pairs.append(_verdict(names[i], names[j], *ppi, "ppi", lower_better))
        elif boot is not None:
            pairs.append(_verdict(names[i], names[j], float(diffs[k].mean()), float(boot[0, k]), float(boot[1, k]), 0,
                                  "bootstrap", lower_better))
        elif n:
            pairs.append(PairResult(names[i], names[j], float(diffs[k].mean()), None, None, "too few samples", None))
        else:  # no difference was measured: none is reported, not a difference of 0
            pairs.append(PairResult(names[i], names[j], None, None, None, "no sample scored in every run", None))
    better_count = {name: 0 for name in names}
    for pair in pairs:
        if pair.better is not None:
            better_count[pair.b if pair.better == pair.a else pair.a] += 1
    ranks = {name: 1 + better_count[name] for name in names}
    return ColumnComparison(column=column, n=n, n_dropped=len(ids) - n, lower_is_better=lower_better,
                            means={k: (None if np.isnan(v) else v) for k, v in means.items()},  # type: ignore[misc]
                            ranks=dict(sorted(ranks.items(), key=lambda kv: (kv[1], -(means[kv[0]] if n else 0)))),
                            pairs=pairs)


def _ppi_difference(labels_a: Labels | None, labels_b: Labels | None, column: str, ids: list[str],
                    a: NDArray, b: NDArray, confidence: float) -> tuple[float, float, float, int] | None:
    """PPI on the humans' paired difference when both runs have labels for this column on shared ids."""
    if labels_a is None or labels_b is None:
        return None
    ya, yb = labels_a.by_column.get(column, {}), labels_b.by_column.get(column, {})
    mask = np.array([i in ya and i in yb for i in ids], dtype=bool)
    if mask.sum() < 2 or (~mask).sum() < 1:
        return None
    human = np.array([ya[i] - yb[i] for i in ids if i in ya and i in yb], dtype=float)
    judged = a - b
    result = ppi_mean_ci(human, judged[mask], judged[~mask], confidence)
    return result.ppi.estimate, result.ppi.low, result.ppi.high, int(mask.sum())  # type: ignore[return-value]


def _verdict(a: str, b: str, diff: float, low: float, high: float, n_labeled: int, method: str,
             lower_better: bool) -> PairResult:
    better = None
    if low > 0:
        better = b if lower_better else a
    elif high < 0:
        better = a if lower_better else b
    return PairResult(a=a, b=b, diff=diff, low=low, high=high, method=method, better=better, n_labeled=n_labeled)
