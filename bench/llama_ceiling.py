"""The llama.cpp ceiling on this machine: prompt and generated tokens per second for a judge model.

Every judge figure in the benchmarks (localeval's or Ragas's) is bounded by these two rates, so they are
what the other figures should be read against: a run that evaluated P prompt tokens and generated G
tokens cannot take less than P / prompt_rate + G / generation_rate seconds on this CPU.

The model is loaded the way localeval's judge loads it (same threads, context size, and the AMX
workaround), then: a prompt of --prompt-tokens tokens is evaluated from an empty KV cache (best of
--repeats), and --gen-tokens tokens are generated greedily after it (best of --repeats). The measurement
is harness.ceiling, which bench/engine_bench.py and bench/ragas_compare.py take too; it holds the model lock.

    .venv/bin/python bench/llama_ceiling.py                                   # the default judge
    .venv/bin/python bench/llama_ceiling.py --judge smollm2-135m-instruct-q4_1 --json out/ceiling.json
    python3 bench/llama_ceiling.py --gpu-layers -1          # on a GPU: one sequence's rates, all layers offloaded
"""

from __future__ import annotations

from pathlib import Path

import harness


def main() -> None:
    parser = harness.parser(__doc__, "judge", "n_ctx", "threads", "gpu_layers")
    parser.add_argument("--prompt-tokens", type=int, default=512)
    parser.add_argument("--gen-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    figures = harness.ceiling(args.judge, n_ctx=args.n_ctx, threads=args.threads, prompt_tokens=args.prompt_tokens,
                              gen_tokens=args.gen_tokens, repeats=args.repeats, gpu_layers=args.gpu_layers)
    print(f"llama.cpp ceiling, {figures['model']}, {harness.device(args.gpu_layers)}, {figures['threads']} threads: "
          f"prompt {figures['prompt_tok_per_s']:.1f} tok/s ({figures['prompt_tokens']} tokens), "
          f"generation {figures['gen_tok_per_s']:.1f} tok/s ({figures['gen_tokens']} tokens), best of {figures['repeats']}")
    if args.json:
        harness.write_json(args.json, figures)


if __name__ == "__main__":
    main()
