"""What the LLM judge costs per sample, and what KV-prefix reuse saves.

For N rows of the ARES gold dev set it does what a faithfulness metric does: decompose the answer into
statements (`statements`, JSON under a grammar), then verify each statement against the contexts
(`verify_statement`, P(yes) from one forward pass), windowing contexts that do not fit. It prints per
sample the calls, prompt / re-used (cached) / generated tokens and seconds, then the share of prompt
tokens that prefix reuse spared.

To put a time on that share it replays the first few samples with prefix reuse defeated (an empty KV
cache for every call) and compares wall time; it also checks that both modes give the same numbers.
Each run uses a temporary judge cache, so the bench measures the model, never the SQLite cache. It holds
the model lock and prints its figures; it writes no results file.

    .venv/bin/python bench/judge_bench.py                       # Qwen 1.5B (default judge), 20 rows
    .venv/bin/python bench/judge_bench.py --judge smollm2-135m-instruct-q4_1 --n 3
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import harness

from localeval.judge import CallStats, Judge, load_judge
from localeval.judge.prompts import detect_lang, load_prompt


def load_rows(path: Path, n: int) -> list[dict[str, Any]]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row.get("answer") and row.get("contexts"):
                rows.append(row)
            if len(rows) == n:
                break
    return rows


def score_rows(judge: Judge, rows: list[dict[str, Any]]) -> tuple[list[list[float]], list[CallStats]]:
    """Faithfulness-style work: all decompositions first, then all verifications.

    Grouping calls by prompt keeps the shared system turn of `statements` in the KV cache from one row
    to the next; within a row, every statement is verified against the same context window in turn, so
    the window is evaluated once. The verdict for a statement is its max P(yes) over the windows."""
    stats = [CallStats() for _ in rows]
    statements = []
    for i, row in enumerate(rows):
        prompt = load_prompt("statements", detect_lang(row["answer"])).render(question=row["question"], answer=row["answer"])
        value, s = judge.json(prompt)
        statements.append([t for t in value["statements"] if t.strip()])
        stats[i] += s
    scores = []
    for i, row in enumerate(rows):
        verify = load_prompt("verify_statement", detect_lang(row["answer"]))
        context = "\n\n".join(c if isinstance(c, str) else c["text"] for c in row["contexts"])
        longest = max(statements[i], key=judge.count_tokens, default="")
        windows = judge.split_to_fit(context, judge.context_budget(verify.render(context="", statement=longest)))
        best = [0.0] * len(statements[i])
        for window in windows:  # the statement comes last in the prompt, so the window is the shared prefix
            for j, statement in enumerate(statements[i]):
                p, s = judge.yes_probability(verify.render(context=window, statement=statement))
                stats[i], best[j] = stats[i] + s, max(best[j], p)
        scores.append(best)
    return scores, stats


def run(model: str | None, rows: list[dict[str, Any]], reuse: bool, threads: int | None,
        n_ctx: int) -> tuple[list[list[float]], list[CallStats], float]:
    """A fresh judge with a temporary cache; one untimed forward pass first pages the weights in."""
    with tempfile.TemporaryDirectory(prefix="localeval-judge-bench-") as tmp:
        started = time.perf_counter()
        judge = load_judge(model, cache=Path(tmp) / "judge.sqlite", n_threads=threads, n_ctx=n_ctx, reuse_prefix=reuse)
        llm = judge.backend.llm
        llm.eval(llm.tokenize(b"Warm up.", add_bos=True))
        llm.reset()
        load = time.perf_counter() - started
        scores, stats = score_rows(judge, rows)
        judge.close()
    return scores, stats, load


def measure(args: Any) -> None:
    """Score the rows with prefix reuse, then replay the first --replay without it."""
    rows = load_rows(args.data, args.n)
    print(f"judge: {args.judge or 'default'}; {len(rows)} rows of {args.data.name}; n_ctx={args.n_ctx}")
    print(f"{'id':<14} {'stmts':>5} {'calls':>5} {'prompt':>7} {'cached':>7} {'gen':>5} {'hits':>4} {'sec':>7}  P(yes) per statement")
    scores, stats, load = run(args.judge, rows, True, args.threads, args.n_ctx)
    for row, row_scores, st in zip(rows, scores, stats):
        print(f"{row['id']:<14} {len(row_scores):>5} {st.calls:>5} {st.prompt_tokens:>7} {st.cached_tokens:>7} "
              f"{st.generated_tokens:>5} {st.cache_hits:>4} {st.seconds:>7.1f}  {', '.join(f'{p:.2f}' for p in row_scores)}")
    total = sum(stats, CallStats())
    n = len(rows)
    print(f"\nmodel load and warm-up {load:.1f} s")
    print(f"per sample: {total.calls / n:.1f} calls, {total.prompt_tokens / n:.0f} prompt tokens "
          f"({total.cached_tokens / n:.0f} re-used, {(total.prompt_tokens - total.cached_tokens) / n:.0f} evaluated), "
          f"{total.generated_tokens / n:.0f} generated, {total.seconds / n:.1f} s")
    share = total.cached_tokens / total.prompt_tokens if total.prompt_tokens else 0.0
    print(f"prefix reuse: {total.cached_tokens} of {total.prompt_tokens} prompt tokens not re-evaluated ({share:.1%}); "
          f"{total.cache_hits} repeated calls (duplicate statements) answered by the judge cache")

    k = min(args.replay, n)
    if k:
        # Both modes timed back to back on the same rows, each with a fresh, warmed-up judge.
        reuse_scores, reuse_stats, _ = run(args.judge, rows[:k], True, args.threads, args.n_ctx)
        plain_scores, plain_stats, _ = run(args.judge, rows[:k], False, args.threads, args.n_ctx)
        with_reuse = sum(s.seconds for s in reuse_stats)
        without = sum(s.seconds for s in plain_stats)
        extra = sum(s.prompt_tokens - s.cached_tokens for s in plain_stats) - sum(
            s.prompt_tokens - s.cached_tokens for s in reuse_stats)
        diff = max((abs(a - b) for x, y in zip(reuse_scores, plain_scores) for a, b in zip(x, y)), default=0.0)
        same_shape = [len(x) for x in reuse_scores] == [len(y) for y in plain_scores]
        print(f"replay of {k} rows: {without:.1f} s without prefix reuse vs {with_reuse:.1f} s with it "
              f"({extra} more prompt tokens evaluated; saved {without - with_reuse:.1f} s, "
              f"{(without - with_reuse) / without:.0%}); same statements: {same_shape}, "
              f"max |dP(yes)| between modes: {diff:.2e}")
        if extra >= 100 and without > with_reuse:
            per_token = (without - with_reuse) / extra  # marginal cost of re-evaluating one prompt token
            print(f"so one re-evaluated prompt token costs {per_token * 1000:.1f} ms, and reuse saved about "
                  f"{total.cached_tokens * per_token:.1f} s of {total.seconds + total.cached_tokens * per_token:.1f} s "
                  f"on all {n} rows")


def main() -> None:
    parser = harness.parser(__doc__, "judge", "threads", "n_ctx")
    parser.add_argument("--n", type=int, default=20, help="rows of the data set")
    parser.add_argument("--data", type=Path, default=harness.dev_data("ares_gold_dev.jsonl"))
    parser.add_argument("--replay", type=int, default=2, help="rows replayed without prefix reuse (0: skip)")
    args = parser.parse_args()
    with harness.model_lock():
        measure(args)


if __name__ == "__main__":
    main()
