"""What one llama_decode costs by its shape, in the batched engine's own context: n tokens of one sequence,
and one token each of k sequences (what k slots generating side by side decode per step).

This is what the batched engine's scheduling rests on (judge/llama_batched.py): where k sequences of one
token cost about k times one (a CPU below 8 rows), sitting side by side gains nothing and decoding fewer
prompt tokens is the gain; from 8 rows on llama.cpp's tiled K-quant kernel makes a row cost a fraction of
one alone (the generation lanes); where they cost about one (a GPU), side by side is the gain. Last,
whether the shape changes the numbers: one sequence's next-token logits with its token decoded alone and
beside k - 1 others.

    .venv/bin/python bench/decode_cost.py                      # the default judge, this machine's cores
    .venv/bin/python bench/decode_cost.py --gpu-layers -1      # on a GPU

It reads the engine's own llama.cpp context, batch and token placement (private to
localeval/judge/llama_batched.py). Run it on a quiet machine; it holds the model lock. Results go to
bench/results/decode-cost-<date>-<judge>-<device>.json.
"""

from __future__ import annotations

import platform
import time
from typing import Any

import harness
import numpy as np

from localeval import models
from localeval.judge.llama_batched import BatchedLlamaBackend
from localeval.settings import physical_cores

PREFIX = 100  # tokens already in each sequence's KV, as after a prompt


def measure(args: Any) -> None:
    """Decode each shape best-of --repeats in the engine's own context, then one token alone and beside others."""
    import llama_cpp as lc

    spec = models.find(args.judge, "judge") if args.judge else models.default("judge")
    backend = BatchedLlamaBackend(models.resolve(spec.name, "judge"), spec.sha256, parallel=args.sequences,
                                  n_threads=args.threads or physical_cores(), n_gpu_layers=args.gpu_layers)
    tokens = backend.tokens(harness.FILLER * 40)[: PREFIX + 64]
    ctx, mem, batch = backend._ctx, backend._mem, backend._batch  # noqa: SLF001 (a bench of the engine's own context)

    def decode(entries: list[tuple[int, int]]) -> float:
        """Best-of-repeats seconds for (sequence, position) entries decoded after each sequence's prefix."""
        best = float("inf")
        for _ in range(args.repeats):
            for seq in range(args.sequences):
                lc.llama_memory_seq_rm(mem, seq, PREFIX, -1)
            for i, (seq, position) in enumerate(entries):
                backend._put(i, tokens[position], position, seq, True)  # noqa: SLF001
            batch.n_tokens = len(entries)
            started = time.perf_counter()
            if lc.llama_decode(ctx, batch) != 0:
                raise SystemExit("llama_decode failed")
            best = min(best, time.perf_counter() - started)
        return best

    for seq in range(args.sequences):
        for i in range(PREFIX):
            backend._put(i, tokens[i], i, seq, False)  # noqa: SLF001
        batch.n_tokens = PREFIX
        lc.llama_decode(ctx, batch)
    rows: list[dict[str, Any]] = []
    for n in (1, 2, 4, 7, 8, 9, 12, 16, 32, 64):  # around 8 rows, where llama.cpp's tiled K-quant kernel takes over
        seconds = decode([(0, PREFIX + i) for i in range(n)])
        rows.append({"shape": f"1 sequence x {n} token{'s' if n > 1 else ''}", "tokens": n, "ms": round(1000 * seconds, 1),
                     "ms_per_token": round(1000 * seconds / n, 1)})
    for k in sorted({1, 2, 4, 8, 12, args.sequences} - {k for k in (8, 12) if k > args.sequences}):
        seconds = decode([(seq, PREFIX) for seq in range(k)])
        rows.append({"shape": f"{k} sequence{'s' if k > 1 else ''} x 1 token", "tokens": k, "ms": round(1000 * seconds, 1),
                     "ms_per_token": round(1000 * seconds / k, 1)})

    def first_logits(entries: list[tuple[int, int]]) -> np.ndarray:
        """Sequence 0's next-token logits when its token is decoded in one batch with `entries`."""
        for seq in range(args.sequences):
            lc.llama_memory_seq_rm(mem, seq, PREFIX, -1)
        for i, (seq, position) in enumerate(entries):
            backend._put(i, tokens[position], position, seq, i == 0)  # noqa: SLF001
        batch.n_tokens = len(entries)
        if lc.llama_decode(ctx, batch) != 0:
            raise SystemExit("llama_decode failed")
        return np.ctypeslib.as_array(lc.llama_get_logits_ith(ctx, 0), shape=(backend._n_vocab,)).copy()  # noqa: SLF001

    # Whether what shares a batch changes a sequence's numbers: its token alone, then beside k - 1 others.
    alone = first_logits([(0, PREFIX)])
    beside = [{"sequences": k, "max_abs_delta_logit": float(np.abs(first_logits([(seq, PREFIX) for seq in range(k)]) - alone).max())}
              for k in sorted({2, 4, 8, args.sequences})]
    backend.close()
    lines = ["| shape | ms | ms per token |", "|---|---|---|"]
    lines += [f"| {r['shape']} | {r['ms']} | {r['ms_per_token']} |" for r in rows]
    lines += ["", "| one token beside k - 1 others, k | max abs delta logit against alone |", "|---|---|"]
    lines += [f"| {b['sequences']} | {b['max_abs_delta_logit']:.4g} |" for b in beside]
    print("\n".join(lines))
    where = harness.device(args.gpu_layers)
    harness.write_json(harness.results_path("decode-cost", harness.judge_label(args.judge), where),
                       {"args": vars(args), "device": where, "machine": platform.platform(), "rows": rows,
                        "beside_others": beside, "table": "\n".join(lines)})


def main() -> None:
    parser = harness.parser(__doc__, "judge", "threads", "gpu_layers")
    parser.add_argument("--sequences", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with harness.model_lock():
        measure(args)


if __name__ == "__main__":
    main()
