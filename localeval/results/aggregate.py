"""Streaming summary statistics per output column, with skip reasons counted per metric.

Welford's update keeps mean and variance exact enough in one pass and O(1) memory, which is what lets a
million-row test set be summarised without holding its rows. The standard deviation is the population
one (ddof=0): it describes the scored samples, it does not estimate anything beyond them.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence


@dataclass
class RunningStats:
    """Count, mean and sum of squared deviations, updated one value at a time."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0

    def add(self, value: float) -> None:
        self.n += 1
        delta = value - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (value - self.mean)

    @property
    def std(self) -> float | None:
        return math.sqrt(self.m2 / self.n) if self.n else None


@dataclass
class MetricTally:
    """One metric: stats for each of its columns and the reasons samples were skipped."""

    columns: Sequence[str]
    stats: dict[str, RunningStats] = field(default_factory=dict)
    skipped: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.stats = {c: RunningStats() for c in self.columns}


class Summary:
    """Accumulates outcomes metric by metric; `as_dict` is what summary.json holds under "metrics"."""

    def __init__(self, metric_columns: dict[str, Sequence[str]]) -> None:
        self._tallies = {name: MetricTally(columns) for name, columns in metric_columns.items()}
        self.n_samples = 0

    def add_values(self, metric: str, values: dict[str, float]) -> None:
        tally = self._tallies[metric]
        for column, value in values.items():
            tally.stats[column].add(value)

    def add_skip(self, metric: str, reason: str) -> None:
        self._tallies[metric].skipped[reason] += 1

    def as_dict(self) -> dict[str, dict[str, Any]]:
        """Per column: mean and std (null when no sample was scored, never NaN), n, n_skipped, reasons."""
        out: dict[str, dict[str, Any]] = {}
        for name, tally in self._tallies.items():
            for column, stats in tally.stats.items():
                out[column] = {
                    "metric": name,
                    "mean": stats.mean if stats.n else None,
                    "std": stats.std,
                    "n": stats.n,
                    "n_skipped": sum(tally.skipped.values()),
                    "skipped": dict(sorted(tally.skipped.items())),
                }
        return out
