"""Does more of the judge's distribution make `grounding` see more? Entropy, rank and word-level readings, measured.

`grounding` reads only each answer token's log-probability (the lowest tenth, averaged). A low probability
can mean an unsupported detail, or only a position where many words fit (a paraphrase, a choice of phrasing).
Readings that know the whole distribution at each position separate the two in principle:

- log p − top log p: how far below the judge's own first choice the token is;
- log p + entropy: surprisal beyond what the position's spread leads one to expect;
- −log(1 + rank), and the share of tokens outside the top 5: order, not probability;
- word log-probability (a word's tokens summed): one surprise per word, not per sub-word piece;
- content words only (English stopwords left out): the facts, not the glue.

Each is computed on the product's own grounding prompt through the in-process backend's continuation
decode (`LlamaCppBackend._continuation` with a wider `read_row`), on the dev sets bench/accuracy.py uses for
grounding (HaluEval and UHGEval pairs, all 250 FaithBench rows), with pair accuracy, AUROC (95% bootstrap
interval on FaithBench), the cross-fitted balanced accuracy, and AUROC on bench/accuracy.py's first
100-row FaithBench slice and on the other 150, to see how stable each figure is. The readings were fixed
before their figures were seen, except content words: a first list that also left out summary boilerplate
("here's", "summary", "passage") reached FaithBench AUROC 0.669, was judged fitted to FaithBench's
summaries and cut back to plain stopwords. A reading is worth adopting only if it is better on every set.

    .venv/bin/python bench/grounding_aggregations.py                      # ~12 min on 2 cores

Takes /tmp/localeval-model.lock like every model bench. Results: bench/results/grounding-aggregations-<date>.json.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import unicodedata
from datetime import date
from pathlib import Path
from typing import Any, Callable

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from accuracy import (DevSet, crossfit, faithbench, halueval, label_agreement, model_lock,  # noqa: E402
                      pair_agreement, uhgeval)
from faithbench_grounding import STOP  # noqa: E402  (the plain English stopwords its lexical baseline uses)

from localeval import models  # noqa: E402
from localeval.judge.backend import ContinuationCall, finite_logits, logsumexp  # noqa: E402
from localeval.judge.kit import JudgeKit  # noqa: E402
from localeval.judge.llama_inprocess import LlamaCppBackend  # noqa: E402
from localeval.judge.options import JudgeOptions  # noqa: E402
from localeval.metrics.grounding import headline_count  # noqa: E402
from localeval.settings import physical_cores  # noqa: E402


def row_signals(logits: Any, token: int, name: str) -> tuple[float, float, int, float]:
    """(log p of the token, entropy of the row, how many tokens the judge put above it, the top log p)."""
    values = finite_logits(logits, name).astype(np.float64)
    logp = values - logsumexp(values)
    return (float(logp[token]), float(-(np.exp(logp) * logp).sum()), int((logp > logp[token]).sum()),
            float(logp.max()))


def words(pieces: list[str]) -> list[list[int]]:
    """Token indices grouped into words: a word starts at a space, a punctuation mark or a CJK character."""
    groups: list[list[int]] = []
    for i, piece in enumerate(pieces):
        head = piece[:1]
        starts = not groups or not head.isalnum() or unicodedata.east_asian_width(head) == "W"
        if starts:
            groups.append([i])
        else:
            groups[-1].append(i)
    return groups


def lowest(values: np.ndarray) -> float:
    """The mean of the least expected values, as many as grounding's headline averages."""
    return float(np.sort(values)[: headline_count(len(values))].mean())


def content_only(table: np.ndarray, pieces: list[str]) -> np.ndarray:
    keep = [i for group in words(pieces)
            if "".join(pieces[j] for j in group).strip().lower().strip(".,:;\"'()") not in STOP for i in group]
    return table[keep] if keep else table


#: name -> reading, higher = more grounded; `t` has columns (log p, entropy, rank, top log p).
READINGS: dict[str, Callable[[np.ndarray, list[str]], float]] = {
    "lowest tenth of log p (grounding)": lambda t, p: lowest(t[:, 0]),
    "lowest tenth of log p - top log p": lambda t, p: lowest(t[:, 0] - t[:, 3]),
    "lowest tenth of log p + entropy": lambda t, p: lowest(t[:, 0] + t[:, 1]),
    "lowest tenth of -log(1 + rank)": lambda t, p: lowest(-np.log1p(t[:, 2])),
    "share of tokens in the top 5": lambda t, p: float((t[:, 2] < 5).mean()),
    "lowest tenth of word log p": lambda t, p: lowest(np.array([t[g, 0].sum() for g in words(p)])),
    "lowest tenth of log p, content words": lambda t, p: lowest(content_only(t, p)[:, 0]),
    "mean log p (grounding.mean)": lambda t, p: float(t[:, 0].mean()),
}


