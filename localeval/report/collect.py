"""Everything the report shows about one run, gathered from its folder: the summary with intervals,
settings, the judge and its work, per-column histograms, the judge-vs-human view, the chunk verdicts against
the samples' reference_doc_ids (fitted as `calibrate` fits them), and the embedded samples.

Statistics come from stats/ (intervals, calibration); this module only arranges them for the page. Charts
get counts, not values, so a histogram of 100,000 samples costs the file a few hundred bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..data.labels import Labels
from ..results.runs import ScoredRun, load_calibration, load_summary
from ..results.verdicts import chunk_metrics
from ..stats.calibration import run_verdict_thresholds
from ..stats.intervals import bootstrap_interval, ppi_interval
from .samples import MAX_TEXT, embedded_samples, select_ids

#: Bars per histogram.
BINS = 20


@dataclass(frozen=True)
class RunInput:
    """A run to report on, already read (so the comparison and the histograms share one parse)."""

    folder: Path
    run: ScoredRun
    labels: Labels | None = None


@dataclass(frozen=True)
class ReportSettings:
    max_samples: int
    n_boot: int
    confidence: float
    seed: int
    lower_is_better: tuple[str, ...] = ()


def run_payload(item: RunInput, settings: ReportSettings, ranges: Mapping[str, tuple[float, float]],
                first_ids: Sequence[str] = ()) -> dict[str, Any]:
    """The page's data for one run (see assets/app.js for how each key is drawn)."""
    summary = load_summary(item.folder)
    calibration = load_calibration(item.folder)
    run = item.run
    # every column of summary.json, also one no sample was scored on (its skip reasons are the news)
    columns = list(summary["metrics"]) + [c for c in run.columns if c not in summary["metrics"]]
    unscored = np.full(len(run.ids), np.nan)
    verdict_thresholds = _verdict_thresholds(item)
    labels = _labels_view(item, summary, calibration, settings)
    if item.labels is not None and labels is not None:  # labels given now take precedence for the intervals
        calibration, source = {"metrics": labels["metrics"]}, f"labels {item.labels.source}"
    else:
        source = "calibration.json"
    selected = select_ids(run, columns, settings.max_samples, settings.lower_is_better, first_ids)
    samples, n_cut = embedded_samples(run, columns, selected, item.labels.by_column if item.labels else None)
    return {
        "name": run.name,
        "folder": str(item.folder),
        "input": summary.get("input"),
        "n_samples": len(run.ids),
        "columns": columns,
        "summary": _summary_rows(summary, calibration, source, run, columns, settings),
        "settings": summary.get("settings", {}),
        "versions": summary.get("versions", {}),
        "judge": summary.get("judge"),
        "extra": {k: v for k, v in summary.items() if k in ("trec",)},
        "histograms": {c: histogram(run.columns.get(c, unscored), ranges.get(c, (0.0, 1.0))) for c in columns},
        "labels": labels,
        "verdict_thresholds": verdict_thresholds,
        "samples": samples,
        "embedded": {"n": len(samples), "max_samples": settings.max_samples, "all": selected is None,
                     "texts_cut": n_cut, "max_text": MAX_TEXT},
    }


def value_ranges(runs: Sequence[ScoredRun]) -> dict[str, tuple[float, float]]:
    """One histogram range per column across the runs, so overlaid bars line up; [0, 1] for scores in it."""
    out: dict[str, tuple[float, float]] = {}
    for column in dict.fromkeys(c for run in runs for c in run.columns):
        scored = np.concatenate([r.columns[column][~np.isnan(r.columns[column])] for r in runs if column in r.columns])
        if scored.size == 0:
            out[column] = (0.0, 1.0)
        elif scored.min() >= 0.0 and scored.max() <= 1.0:
            out[column] = (0.0, 1.0)
        else:
            low, high = float(scored.min()), float(scored.max())
            out[column] = (low, high) if high > low else (low - 0.5, high + 0.5)
    return out


def histogram(values: np.ndarray, value_range: tuple[float, float]) -> dict[str, Any]:
    """Counts of the scored values in BINS equal bins over the range (the last bin includes its right edge)."""
    scored = values[~np.isnan(values)]
    counts, edges = np.histogram(scored, bins=BINS, range=value_range)
    return {"edges": [round(float(e), 6) for e in edges], "counts": counts.tolist(),
            "mean": float(scored.mean()) if scored.size else None, "n": int(scored.size)}


def _verdict_thresholds(item: RunInput) -> dict[str, Any] | None:
    """What `localeval calibrate` writes as verdict_thresholds, computed on the run as it is now (it reads
    cached probabilities and fits a threshold; no judge call): every report of a run whose samples name their
    relevant documents shows whether the judge says yes to every chunk, and a calibration.json written before
    a re-score cannot show figures the run no longer rests on. None when no chunk is labelled."""
    if not any(metric in item.run.columns for metric in chunk_metrics()):
        return None
    return run_verdict_thresholds(item.folder) or None


def _summary_rows(summary: Mapping[str, Any], calibration: Mapping[str, Any] | None, source: str, run: ScoredRun,
                  columns: Sequence[str], settings: ReportSettings) -> list[dict[str, Any]]:
    """summary.json's rows, each with its interval: PPI where labelled, else the bootstrap (as `check` uses)."""
    rows = []
    for column in columns:
        entry = dict(summary["metrics"].get(column) or {"metric": column, "mean": None, "std": None, "n": 0,
                                                         "n_skipped": 0, "skipped": {}})
        interval = ppi_interval(summary, calibration, column, source, settings.confidence) or bootstrap_interval(
            run, column, settings.n_boot, settings.confidence, settings.seed)
        entry["column"] = column
        entry["ci"] = interval.as_dict() if interval else None
        entry["lower_is_better"] = column in settings.lower_is_better
        entry["relative"] = relative_scale(entry.get("metric", column))
        rows.append(entry)
    return rows


def relative_scale(metric: str) -> bool:
    """Whether the metric says its values only rank samples (`scale = "relative"`, e.g. grounding's
    likelihood): the page then does not colour them red to green as if 0.02 meant bad. A metric this
    version does not know (a plugin not installed here) is taken as an absolute score."""
    from ..errors import MetricNameError
    from ..metrics.registry import parse_name

    try:
        spec, _ = parse_name(metric)
    except MetricNameError:
        return False
    return spec.cls.scale == "relative"


def _labels_view(item: RunInput, summary: Mapping[str, Any], calibration: Mapping[str, Any] | None,
                 settings: ReportSettings) -> dict[str, Any] | None:
    """Judge vs humans: from --labels (computed now), else calibration.json, else summary.json's PPI block."""
    if item.labels is not None:
        from ..stats.calibration import calibration_report

        report = calibration_report(item.run, item.labels, settings.confidence)
        return {"source": f"labels {item.labels.source}", "metrics": report}
    if calibration and calibration.get("metrics"):  # without --labels, calibrate fits only verdict thresholds
        return {"source": f"{item.folder}/calibration.json (localeval calibrate)", "metrics": calibration.get("metrics", {})}
    ppi = summary.get("ppi")
    if isinstance(ppi, dict) and ppi.get("metrics"):
        return {"source": f"summary.json (localeval score --labels {ppi.get('labels')})",
                "metrics": {column: ({"ppi": block} if "ci" in block else {"error": block.get("error")})
                            for column, block in ppi["metrics"].items()}}
    return None
