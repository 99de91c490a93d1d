"""The percentile bootstrap of a mean (Efron & Tibshirani 1993, ch. 13), shared by `compare` (paired
differences), `check --on ci-low` and the report (a run's own columns).

Resample the n values with replacement B times, take the mean of each resample, report the α/2 and
1 − α/2 percentiles (numpy's default linear interpolation between order statistics). The generator is
seeded from (seed, CRC-32 of the column name), so a column's interval does not depend on which other
columns were asked for, or in which order.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

#: Elements of the (rows × resamples × samples) block gathered at once; bounds memory to ~32 MB.
CHUNK_ELEMENTS = 4_000_000
BOOTSTRAP_METHOD = "percentile bootstrap of the mean"


@dataclass(frozen=True)
class BootstrapCI:
    """A column's mean with its percentile interval; `n_boot` and `seed` make it reproducible."""

    mean: float
    low: float
    high: float
    n: int
    n_boot: int
    seed: int
    confidence: float


def column_rng(seed: int, column: str) -> np.random.Generator:
    """The generator a column's resamples come from: the same for the same (seed, column), always."""
    return np.random.default_rng([seed, zlib.crc32(column.encode("utf-8"))])


def paired_bootstrap_means(diffs: NDArray[np.float64], n_boot: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """Bootstrap means of each row of `diffs` (rows × n), with one set of resampled indices for all rows."""
    rows, n = diffs.shape
    out = np.empty((rows, n_boot))
    chunk = max(1, CHUNK_ELEMENTS // max(1, n * rows))
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[:, start:stop] = diffs[:, idx].mean(axis=-1)
    return out


def bootstrap_mean_ci(values: NDArray[np.float64], column: str, n_boot: int = 2_000, confidence: float = 0.95,
                      seed: int = 0) -> BootstrapCI | None:
    """The interval of the mean of one column's scored values (NaN = skipped, left out); None below 2 values,
    where resampling can only return the value itself."""
    scored = values[~np.isnan(values)]
    if scored.size < 2:
        return None
    means = paired_bootstrap_means(scored[None, :], n_boot, column_rng(seed, column))[0]
    low, high = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
    return BootstrapCI(mean=float(scored.mean()), low=float(low), high=float(high), n=int(scored.size), n_boot=n_boot,
                       seed=seed, confidence=confidence)
