"""How well the judge metrics agree with human labels (a dev script; figures go into the issue notes).

- ARES gold labels (`ares_gold_dev.jsonl`, 0/1 per row for context_relevance, answer_faithfulness and
  answer_relevance): balanced accuracy of faithfulness, answer_relevance (+ its 1–5 rating variant) and
  context_relevance against them, at the 0.5 threshold and at the best threshold on the slice (optimistic).
- HaluEval-QA (`halueval_qa_dev.jsonl`, pairs of a right and a hallucinated answer to one question):
  the share of pairs in which the right answer gets the higher faithfulness (ties count one half).

Rows are a seeded random slice; the judge cache (`--cache`) makes an interrupted run resume. Scored runs
are written under --out so `localeval calibrate` and bench/ppi_dev.py can reuse them.

    .venv/bin/python bench/agreement_dev.py --ares 60 --halueval 60
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from localeval.stats.agreement import agreement, choose_threshold  # noqa: E402
from localeval.pipeline import score_file  # noqa: E402
from localeval.metrics import JudgeOptions, MetricOptions  # noqa: E402

DATA = REPO.parent / "shared" / "data"
ARES_LABELS = {"faithfulness": "answer_faithfulness", "answer_relevance": "answer_relevance",
               "answer_relevance_rating": "answer_relevance", "context_relevance": "context_relevance"}


def slice_rows(path: Path, n: int, seed: int, key: str = "id") -> list[dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(str(row[key]), []).append(row)
    chosen = random.Random(seed).sample(sorted(groups), min(n, len(groups)))
    return [row for group in chosen for row in groups[group]]


def score(rows: list[dict], out: Path, metrics: list[str], options: MetricOptions) -> tuple[list[dict], float]:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "slice.jsonl"
        data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        started = time.perf_counter()
        score_file(data, out, metrics, options, progress=True)
        seconds = time.perf_counter() - started
    scored = [json.loads(line) for line in (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    return scored, seconds


def ares(args: argparse.Namespace, options: MetricOptions) -> None:
    rows = slice_rows(DATA / "ares_gold_dev.jsonl", args.ares, args.seed)
    scored, seconds = score(rows, args.out / "ares", list(ARES_LABELS), options)
    print(f"\nARES gold dev: {len(scored)} rows, {seconds / len(scored):.1f} s per row for {len(ARES_LABELS)} metrics")
    print(f"{'metric':26s} {'label':22s} {'n':>4s} {'bacc@0.5':>9s} {'kappa@0.5':>9s} {'best t':>7s} {'bacc@t':>7s}")
    for metric, label in ARES_LABELS.items():
        pairs = [(int(r[label]), r["metrics"][metric]) for r in scored if metric in r["metrics"]]
        y, s = [p[0] for p in pairs], [p[1] for p in pairs]
        at_half = agreement(y, s)
        best = choose_threshold(y, s)
        kappa = "-" if at_half.kappa is None else f"{at_half.kappa:.3f}"
        print(f"{metric:26s} {label:22s} {len(pairs):4d} {at_half.balanced_accuracy:9.3f} {kappa:>9s} "
              f"{best.threshold:7.3f} {best.at_chosen.balanced_accuracy:7.3f}")
    usage = json.loads((args.out / "ares" / "summary.json").read_text())["judge"]["usage"]
    for metric, u in usage.items():
        print(f"  {metric}: {u['calls'] / len(scored):.1f} calls, {u['prompt_tokens'] / len(scored):.0f} prompt tokens "
              f"({u['cached_tokens'] / max(u['prompt_tokens'], 1):.0%} reused), {u['generated_tokens'] / len(scored):.0f} "
              f"generated, {u['seconds'] / len(scored):.1f} s per row")


def halueval(args: argparse.Namespace, options: MetricOptions) -> None:
    rows = slice_rows(DATA / "halueval_qa_dev.jsonl", args.halueval, args.seed, key="pair_id")
    scored, seconds = score(rows, args.out / "halueval", ["faithfulness"], options)
    pairs: dict[str, dict[str, dict]] = {}
    for row in scored:
        pairs.setdefault(row["pair_id"], {})["bad" if str(row["is_hallucinated"]) == "1" else "good"] = row
    print(f"\nHaluEval-QA: {len(pairs)} pairs, {seconds / len(scored):.1f} s per answer (faithfulness)")
    for column in ("faithfulness", "faithfulness.soft"):
        wins, counted = 0.0, 0
        for pair in pairs.values():
            good, bad = pair.get("good"), pair.get("bad")
            if not good or not bad or column not in good["metrics"] or column not in bad["metrics"]:
                continue
            g, b = good["metrics"][column], bad["metrics"][column]
            wins += 1.0 if g > b else 0.5 if g == b else 0.0
            counted += 1
        print(f"  {column:18s} right answer scores higher in {wins / max(counted, 1):.3f} of {counted} pairs (ties = 1/2)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ares", type=int, default=60, help="ARES rows (0 to skip)")
    parser.add_argument("--halueval", type=int, default=60, help="HaluEval pairs (0 to skip)")
    parser.add_argument("--judge", default=None, help="registry name or .gguf (default: the default judge)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", default=str(REPO / ".localeval-cache" / "dev.sqlite"))
    parser.add_argument("--out", type=Path, default=REPO / "out" / "agreement")
    args = parser.parse_args()
    options = MetricOptions(judge=JudgeOptions(judge=args.judge, cache=args.cache, n_threads=args.threads, seed=0))
    if args.ares:
        ares(args, options)
    if args.halueval:
        halueval(args, options)


if __name__ == "__main__":
    main()
