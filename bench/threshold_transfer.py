"""Would a built-in Chinese verdict threshold do what calibrating on one's own labels does? Measured.

The judge's chunk verdicts in Chinese are lenient: at P >= 0.5 it says yes to 84-90% of the near-topic
passages, so the 0/1 verdicts are right in only 0.55-0.58 (balanced) while P ranks well (AUROC 0.86-0.94).
A threshold fitted on labels fixes that (bench/verdict_threshold.py). If one fitted threshold also held on
other sets, localeval could ship it as the Chinese default and spare users the labels. This script fits
the best threshold on each committed column (bench/verdict_prior.py's list: per-chunk P from
bench/accuracy.py, labels rebuilt from the same seeded slices) and applies it to every other column of the
same language, printing the balanced accuracy, recall and specificity there beside the figure at 0.5.
The same question is then asked of `grounding`, a likelihood with no natural threshold: its three columns'
best thresholds on the HaluEval and UHGEval pairs (the right answer labelled 1, the hallucinated one 0)
applied to all 250 FaithBench summaries. No judge call.

    .venv/bin/python bench/threshold_transfer.py

Results: bench/results/threshold-transfer-<date>.json.
"""

from __future__ import annotations

import json
import sys
from datetime import date
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from accuracy import SETS, balanced_accuracy, best_threshold  # noqa: E402
from verdict_prior import COLUMNS  # noqa: E402


def column(file: str, set_name: str, name: str, prompt: str) -> dict[str, Any]:
    saved = json.loads((REPO / "bench" / "results" / file).read_text(encoding="utf-8"))
    found = next(r for r in saved["rows"] if r["set"] == set_name and r["column"] == name and r["variant"] == "default")
    dev = SETS[set_name](saved["args"]["limit"], saved["args"]["seed"])
    ids = sorted(i for i in dev.labels if i in found["scores"])
    return {"name": f"{set_name} {name}", "prompt": prompt, "lang": dev.lang, "scores": found["scores"],
            "labels": dev.labels, "ids": ids, "best": best_threshold(found["scores"], dev.labels, ids)}


def at(target: dict[str, Any], threshold: float) -> dict[str, float]:
    scores, labels, ids = target["scores"], target["labels"], target["ids"]
    pos = [scores[i] >= threshold for i in ids if labels[i] == 1]
    neg = [scores[i] < threshold for i in ids if labels[i] == 0]
    return {"balanced_accuracy": round(balanced_accuracy(scores, labels, ids, threshold), 3),
            "recall": round(sum(pos) / len(pos), 3), "specificity": round(sum(neg) / len(neg), 3)}


def grounding_rows() -> list[dict[str, Any]]:
    """Each grounding column's best threshold on a pair set, applied to the same column on FaithBench."""
    results = REPO / "bench" / "results"
    pairs = json.loads((results / "accuracy-2026-11-24-default-grounding-pairs.json").read_text(encoding="utf-8"))
    faith = json.loads((results / "accuracy-2026-11-24-default-grounding-faithbench-250.json").read_text(encoding="utf-8"))
    bench = SETS["faithbench"](faith["args"]["limit"], faith["args"]["seed"])
    rows = []
    for found in pairs["rows"]:
        dev = SETS[found["set"]](pairs["args"]["limit"], pairs["args"]["seed"])
        labels = {i: label for good, bad in dev.pairs for i, label in ((good, 1), (bad, 0))}
        ids = sorted(i for i in labels if i in found["scores"])
        threshold = best_threshold(found["scores"], labels, ids)
        on = next(r for r in faith["rows"] if r["column"] == found["column"])
        target = {"scores": on["scores"], "labels": bench.labels, "ids": sorted(i for i in bench.labels if i in on["scores"])}
        rows.append({"fitted_on": f"{found['set']} {found['column']}", "applied_to": f"faithbench {on['column']}",
                     "threshold": threshold, "fitted_elsewhere": at(target, threshold),
                     "fitted_on_itself": at(target, best_threshold(target["scores"], target["labels"], target["ids"]))})
    return rows


def describe(row: dict[str, Any]) -> str:
    """One printed line: where the threshold was fitted and applied, and the balanced accuracy it gives."""
    elsewhere, prompt = row["fitted_elsewhere"], row.get("same_prompt")
    before = f"bacc {row['at_0.5']['balanced_accuracy']:.3f} at 0.5 -> " if "at_0.5" in row else "bacc "
    return (f"{row['fitted_on']:44s} -> {row['applied_to']:44s} "
            f"{'' if prompt is None else ('same prompt' if prompt else 'other prompt'):12s} t {row['threshold']:.4g}: "
            f"{before}{elsewhere['balanced_accuracy']:.3f} (recall {elsewhere['recall']:.2f}, specificity "
            f"{elsewhere['specificity']:.2f}); fitted on itself {row['fitted_on_itself']['balanced_accuracy']:.3f}")


def main() -> None:
    columns = [column(file, set_name, name, prompt) for file, set_name, name, prompt in COLUMNS
               if prompt != "verify_statement"]  # FaithBench's .min is no chunk verdict
    rows = []
    for source in columns:
        for target in columns:
            if target is source or target["lang"] != source["lang"]:
                continue
            rows.append({"fitted_on": source["name"], "applied_to": target["name"],
                         "same_prompt": source["prompt"] == target["prompt"], "threshold": round(source["best"], 3),
                         "at_0.5": at(target, 0.5), "fitted_elsewhere": at(target, source["best"]),
                         "fitted_on_itself": at(target, target["best"])})
    grounding = grounding_rows()
    for row in rows + grounding:
        print(describe(row))
    out = REPO / "bench" / "results" / f"threshold-transfer-{date.today()}.json"
    out.write_text(json.dumps({"rows": rows, "grounding": grounding}, indent=1) + "\n", encoding="utf-8")
    print(f"results in {out}")


if __name__ == "__main__":
    main()
