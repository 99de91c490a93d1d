"""The llama.cpp ceiling on this machine: prompt and generated tokens per second for a judge model.

Every judge figure in the benchmarks (localeval's or Ragas's) is bounded by these two rates, so they are
what the other figures should be read against: a run that evaluated P prompt tokens and generated G
tokens cannot take less than P / prompt_rate + G / generation_rate seconds on this CPU.

The model is loaded the way localeval's judge loads it (same threads, context size, and the AMX
workaround), then: a prompt of --prompt-tokens tokens is evaluated from an empty KV cache (best of
--repeats), and --gen-tokens tokens are generated greedily after it (best of --repeats).

    python bench/llama_ceiling.py                                   # the default judge
    python bench/llama_ceiling.py --judge smollm2-135m-instruct-q4_1 --json out/ceiling.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from localeval.judge import Judge, load_judge  # noqa: E402
from localeval.settings import physical_cores  # noqa: E402

FILLER = ("The committee reviewed the quarterly report, noted the figures for each region, and asked the "
          "authors to explain the changes since the previous year in plain language. ")


def measure(judge: Judge, prompt_tokens: int, gen_tokens: int, repeats: int) -> dict[str, Any]:
    """Best-of-`repeats` rates; best rather than mean because the other core's noise only ever slows."""
    llm = judge.backend.llm
    words = llm.tokenize((FILLER * (prompt_tokens // 20 + 2)).encode(), add_bos=True)[:prompt_tokens]
    prompt_s, gen_s = [], []
    for _ in range(repeats):
        llm.reset()
        start = time.perf_counter()
        llm.eval(words)
        prompt_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        for _ in range(gen_tokens):
            token = llm.sample(temp=0.0)
            llm.eval([token])
        gen_s.append(time.perf_counter() - start)
    return {"prompt_tokens": len(words), "prompt_tok_per_s": round(len(words) / min(prompt_s), 2),
            "gen_tokens": gen_tokens, "gen_tok_per_s": round(gen_tokens / min(gen_s), 2),
            "repeats": repeats}


def ceiling(judge_name: str | None, *, n_ctx: int = 4096, threads: int | None = None, prompt_tokens: int = 512,
            gen_tokens: int = 64, repeats: int = 3) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        judge = load_judge(judge_name, n_ctx=n_ctx, n_threads=threads, cache=Path(tmp) / "judge.sqlite")
        try:
            figures = measure(judge, prompt_tokens, gen_tokens, repeats)
            figures.update(model=judge.backend.model_path.name, threads=threads or physical_cores(), n_ctx=n_ctx)
        finally:
            judge.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judge", default=None, help="registry name or .gguf (default: the default judge)")
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--prompt-tokens", type=int, default=512)
    parser.add_argument("--gen-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    figures = ceiling(args.judge, n_ctx=args.n_ctx, threads=args.threads, prompt_tokens=args.prompt_tokens,
                      gen_tokens=args.gen_tokens, repeats=args.repeats)
    print(f"llama.cpp ceiling, {figures['model']}, {figures['threads']} threads: "
          f"prompt {figures['prompt_tok_per_s']:.1f} tok/s ({figures['prompt_tokens']} tokens), "
          f"generation {figures['gen_tok_per_s']:.1f} tok/s ({figures['gen_tokens']} tokens), best of {figures['repeats']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
