"""`localeval report`: one self-contained HTML file about one or more scored runs, for people to read.

collect.py gathers each run's summary, intervals, histograms and labels view; samples.py what is embedded
per sample (and which samples, for large runs); pairs.py the paired comparison of several runs; html.py
puts the page together from the files in assets/ (template, style, scripts) and plotly.js.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Mapping, Sequence

from .. import __version__
from ..atomic import write_text_atomic
from ..files import check_output_file, make_dirs
from ..gate import DEFAULT_BOOTSTRAP

#: Samples embedded per run by default; more are summarised in the charts but not listed.
DEFAULT_MAX_SAMPLES = 10_000


def build_report(run_dirs: Sequence[Path], out: Path, title: str | None = None,
                 labels: Mapping[str, Path] | None = None, label_columns: Mapping[str, str] | None = None,
                 max_samples: int = DEFAULT_MAX_SAMPLES, n_boot: int = DEFAULT_BOOTSTRAP, confidence: float = 0.95, seed: int = 0,
                 lower_is_better: Sequence[str] = ()) -> dict[str, object]:
    """Write the report of `run_dirs` to `out`; `labels` maps a run (as given) to a human labels file.
    Returns what was written: the path, its size and what each run embedded."""
    from ..data.labels import load_labels
    from ..errors import OptionError
    from ..results.runs import load_run
    from .collect import RunInput, ReportSettings, run_payload, value_ranges
    from .html import render
    from .pairs import comparison_payload, listed_ids

    if max_samples < 1:
        raise OptionError(f"--max-samples {max_samples}: embed at least 1 sample")
    check_output_file(out)
    names = [str(p) for p in run_dirs]
    if len(set(names)) != len(names):
        raise OptionError("each run may be given once")
    runs = [load_run(path, name=name) for path, name in zip(run_dirs, names)]
    by_name = {run.name: run for run in runs}
    read_labels = {name: load_labels(Path(path), by_name[name], label_columns) for name, path in (labels or {}).items()}
    from ..metrics.registry import lower_is_better as declared

    settings = ReportSettings(max_samples, n_boot, confidence, seed, (*lower_is_better, *declared()))
    comparison = (comparison_payload(runs, n_boot, confidence, seed, read_labels, lower_is_better)
                  if len(runs) > 1 else None)
    first = listed_ids(comparison) if comparison else []
    ranges = value_ranges(runs)
    payload = {
        "title": title or ("localeval report: " + ", ".join(Path(n).name or n for n in names)),
        "generated": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "localeval": __version__,
        "confidence": confidence,
        "runs": [run_payload(RunInput(Path(path), run, read_labels.get(run.name)), settings, ranges, first)
                 for path, run in zip(run_dirs, runs)],
        "comparison": comparison,
    }
    page = render(payload, str(payload["title"]))
    make_dirs(out.parent)
    write_text_atomic(out, page)
    return {"path": str(out), "bytes": len(page.encode("utf-8")),
            "runs": [{"name": r["name"], **r["embedded"], "n_samples": r["n_samples"]} for r in payload["runs"]],
            "comparison_error": (comparison or {}).get("error")}


__all__ = ["DEFAULT_MAX_SAMPLES", "build_report"]
