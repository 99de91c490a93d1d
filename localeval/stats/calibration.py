"""Judge-vs-human calibration of a scored run: agreement, the best threshold, and PPI estimates.

Pairs each labelled sample's human label with the judge's score for the same metric column, then calls
agreement.py and ppi.py. `ppi_summary` is the block `localeval score --labels` adds to summary.json;
`calibration_report` is what `localeval calibrate` prints and writes, with `verdict_threshold_report`
beside it: the threshold of the per-chunk verdicts, fitted on the relevance the run's reference_doc_ids
give its chunks; `score` prints its agreement at the run's own threshold under the table, and the report
shows all of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:  # numpy is imported inside the functions so that `localeval --help` stays instant
    import numpy as np

    from ..data.labels import Labels
    from ..results.runs import ScoredRun
    from ..results.verdicts import ChunkVerdicts

PPI_METHOD = "PPI++ mean (Angelopoulos, Duchi, Zrnic 2023), power-tuned lambda in [0, 1], CLT interval"


def calibration_report(run: ScoredRun, labels: Labels, confidence: float = 0.95, lam_mode: str = "min_variance") -> dict[str, Any]:
    """Per labelled column: agreement at 0.5, the chosen threshold, and the PPI block (see `_ppi_block`)."""
    import numpy as np

    from .agreement import choose_threshold

    out: dict[str, Any] = {}
    for column, by_id in labels.by_column.items():
        if column not in run.columns:  # every sample was skipped for this metric
            out[column] = {"n_labels": len(by_id), "n_labels_unscored": len(by_id),
                           "error": f"no sample has a value in '{column}' (the metric skipped every sample)"}
            continue
        pairs = _labelled_pairs(run, column, by_id)
        entry: dict[str, Any] = {"n_labels": len(by_id), "n_labels_unscored": len(by_id) - len(pairs[0])}
        problem = _unusable(run, column, pairs[0])
        if problem:
            entry["error"] = problem
            out[column] = entry
            continue
        y, f = np.array(pairs[1], dtype=float), np.array(pairs[2], dtype=float)
        if len(set(y.tolist())) < 2:  # balanced accuracy is one class's recall there: any threshold "fits"
            entry["error"] = (f"all {len(y)} labels are {int(y[0])}: agreement and a threshold need labels of both "
                              "kinds (the PPI estimate needs only some)")
        else:
            choice = choose_threshold(y, f)
            values = run.columns[column]
            scored = values[~np.isnan(values)]
            entry["agreement"] = choice.as_dict()
            entry["run_positive_rate"] = {"at_0.5": float(np.mean(scored >= 0.5)),
                                          "at_chosen": float(np.mean(scored >= choice.threshold))}
        entry["ppi"] = _ppi_block(run, column, by_id, y, f, confidence, lam_mode)
        out[column] = entry
    return out


def verdict_threshold_report(chunks: Mapping[str, ChunkVerdicts],
                             scored_at: Mapping[str, float] | None = None) -> dict[str, Any]:
    """Per chunk-judging metric: agreement of its chunk verdicts with the relevance reference_doc_ids give,
    at 0.5 and at the threshold that maximises balanced accuracy, and the --verdict-threshold value that
    sets it (a re-score with it reads the cached probabilities; the judge is not run again). Where the run
    was scored at another threshold (`scored_at`, from its settings), the agreement there too (`at_run`):
    what the run's own figures rest on."""
    from .agreement import DEFAULT_THRESHOLD, agreement, choose_threshold

    out: dict[str, Any] = {}
    for metric, found in chunks.items():
        entry: dict[str, Any] = {"n_chunks": len(found.p), "n_relevant": sum(found.relevant), "n_samples": found.samples}
        kinds = set(found.relevant)
        if len(kinds) < 2:
            entry["error"] = (f"all {len(found.p)} chunks with an id are {'relevant' if 1 in kinds else 'not relevant'} "
                              "by reference_doc_ids; a threshold needs chunks of both kinds")
        else:
            choice = choose_threshold(found.relevant, found.p)
            entry["agreement"] = choice.as_dict()
            entry["verdict_threshold"] = f"{metric}={round(choice.threshold, 7)}"
            used = (scored_at or {}).get(metric)
            if used is not None and used != DEFAULT_THRESHOLD:
                entry["at_run"] = agreement(found.relevant, found.p, used).as_dict()
        out[metric] = entry
    return out


