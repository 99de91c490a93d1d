"""Does a verdict threshold fitted by `localeval calibrate` on one half of a test set carry to the other half?

context_precision counts a chunk as useful at P(useful) ≥ the verdict threshold. In Chinese the judge
says yes to almost every chunk on the question's topic, so 0.5 is far from right (docs/pages/benchmarks/accuracy.md). This runs the path a user takes, through the CLI: score half A, let `localeval
calibrate` fit --verdict-threshold on the relevance A's reference_doc_ids give its chunks, score half B
with that threshold, and compare B's chunk verdicts with B's labels, at 0.5 and at the fitted
threshold. Both ways (A→B, B→A) are reported.

The rows are bench/devsets.py's passage sets (uhgeval-passages, halueval-passages): a question and
its reference answer with one chunk, its own article (relevant) or the article sharing most words with
it (not relevant; the own article is then a relevant document that was not retrieved). The judge cache
is accuracy.py's, so a run after `bench/accuracy.py --sets uhgeval-passages,halueval-passages --limit 60`
makes no judge call. Holds the model lock throughout. Results: bench/results/verdict-threshold-<date>.json.

    .venv/bin/python bench/verdict_threshold.py [--sets uhgeval-passages,halueval-passages] [--limit 60]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import harness
from devsets import SETS

from localeval.stats.agreement import agreement

def test_set(name: str, limit: int, seed: int) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The dev set's rows as a localeval test set whose reference_doc_ids carry the labels."""
    dev = SETS[name](limit, seed)
    rows = []
    for sample in dev.samples:
        (chunk,) = sample["contexts"]
        relevant = [chunk["id"]] if dev.labels[sample["id"]] else [f"own-of-{sample['id']}"]
        rows.append({**sample, "reference_doc_ids": relevant})
    return rows, dev.labels


def localeval(*args: str) -> str:
    done = subprocess.run([harness.CLI, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"localeval {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def score(rows: list[dict[str, Any]], folder: Path, cache: str, threshold: str | None = None) -> list[dict[str, Any]]:
    data = folder.with_suffix(".jsonl")
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    extra = ["--verdict-threshold", threshold] if threshold else []
    localeval("score", str(data), "-m", "context_precision", "--cache", cache, "-o", str(folder), "-q", *extra)
    return harness.read_jsonl(folder / "samples.jsonl")


def chunk_agreement(scored: list[dict[str, Any]], labels: dict[str, int]) -> dict[str, Any]:
    """Balanced accuracy of the chunks' useful verdicts (as the run counted them) against the labels."""
    y = [labels[r["id"]] for r in scored]
    verdicts = [float(r["details"]["context_precision"]["useful"][0]["relevant"]) for r in scored]
    a = agreement(y, verdicts, 0.5)
    return {"balanced_accuracy": a.balanced_accuracy, "judge_positive_rate": a.judge_positive_rate, "n": a.n}


def one_way(fit: list[dict[str, Any]], apply: list[dict[str, Any]], labels: dict[str, int], tmp: Path, cache: str,
            tag: str) -> dict[str, Any]:
    score(fit, tmp / f"{tag}-fit", cache)
    localeval("calibrate", str(tmp / f"{tag}-fit"), "-q")
    fitted = json.loads((tmp / f"{tag}-fit" / "calibration.json").read_text())["verdict_thresholds"]["context_precision"]
    flag = fitted["verdict_threshold"]
    return {"fitted_on": len(fit), "verdict_threshold": flag,
            "fit_balanced_accuracy": fitted["agreement"]["at_chosen"]["balanced_accuracy"],
            "applied_to": len(apply),
            "at_0.5": chunk_agreement(score(apply, tmp / f"{tag}-at-half", cache), labels),
            "at_fitted": chunk_agreement(score(apply, tmp / f"{tag}-at-fitted", cache, flag), labels)}


def main() -> None:
    parser = harness.parser(__doc__, "limit", "seed", "cache", limit=60, cache=str(harness.CACHE / "accuracy.sqlite"))
    parser.add_argument("--sets", default="uhgeval-passages,halueval-passages", help="passage sets of bench/devsets.py")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with harness.model_lock(), tempfile.TemporaryDirectory() as tmp:
        for name in args.sets.split(","):
            rows, labels = test_set(name, args.limit, args.seed)
            half = len(rows) // 2
            a, b = rows[:half], rows[half:]
            ways = {"A->B": one_way(a, b, labels, Path(tmp), args.cache, f"{name}-ab"),
                    "B->A": one_way(b, a, labels, Path(tmp), args.cache, f"{name}-ba")}
            results[name] = ways
            for way, r in ways.items():
                print(f"{name:18s} {way}  fit on {r['fitted_on']}: {r['verdict_threshold']:34s} "
                      f"applied to {r['applied_to']}: balanced accuracy {r['at_0.5']['balanced_accuracy']:.3f} at 0.5 "
                      f"-> {r['at_fitted']['balanced_accuracy']:.3f}; yes rate "
                      f"{r['at_0.5']['judge_positive_rate']:.2f} -> {r['at_fitted']['judge_positive_rate']:.2f}")
    harness.write_json(harness.results_path("verdict-threshold"), {"command": " ".join(sys.argv), "sets": results})


if __name__ == "__main__":
    main()