def collect(backend: LlamaCppBackend, kit: JudgeKit, dev: DevSet) -> dict[str, tuple[np.ndarray, list[str]]]:
    out = {}
    for sample in dev.samples:
        prompt = kit.prompt("grounding", dev.lang, question=sample["question"], context="\n\n".join(sample["contexts"]))
        call = ContinuationCall(backend.render(prompt.messages), sample["answer"].strip(), "grounding")
        reply = backend._continuation(call, read_row=row_signals)
        pieces = backend.token_texts(call.continuation)  # what the metric's details use, one per log-probability
        assert len(pieces) == len(reply.token_logprobs), sample["id"]
        out[sample["id"]] = (np.array(reply.token_logprobs, dtype=np.float64), pieces)
    return out


def bootstrap_auroc(scores: dict[str, float], labels: dict[str, int], rounds: int = 1000) -> list[float]:
    rng, ids, values = random.Random(1), sorted(labels), []
    for _ in range(rounds):
        drawn = [rng.choice(ids) for _ in ids]
        values.append(label_agreement({f"{i}#{k}": scores[i] for k, i in enumerate(drawn)},
                                      {f"{i}#{k}": labels[i] for k, i in enumerate(drawn)})["auroc"])
    values.sort()
    return [round(values[int(rounds * 0.025)], 3), round(values[int(rounds * 0.975)], 3)]


def measure(dev: DevSet, signals: dict[str, tuple[np.ndarray, list[str]]]) -> dict[str, dict[str, Any]]:
    table = {}
    for name, read in READINGS.items():
        scores = {i: read(t, p) for i, (t, p) in signals.items()}
        if dev.pairs:
            table[name] = {"pair_accuracy": round(pair_agreement(scores, dev.pairs)["pair_accuracy"], 3)}
            continue
        first = {s["id"] for s in faithbench(100, 0).samples}
        part = lambda keep: {i: v for i, v in dev.labels.items() if keep(i)}  # noqa: E731
        table[name] = {"auroc": round(label_agreement(scores, dev.labels)["auroc"], 3),
                       "auroc_95": bootstrap_auroc(scores, dev.labels),
                       "balanced_accuracy_crossfit": round(crossfit(scores, dev.labels, sorted(dev.labels)), 3),
                       "auroc_first_100": round(label_agreement(scores, part(lambda i: i in first))["auroc"], 3),
                       "auroc_other_150": round(label_agreement(scores, part(lambda i: i not in first))["auroc"], 3)}
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judge", default=None)
    parser.add_argument("--pairs", type=int, default=40, help="HaluEval and UHGEval pairs (bench/accuracy.py's --limit)")
    args = parser.parse_args()
    path = models.resolve(args.judge, "judge")
    sets = [halueval(args.pairs, 0), uhgeval(args.pairs, 0), faithbench(250, 0)]
    results: dict[str, Any] = {"args": vars(args), "judge": path.name, "sets": {}}
    with model_lock():
        backend = LlamaCppBackend(path, "",
                                  n_ctx=4096, n_threads=physical_cores())
        kit = JudgeKit(JudgeOptions())
        for dev in sets:
            started = time.perf_counter()
            signals = collect(backend, kit, dev)
            seconds = (time.perf_counter() - started) / len(dev.samples)
            results["sets"][dev.name] = {"samples": len(dev.samples), "seconds_per_sample": round(seconds, 2),
                                         "readings": measure(dev, signals)}
            print(f"{dev.name}: {len(dev.samples)} samples, {seconds:.2f} s each")
    for name in READINGS:
        print(f"{name:40s}", "  ".join(f"{s}: {v['readings'][name]}" for s, v in results["sets"].items()))
    out = REPO / "bench" / "results" / f"grounding-aggregations-{date.today()}.json"
    out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"results in {out}")


if __name__ == "__main__":
    main()