def run_verdict_thresholds(run: Path) -> dict[str, Any]:
    """`verdict_threshold_report` of a scored run as it is now: its chunk verdicts read from samples.jsonl,
    at the thresholds its summary.json says it was scored at. {} when no chunk is labelled. What calibrate
    writes, the report shows and score prints a line of."""
    from ..results.runs import verdict_thresholds_used
    from ..results.verdicts import chunk_verdicts

    chunks = chunk_verdicts(run)
    return verdict_threshold_report(chunks, verdict_thresholds_used(run)) if chunks else {}


def ppi_summary(samples_path: Path, labels: Labels, confidence: float = 0.95,
                lam_mode: str = "min_variance") -> dict[str, Any]:
    """The block `score --labels` adds to summary.json: per labelled column, the PPI estimate, its interval,
    the labels-only interval and the naive judge mean. `labels` were read (and checked against the input)
    before scoring; `samples_path` holds the rows just scored."""
    from ..results.runs import load_run

    run = load_run(Path(samples_path))
    report = calibration_report(run, labels, confidence, lam_mode)
    return {
        "labels": labels.source,
        "method": PPI_METHOD,
        "confidence": confidence,
        "metrics": {column: entry.get("ppi") or {"error": entry.get("error")} for column, entry in report.items()},
    }


def _labelled_pairs(run: ScoredRun, column: str, by_id: Mapping[str, int]) -> tuple[list[str], list[int], list[float]]:
    """Labelled ids the judge scored, with label and score (a judge skip drops the pair, counted above)."""
    import numpy as np

    values = run.columns[column]
    ids, y, f = [], [], []
    for sample_id, label in by_id.items():
        value = values[run.index[sample_id]]
        if not np.isnan(value):
            ids.append(sample_id)
            y.append(label)
            f.append(float(value))
    return ids, y, f


def _unusable(run: ScoredRun, column: str, labelled_ids: list[str]) -> str | None:
    import numpy as np

    values = run.columns[column]
    scored = values[~np.isnan(values)]
    if scored.size and (scored.min() < 0.0 or scored.max() > 1.0):
        return f"values of '{column}' lie outside [0, 1]; calibration needs a probability or a 0/1 verdict"
    if len(labelled_ids) < 2:
        return f"{len(labelled_ids)} labelled sample(s) with a judge score; need at least 2"
    return None


def _ppi_block(run: ScoredRun, column: str, by_id: Mapping[str, int], y: np.ndarray, f: np.ndarray, confidence: float,
               lam_mode: str) -> dict[str, Any]:
    """PPI on the run's unlabelled scored samples; labelled rows are the rectifier set (disjoint, as PPI assumes)."""
    import numpy as np

    from .ppi import ppi_mean_ci

    values = run.columns[column]
    unlabeled_mask = ~np.isnan(values)
    unlabeled_mask[[run.index[i] for i in by_id]] = False
    unlabeled = values[unlabeled_mask]
    if unlabeled.size == 0:
        return {"error": "every scored sample is labelled; PPI needs unlabelled samples (use the labels' mean)",
                "labels_mean": float(y.mean())}
    result = ppi_mean_ci(y, f, unlabeled, confidence, lam_mode=lam_mode)  # type: ignore[arg-type]
    block = result.as_dict()
    block["naive_judge_mean_all"] = float(values[~np.isnan(values)].mean())
    block["lambda_mode"] = lam_mode
    return block
