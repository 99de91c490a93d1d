"""Which interval a run's column mean has, for `check --on ci-low` and the report's summary table.

A column with human labels has a prediction-powered interval (PPI++, stats/ppi.py), written by
`localeval score --labels` into summary.json or by `localeval calibrate` into calibration.json; it is
about the quantity the humans would measure. Any other column gets a seeded percentile bootstrap of the
judge's (or the formula's) mean over the scored samples (stats/bootstrap.py): it covers sampling noise
only, not the judge's bias.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from ..results.runs import ScoredRun


@dataclass(frozen=True)
class Interval:
    """An interval for a column's mean and where it came from (shown beside every use of it)."""

    estimate: float
    low: float
    high: float
    confidence: float
    method: str

    def as_dict(self) -> dict[str, Any]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "confidence": self.confidence,
                "method": self.method}


def ppi_interval(summary: Mapping[str, Any], calibration: Mapping[str, Any] | None, column: str,
                 calibration_source: str = "calibration.json", confidence: float | None = None) -> Interval | None:
    """The PPI interval of `column` from a calibration report (calibration.json's content, or one computed from
    labels given now), else from summary.json's `ppi` block; None where the column is unlabelled. With
    `confidence`, the interval at that level (estimate ± z·standard error, both stored), whatever level it
    was written at: a gate asked for 99% must not compare the 95% end."""
    sources = []
    if calibration:
        sources.append((calibration_source, (calibration.get("metrics", {}).get(column) or {}).get("ppi")))
    sources.append(("summary.json", (summary.get("ppi") or {}).get("metrics", {}).get(column)))
    for where, block in sources:
        if isinstance(block, dict) and "ci" in block:
            estimate, (low, high), written = float(block["estimate"]), block["ci"], float(block["confidence"])
            if confidence is not None and confidence != written:
                from .ppi import z_quantile

                half = z_quantile(confidence) * float(block["std_error"])
                low, high, written = estimate - half, estimate + half, confidence
            return Interval(estimate, float(low), float(high), written, f"PPI, {block['n_labeled']} labels ({where})")
    return None


def bootstrap_interval(run: ScoredRun, column: str, n_boot: int, confidence: float, seed: int) -> Interval | None:
    """The percentile bootstrap interval of the column's mean; None with fewer than 2 scored samples."""
    from .bootstrap import bootstrap_mean_ci

    values = run.columns.get(column)
    ci = None if values is None else bootstrap_mean_ci(values, column, n_boot, confidence, seed)
    if ci is None:
        return None
    return Interval(ci.mean, ci.low, ci.high, confidence, f"bootstrap, {n_boot} resamples, seed {seed}")
