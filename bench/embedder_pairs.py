"""Which embedder should score answer relevance in each language: pairwise accuracy, measured.

A pair is one question with two answers: its own (relevant) and the answer to another question of the
same set; a scorer gets the pair right when the relevant answer scores higher (ties count one half).

- Chinese, UHGEval (`uhgeval_zh_dev.jsonl`): the question is the row's `question` (the instruction
  "请续写以下新闻。" with the headline and lead paragraph of a Xinhua article); the relevant answer is its
  `real_continuation` (the article's true next sentences); the other answer is the `real_continuation` of
  the next row in a seeded shuffle of the rows (a cycle, so never the row's own).
- English, HaluEval QA (`halueval_qa_dev.jsonl`): one row per `pair_id`; the question; the relevant answer
  is the `reference` (the right answer); the other answer is the reference of the next row in a seeded
  shuffle (a cycle again).

Two scores per embedder (all-MiniLM-L6-v2, USE multilingual v3):
- direct: cos(question, answer), no judge, every pair of the set;
- answer_relevance: localeval's metric (the judge writes --n-questions questions the answer answers; the
  score is their mean cosine to the question), on the first --judged pairs. The generated questions
  depend on the answer only, and the shuffle cycles within the judged rows, so every answer costs one judge
  call and the second embedder reads all of them from the judge cache.

    .venv/bin/python bench/embedder_pairs.py --judged 40            # default judge, ~10 s per answer on 2 cores
    .venv/bin/python bench/embedder_pairs.py --judged 0             # direct similarity only, seconds
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import localeval  # noqa: E402
from localeval.embed import load_embedder  # noqa: E402
from localeval.metrics import JudgeOptions, MetricOptions  # noqa: E402

EMBEDDERS = ("all-minilm-l6-v2", "use-multilingual-v3")


def chinese(data: Path) -> list[tuple[str, str]]:
    rows = [json.loads(line) for line in (data / "uhgeval_zh_dev.jsonl").read_text(encoding="utf-8").splitlines()]
    return [(r["question"], r["real_continuation"]) for r in rows if r.get("real_continuation")]


def english(data: Path) -> list[tuple[str, str]]:
    seen: dict[str, tuple[str, str]] = {}
    for line in (data / "halueval_qa_dev.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        seen.setdefault(row["pair_id"], (row["question"], row["reference"]))
    return list(seen.values())


def pairs(rows: list[tuple[str, str]], seed: int) -> list[tuple[str, str, str]]:
    """(question, its own answer, the next row's answer) over a seeded shuffle, cycling."""
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    return [(rows[i][0], rows[i][1], rows[order[(k + 1) % len(order)]][1]) for k, i in enumerate(order)]


def accuracy(own: list[float], other: list[float]) -> float:
    return sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in zip(own, other)) / len(own)


def direct(pairs_: list[tuple[str, str, str]], embedder: Any) -> tuple[list[float], list[float]]:
    q = embedder.encode([p[0] for p in pairs_])
    own = (q * embedder.encode([p[1] for p in pairs_])).sum(axis=1)
    other = (q * embedder.encode([p[2] for p in pairs_])).sum(axis=1)
    return [float(x) for x in own], [float(x) for x in other]


def judged(pairs_: list[tuple[str, str, str]], embedder: str, args: argparse.Namespace,
           cache: Path) -> tuple[list[float], list[float], dict[str, Any]]:
    records = [{"id": f"{i}-{kind}", "question": q, "answer": answer}
               for i, (q, a, b) in enumerate(pairs_) for kind, answer in (("own", a), ("other", b))]
    options = MetricOptions(judge=JudgeOptions(judge=args.judge, embedder=embedder, cache=str(cache),
                                               n_threads=args.threads), n_questions=args.n_questions)
    started = time.perf_counter()
    result = localeval.evaluate(records, ["answer_relevance"], options)
    seconds = time.perf_counter() - started
    scores = {r["id"]: r["metrics"].get("answer_relevance") for r in result.rows}
    skipped = sum(1 for v in scores.values() if v is None)
    own = [scores[f"{i}-own"] or 0.0 for i in range(len(pairs_))]
    other = [scores[f"{i}-other"] or 0.0 for i in range(len(pairs_))]
    usage = result.summary["judge"]["usage"]["answer_relevance"]
    return own, other, {"seconds": round(seconds, 1), "skipped": skipped, "judge_calls": usage["calls"],
                        "judge": result.summary["judge"].get("judge_model")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--judged", type=int, default=40, help="pairs per language scored with the judge (0: none)")
    parser.add_argument("--judge", default=None, help="judge name or .gguf (default: the registry's default)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--n-questions", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, help="judge cache (default: a temporary one)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / f"{date.today()}-embedder-pairs.json")
    args = parser.parse_args()

    embedders = {name: load_embedder(name) for name in EMBEDDERS}
    sets: dict[str, Callable[[Path], list[tuple[str, str]]]] = {"zh (UHGEval)": chinese, "en (HaluEval QA)": english}
    report: dict[str, Any] = {"date": str(date.today()), "seed": args.seed, "n_questions": args.n_questions, "sets": {}}
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache or Path(tmp) / "judge.sqlite"
        for label, load in sets.items():
            all_pairs = pairs(load(args.data), args.seed)
            entry: dict[str, Any] = {"pairs": len(all_pairs), "direct": {}, "answer_relevance": {}}
            for name, embedder in embedders.items():
                own, other = direct(all_pairs, embedder)
                entry["direct"][name] = {"accuracy": round(accuracy(own, other), 4), "own": own, "other": other}
                print(f"{label:18s} direct            {name:22s} {accuracy(own, other):.3f}  ({len(all_pairs)} pairs)")
            if args.judged > 0:
                subset = pairs(load(args.data)[: args.judged], args.seed)
                entry["judged_pairs"] = len(subset)
                for name in EMBEDDERS:
                    own, other, info = judged(subset, name, args, cache)
                    entry["answer_relevance"][name] = {"accuracy": round(accuracy(own, other), 4), "own": own,
                                                       "other": other, **info}
                    print(f"{label:18s} answer_relevance  {name:22s} {accuracy(own, other):.3f}  ({len(subset)} pairs, "
                          f"{info['judge_calls']} judge calls, {info['seconds']} s, {info['skipped']} skipped)")
            report["sets"][label] = entry
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
