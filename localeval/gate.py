"""Quality gates: does a scored run meet the team's thresholds? (`localeval check`, `assert_scores`).

A threshold names a metric column of the run (`faithfulness`, `ndcg@10`, `rouge_l.f`) and a bound. What
is compared with it is the column's mean, or with `on="ci-low"` the conservative end of its interval:
the lower end for a minimum, the upper end for a maximum, so the gate passes only when the whole
interval clears the bar. The interval is the PPI one where the run has human labels for the column, else
a seeded percentile bootstrap (stats/intervals.py); which one was used is part of every result.

A column no sample was scored on, or one too small for an interval, fails its threshold (with the
reason) rather than passing by default: an empty gate must not be green. A skipped sample (no contexts, an
answer that is only text aimed at the judge) is not in the mean, so with `max_skipped` a column fails when
more than that share of the run's samples were skipped for it: a gate should not pass on the few samples a
broken pipeline, or an answer written to be skipped, left scored. How many were skipped is always shown.
A value equal to the threshold up to float rounding (relative 1e-9) meets it, so a mean of exactly 17/20
passes `--min x=0.85`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Mapping

from .errors import OptionError
from .settings import parse_pairs

if TYPE_CHECKING:
    from .results.runs import ScoredRun
    from .stats.intervals import Interval

On = Literal["mean", "ci-low"]
ON_CHOICES = ("mean", "ci-low")
DEFAULT_BOOTSTRAP = 2_000


@dataclass(frozen=True)
class Threshold:
    """`--min faithfulness=0.85` is Threshold("faithfulness", "min", 0.85)."""

    column: str
    bound: Literal["min", "max"]
    limit: float

    @property
    def flag(self) -> str:
        return f"--{self.bound} {self.column}={self.limit:g}"


@dataclass(frozen=True)
class CheckResult:
    """One threshold against the run: the figure compared, where it came from, and by how much it clears."""

    threshold: Threshold
    value: float | None
    compared: str  # "mean", "ci-low" or "ci-high"
    method: str
    passed: bool
    margin: float | None  # positive: clears the bar by this much; negative: misses it by this much
    too_many_skipped: bool = False  # failed --max-skipped, whatever its value


@dataclass(frozen=True)
class GateResult:
    run: str
    on: str
    checks: list[CheckResult]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def failed(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.passed]


def parse_thresholds(mins: Mapping[str, object] | list[str] | tuple[str, ...] = (),
                     maxs: Mapping[str, object] | list[str] | tuple[str, ...] = ()) -> list[Threshold]:
    """Thresholds from `NAME=VALUE` strings (the CLI) or {name: value} mappings (Python); bad ones raise OptionError."""
    thresholds = []
    for bound, given in (("min", mins), ("max", maxs)):
        if not isinstance(given, Mapping):  # a column given twice would keep only its last bar, maybe the laxer
            named = [str(item).partition("=")[0].strip() for item in given if "=" in str(item)]
            twice = next((n for n in named if named.count(n) > 1), None)
            if twice is not None:
                raise OptionError(f"--{bound} {twice}: given more than once; give each column one threshold")
        pairs = dict(given) if isinstance(given, Mapping) else parse_pairs(given, f"--{bound}", "NAME=VALUE (e.g. faithfulness=0.85)")
        for column, raw in pairs.items():
            try:
                limit = float(raw)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                raise OptionError(f"--{bound} {column}={raw}: '{raw}' is not a number") from None
            if not math.isfinite(limit):
                raise OptionError(f"--{bound} {column}={raw}: the threshold must be a finite number")
            thresholds.append(Threshold(column, bound, limit))  # type: ignore[arg-type]
    if not thresholds:
        raise OptionError("give at least one threshold, e.g. --min faithfulness=0.85")
    return thresholds


def check_run(run_dir: Path, thresholds: list[Threshold], on: str = "mean", n_boot: int = DEFAULT_BOOTSTRAP,
              confidence: float = 0.95, seed: int = 0, max_skipped: float | None = None) -> GateResult:
    """Every threshold against RUN_DIR (summary.json, and samples.jsonl when a bootstrap is needed)."""
    from .results.runs import load_calibration, load_run, load_summary, unknown_column
    from .stats.intervals import bootstrap_interval, ppi_interval

    if on not in ON_CHOICES:
        raise OptionError(f"--on '{on}': use one of {', '.join(ON_CHOICES)}")
    if n_boot < 100:
        raise OptionError(f"--n-boot {n_boot} is too small for a percentile interval; use at least 100")
    if not 0.0 < confidence < 1.0:  # the CLI's range, for the Python API (assert_scores)
        raise OptionError(f"--confidence {confidence}: give a level between 0 and 1, e.g. 0.95")
    if seed < 0:
        raise OptionError(f"--seed {seed}: give a seed of 0 or more")
    if max_skipped is not None and not 0.0 <= max_skipped <= 1.0:  # the CLI's range, for assert_scores
        raise OptionError(f"--max-skipped {max_skipped}: give a share of the samples between 0 and 1, e.g. 0.05")
    summary = load_summary(run_dir)
    columns = summary["metrics"]
    for t in thresholds:
        if t.column not in columns:
            raise OptionError(f"--{t.bound} {t.column}: {unknown_column(t.column, columns)}")
    calibration = load_calibration(run_dir) if on == "ci-low" else None
    run: ScoredRun | None = None
    checks = []
    for t in thresholds:
        entry = columns[t.column]
        too_many = _too_many_skipped(entry, max_skipped)
        if too_many:
            checks.append(CheckResult(t, entry.get("mean"), "mean", too_many, False, None, too_many_skipped=True))
            continue
        if on == "mean":
            value = entry.get("mean")
            checks.append(_judged(t, value, "mean", f"mean of {entry.get('n', 0)} scored samples{_skipped(entry)}",
                                  None if value is not None else f"no sample was scored{_skipped(entry)}"))
            continue
        interval: Interval | None = ppi_interval(summary, calibration, t.column, confidence=confidence)
        if interval is None:
            run = run or load_run(run_dir)
            interval = bootstrap_interval(run, t.column, n_boot, confidence, seed)
        compared = "ci-low" if t.bound == "min" else "ci-high"
        if interval is None:
            checks.append(_judged(t, None, compared, "no interval", f"{entry.get('n', 0)} scored sample(s); "
                                                                     "an interval needs at least 2"))
            continue
        value = interval.low if t.bound == "min" else interval.high
        checks.append(_judged(t, value, compared, f"{interval.confidence:.0%} {interval.method}{_skipped(entry)}", None))
    return GateResult(run=str(run_dir), on=on, checks=checks)


def _count(entry: Mapping[str, object], key: str) -> int:
    """A summary column's `n` or `n_skipped` (absent, or null, is 0)."""
    return int(entry.get(key) or 0)  # type: ignore[call-overload]


def _skipped(entry: Mapping[str, object]) -> str:
    skipped = _count(entry, "n_skipped")
    return f", {skipped} skipped" if skipped else ""


def _too_many_skipped(entry: Mapping[str, object], max_skipped: float | None) -> str | None:
    """Why a column fails --max-skipped, or None."""
    scored, skipped = _count(entry, "n"), _count(entry, "n_skipped")
    if max_skipped is None or not scored + skipped:
        return None
    share = skipped / (scored + skipped)
    if share <= max_skipped or math.isclose(share, max_skipped, rel_tol=1e-9):
        return None
    return f"{skipped} of {scored + skipped} samples skipped ({share:.0%}), more than --max-skipped {max_skipped:g}"


def _judged(t: Threshold, value: float | None, compared: str, method: str, problem: str | None) -> CheckResult:
    if value is None:
        return CheckResult(t, None, compared, problem or method, False, None)
    margin = value - t.limit if t.bound == "min" else t.limit - value
    passed = margin >= 0 or math.isclose(value, t.limit, rel_tol=1e-9, abs_tol=1e-12)
    return CheckResult(t, float(value), compared, method, passed, margin)
