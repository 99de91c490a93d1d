"""How much of FaithBench's 0.60 goal do the signals we have reach, read without the luck of one split?

bench/accuracy.py reports balanced accuracy at a cross-fitted threshold on one split of the rows (alternate
ids). With 250 rows, which split is drawn moves that figure by a few hundredths, so this script reads the
committed per-row scores again (no judge call) and gives, for each column:

- AUROC with a 95% bootstrap interval (bench/grounding_aggregations.py's, 1,000 resamples of the rows);
- balanced accuracy at a cross-fitted threshold averaged over 200 random halvings (with its 5-95% range),
  beside the one-split figure the accuracy table prints;
- rank averages of `grounding` with each other signal (the faithfulness verdicts, the lexical novelty of
  bench/faithbench_grounding.py, grounding against selected evidence from bench/grounding_evidence.py), to
  see whether two readings of the same judge add up.

`--embedders` adds a signal from the embedding models instead of the judge: for each summary sentence the
cosine to its closest source sentence, the summary's smallest and mean (the embedding form of the
sentence-alignment that SummaC does with NLI; no NLI model ships on PyPI).

    .venv/bin/python bench/faithbench_signals.py                # committed scores only, under a minute
    .venv/bin/python bench/faithbench_signals.py --embedders    # also MiniLM and USE, about a minute on 2 cores

Results: bench/results/faithbench-signals-<date>.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from itertools import zip_longest
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import rankdata

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from accuracy import DATA, crossfit, label_agreement, model_lock, read_jsonl  # noqa: E402
from grounding_aggregations import bootstrap_auroc  # noqa: E402

RESULTS = REPO / "bench" / "results"
VERDICTS = RESULTS / "accuracy-2026-11-24-default-faithbench-250.json"
GROUNDING = RESULTS / "accuracy-2026-11-24-default-grounding-faithbench-250.json"
TOKEN_READINGS = [RESULTS / f"faithbench-grounding-2026-11-25-{rows}.json" for rows in ("dev100", "rest")]
SELECTED_EVIDENCE = RESULTS / "grounding-evidence-2026-11-25.json"  # bench/grounding_evidence.py


def committed_scores() -> dict[str, dict[str, float]]:
    """Column → id → score, higher = more faithful, from the committed result files."""
    columns: dict[str, dict[str, float]] = {}
    for path in (GROUNDING, VERDICTS):
        for row in json.loads(path.read_text(encoding="utf-8"))["rows"]:
            columns[row["column"]] = row["scores"]
    novelty: dict[str, float] = {}
    for path in TOKEN_READINGS:
        novelty.update({r["id"]: r["lexical novelty"] for r in json.loads(path.read_text(encoding="utf-8"))["per_row"]})
    columns["lexical novelty (share of content words not in the source, negated)"] = novelty
    columns["grounding, each sentence against its selected evidence"] = json.loads(
        SELECTED_EVIDENCE.read_text(encoding="utf-8"))["sets"]["faithbench"]["scores"]
    return columns


def embedding_scores(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    from localeval.embed import load_embedder
    from localeval.text import split_sentences

    columns: dict[str, dict[str, float]] = {}
    with model_lock():
        for name in ("all-minilm-l6-v2", "use-multilingual-v3"):
            embedder = load_embedder(name)
            closest_min, closest_mean = {}, {}
            for row in rows:
                source = [s for text in row["contexts"] for s in split_sentences(text)]
                summary = split_sentences(row["answer"]) or [row["answer"]]
                a, b = embedder.encode(summary), embedder.encode(source)
                a = a / np.linalg.norm(a, axis=1, keepdims=True)
                b = b / np.linalg.norm(b, axis=1, keepdims=True)
                closest = (a @ b.T).max(axis=1)
                closest_min[row["id"]], closest_mean[row["id"]] = float(closest.min()), float(closest.mean())
            columns[f"{name}: closest source sentence, smallest over the summary"] = closest_min
            columns[f"{name}: closest source sentence, mean over the summary"] = closest_mean
    return columns


def crossfit_spread(scores: dict[str, float], labels: dict[str, int], splits: int) -> dict[str, float]:
    """The accuracy table's cross-fit (best threshold on one half, applied to the other, both ways), over random
    halvings: `crossfit` halves by alternate ids, so each permutation's two halves go in interleaved."""
    ids = sorted(labels)
    results = []
    for seed in range(splits):
        order = [ids[i] for i in np.random.default_rng(seed).permutation(len(ids))]
        first, second = order[: len(ids) // 2], order[len(ids) // 2:]
        interleaved = [i for pair in zip_longest(first, second) for i in pair if i is not None]
        results.append(crossfit(scores, labels, interleaved))
    return {"mean": float(np.mean(results)), "p5": float(np.percentile(results, 5)), "p95": float(np.percentile(results, 95))}


def rank_average(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    ids = sorted(a)
    ranks = rankdata([a[i] for i in ids]) + rankdata([b[i] for i in ids])
    return dict(zip(ids, map(float, ranks)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedders", action="store_true", help="also score the summaries with the embedding models")
    parser.add_argument("--splits", type=int, default=200)
    args = parser.parse_args()
    rows = read_jsonl(DATA / "faithbench_dev.jsonl")
    labels = {r["id"]: 1 - int(r["is_hallucinated_majority"]) for r in rows}  # 1 = faithful, as bench/accuracy.py
    columns = committed_scores()
    if args.embedders:
        columns.update(embedding_scores(rows))
    grounding = columns["grounding"]
    for name in [c for c in columns if c != "grounding" and not c.startswith("grounding.")]:
        columns[f"rank average: grounding + {name}"] = rank_average(grounding, columns[name])
    table = []
    for name, scores in columns.items():
        missing = set(labels) - set(scores)
        if missing:
            raise SystemExit(f"{name}: no score for {len(missing)} of the {len(labels)} rows")
        agreement = label_agreement(scores, labels)
        low, high = bootstrap_auroc(scores, labels)
        spread = crossfit_spread(scores, labels, args.splits)
        table.append({"column": name, "auroc": agreement["auroc"], "auroc_95": [low, high],
                      "bacc_crossfit_one_split": agreement["balanced_accuracy_crossfit"],
                      "bacc_crossfit_random_splits": spread})
        print(f"{name[:78]:78s} AUROC {agreement['auroc']:.3f} [{low:.3f}, {high:.3f}]  x-fit one split "
              f"{agreement['balanced_accuracy_crossfit']:.3f}, {args.splits} splits {spread['mean']:.3f} "
              f"({spread['p5']:.3f}-{spread['p95']:.3f})")
    out = RESULTS / f"faithbench-signals-{date.today()}.json"
    out.write_text(json.dumps({"args": vars(args), "rows": len(labels), "faithful": sum(labels.values()),
                               "table": table}, indent=1) + "\n", encoding="utf-8")
    print(f"results in {out}")


if __name__ == "__main__":
    main()
