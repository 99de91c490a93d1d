"""Does the judge's own likelihood see FaithBench's hallucinations? A token-level grounding signal, measured.

The judge's yes/no verdicts are at chance on FaithBench (bench/accuracy.py: balanced accuracy 0.46-0.52,
AUROC 0.45-0.50 for every faithfulness variant). This asks the model something else: how much each
summary token owes to the source, log p(token | source) against log p(token | no source), the
pointwise mutual information that conditional-likelihood detectors (CoP, HaRiM, BARTScore-style scores)
read. A summary token the source does not support should be less likely given the source. Each summary is
scored twice under the judge's chat template ("Summarize the following passage." with and without the
passage), every token's log-probability read from one forward pass by the in-process backend's
continuation decode (what `grounding` uses), and the aggregations below (fixed
before looking at the labels) are compared by AUROC, beside a lexical baseline (the share of the summary's
content words absent from the source).

    .venv/bin/python bench/faithbench_grounding.py                 # the 100-row slice bench/accuracy.py uses
    .venv/bin/python bench/faithbench_grounding.py --rows rest     # the other 150 rows

The signal became the `grounding` metric (localeval/metrics/grounding.py), measured on all dev sets by
bench/accuracy.py; this script stays as the record of how its aggregation was chosen.

Takes /tmp/localeval-model.lock like every model bench. Results: bench/results/faithbench-grounding-<date>-<rows>.json.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from accuracy import DATA, label_agreement, model_lock, read_jsonl  # noqa: E402

from localeval import models  # noqa: E402
from localeval.judge.backend import ContinuationCall  # noqa: E402
from localeval.judge.llama_inprocess import LlamaCppBackend  # noqa: E402
from localeval.settings import physical_cores  # noqa: E402

STOP = set("the a an of to in and or is was were be by for on at with as that this it its from are has have had "
           "he she they his her their which who".split())


def rows_of(which: str) -> list[dict[str, Any]]:
    rows = read_jsonl(DATA / "faithbench_dev.jsonl")
    first = random.Random(0).sample(rows, 100)  # bench/accuracy.py's faithbench slice (seed 0, limit 100)
    if which == "dev100":
        return first
    taken = {r["id"] for r in first}
    return [r for r in rows if r["id"] not in taken]


def aggregations(lc: np.ndarray, lu: np.ndarray) -> dict[str, float]:
    """Higher = more grounded, for every aggregation."""
    pmi = lc - lu
    k = max(1, len(lc) // 10)
    low = lc < math.log(0.1)
    return {"mean log p(t|source)": lc.mean(), "mean PMI": pmi.mean(), "min PMI": pmi.min(),
            "min log p(t|source)": lc.min(), "mean negative PMI": np.minimum(pmi, 0).mean(),
            "lowest 10% log p(t|source)": np.sort(lc)[:k].mean(), "lowest 10% PMI": np.sort(pmi)[:k].mean(),
            "share of tokens p<0.1 and PMI<0": -(low & (pmi < 0)).mean()}


def lexical(row: dict[str, Any]) -> float:
    words = lambda text: re.findall(r"[a-z0-9]+", text.lower())  # noqa: E731
    source = set(words(" ".join(row["contexts"])))
    content = [w for w in words(row["answer"]) if w not in STOP]
    return -sum(w not in source for w in content) / max(1, len(content))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", choices=("dev100", "rest"), default="dev100")
    parser.add_argument("--judge", default=None)
    args = parser.parse_args()
    rows = rows_of(args.rows)
    path = models.resolve(args.judge, "judge")
    with model_lock():
        backend = LlamaCppBackend(path, "", n_ctx=2048, n_threads=physical_cores())

        def logprobs(user: str, answer: str) -> np.ndarray:
            """The summary's token log-probabilities after a plain chat prompt, by the metric's own decode."""
            prompt = backend.render([{"role": "system", "content": "You are a helpful assistant."},
                                     {"role": "user", "content": user}])
            reply = backend._continuation(ContinuationCall(prompt, answer, "faithbench"))
            return np.array(reply.token_logprobs, dtype=np.float64)

        started = time.perf_counter()
        per_row = []
        for row in rows:
            source = "\n".join(row["contexts"])
            lc = logprobs(f"Summarize the following passage.\n\n{source}", row["answer"])
            lu = logprobs("Summarize the following passage.", row["answer"])
            per_row.append({"id": row["id"], "hallucinated": row["is_hallucinated_majority"],
                            **{k: float(v) for k, v in aggregations(lc, lu).items()}, "lexical novelty": lexical(row)})
        seconds = time.perf_counter() - started
    faithful = {r["id"]: 1 - r["hallucinated"] for r in per_row}  # label 1 = faithful, as bench/accuracy.py reads it
    table = {name: round(label_agreement({r["id"]: r[name] for r in per_row}, faithful)["auroc"], 3)
             for name in per_row[0] if name not in ("id", "hallucinated")}
    for name, value in table.items():
        print(f"{name:36s} AUROC {value:.3f}")
    print(f"{len(rows)} rows, {seconds / len(rows):.1f} s per row")
    out = REPO / "bench" / "results" / f"faithbench-grounding-{date.today()}-{args.rows}.json"
    out.write_text(json.dumps({"args": vars(args), "judge": path.name, "rows": len(rows), "hallucinated": len(faithful) - sum(faithful.values()),
                               "seconds_per_row": round(seconds / len(rows), 2), "auroc": table, "per_row": per_row},
                              indent=1) + "\n", encoding="utf-8")
    print(f"results in {out}")


if __name__ == "__main__":
    main()
