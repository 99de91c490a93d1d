"""Do `grounding`'s least expected tokens point at the hallucination? Measured against annotated spans.

A sample's details name its least expected tokens (`unexpected`), and the report's drill-down lists them
as where a reader should look in the passages. Two dev sets mark the hallucinated words themselves:
UHGEval's `keyword_labels` (each hallucinated continuation has at least one keyword judged unreasonable)
and FaithBench's expert `spans` (those labelled Unwanted, in the summaries the majority found
hallucinated). For every such answer this scores `grounding` as `localeval score` would (through
bench/accuracy.py's scorer and cache) and counts:

- hit@1: the least expected token overlaps a marked span;
- hit@shown: some token of `unexpected` (at most eight) does;

each beside what as many tokens drawn at random from the same answer would hit (the share of the
answer's tokens inside a span, and 1 - C(n-m, k) / C(n, k) for k of them), so a figure means something
only above its baseline.

    .venv/bin/python bench/grounding_spans.py                      # ~10 min on 2 cores, less with a warm cache

Takes /tmp/localeval-model.lock like every model bench. Results: bench/results/grounding-spans-<date>.json.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from datetime import date
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from accuracy import DATA, model_lock, read_jsonl, score, uhgeval_rows  # noqa: E402

from localeval.judge.injection import screen  # noqa: E402
from localeval.judge.kit import JudgeKit  # noqa: E402
from localeval.judge.options import JudgeOptions  # noqa: E402

Span = tuple[int, int]


def occurrences(text: str, part: str) -> list[Span]:
    spans, at = [], text.find(part)
    while part and at >= 0:
        spans.append((at, at + len(part)))
        at = text.find(part, at + 1)
    return spans


def uhgeval_marked(limit: int) -> list[tuple[dict[str, Any], list[Span]]]:
    out = []
    for row in uhgeval_rows()[:limit]:
        spans = [s for k in row["keyword_labels"] if not k["reasonable"] for s in occurrences(row["answer"], k["keyword"])]
        if spans:
            out.append(({"id": row["id"], "question": row["question"], "answer": row["answer"],
                         "contexts": row["contexts"]}, spans))
    return out


def faithbench_marked(limit: int) -> list[tuple[dict[str, Any], list[Span]]]:
    out = []
    for row in read_jsonl(DATA / "faithbench_dev.jsonl"):
        if not row["is_hallucinated_majority"]:
            continue
        spans = []
        for span in row["spans"]:
            if any(label.startswith("Unwanted") for label in span["label"]):
                exact = row["answer"][span["start"]:span["end"]] == span["text"]
                spans += [(span["start"], span["end"])] if exact else occurrences(row["answer"], span["text"])
        if spans:
            out.append(({k: row[k] for k in ("id", "question", "answer", "contexts")}, spans))
    return out[:limit]


def token_ranges(texts: list[str], offset: int) -> list[Span]:
    """Each token's character range in the original answer; a token holding part of a character (text '')
    takes the range of the token that completes it, as `unexpected` names it."""
    ranges, at = [], offset
    for text in texts:
        ranges.append((at, at + len(text)))
        at += len(text)
    for i in range(len(ranges) - 1, -1, -1):
        if not texts[i] and i + 1 < len(ranges):
            ranges[i] = ranges[i + 1]
    return ranges


def overlaps(token: Span, spans: list[Span]) -> bool:
    return token[1] > token[0] and any(token[0] < end and start < token[1] for start, end in spans)


def chance_any(n: int, m: int, k: int) -> float:
    """P(at least one of k tokens drawn without replacement from n, m of them marked, is marked)."""
    return 1.0 - (math.comb(n - m, k) / math.comb(n, k) if k <= n else 0.0)


def measure(name: str, marked: list[tuple[dict[str, Any], list[Span]]], judge: JudgeOptions) -> dict[str, Any]:
    result, _ = score([sample for sample, _ in marked], "grounding", {}, judge)
    rows = {row["id"]: row for row in result.rows}
    with model_lock():
        kit = JudgeKit(judge)
        counts = {"answers": 0, "hit_at_1": 0.0, "chance_at_1": 0.0, "hit_at_shown": 0.0, "chance_at_shown": 0.0}
        for sample, spans in marked:
            shown = rows[sample["id"]]["details"].get("grounding", {}).get("unexpected")
            answer = screen(sample["answer"]).text.strip()
            texts = kit.judge.token_texts(answer)
            if not shown or texts is None or sample["answer"].find(answer) < 0:
                continue
            ranges = token_ranges(texts, sample["answer"].find(answer))
            inside = [overlaps(r, spans) for r in ranges]
            counts["answers"] += 1
            counts["hit_at_1"] += inside[shown[0]["token"]]
            counts["chance_at_1"] += sum(inside) / len(inside)
            counts["hit_at_shown"] += any(inside[entry["token"]] for entry in shown)
            counts["chance_at_shown"] += chance_any(len(inside), sum(inside), len(shown))
        kit.close()
    n = counts.pop("answers")
    return {"set": name, "answers": n, **{key: round(value / n, 3) for key, value in counts.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judge", default=None)
    parser.add_argument("--limit", type=int, default=200, help="answers per set")
    parser.add_argument("--cache", default=str(REPO / ".localeval-cache" / "accuracy.sqlite"))
    args = parser.parse_args()
    judge = JudgeOptions(judge=args.judge, cache=args.cache, seed=0)
    rows = [measure("uhgeval", uhgeval_marked(args.limit), judge),
            measure("faithbench", faithbench_marked(args.limit), judge)]
    for row in rows:
        print(f"{row['set']:11s} {row['answers']} answers: least expected token in a marked span {row['hit_at_1']:.3f} "
              f"(chance {row['chance_at_1']:.3f}); some shown token {row['hit_at_shown']:.3f} (chance {row['chance_at_shown']:.3f})")
    out = REPO / "bench" / "results" / f"grounding-spans-{date.today()}.json"
    out.write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1) + "\n", encoding="utf-8")
    print(f"results in {out}")


if __name__ == "__main__":
    main()
