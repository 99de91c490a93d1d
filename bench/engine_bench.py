"""The batched engine against the sequential backend: the Ragas metric set on HaluEval-QA dev rows.

Each setting scores the same rows from an empty judge cache (faithfulness, answer_relevance,
context_precision, context_recall with the default judge, or --metrics), one setting after the other, in one process:
samples per minute, prompt / evaluated / generated tokens per second, and the share of the llama.cpp
ceiling (bench/llama_ceiling.py: the time the run's tokens would take at the single-sequence rates).
Then every judge call the settings have in common is compared between their caches: the largest
|ΔP| of a verdict or rating distribution, the verdicts that flip at 0.5, and the JSON answers that differ.

    .venv/bin/python bench/engine_bench.py                          # --parallel 1 vs the default, 24 rows
    .venv/bin/python bench/engine_bench.py --repeats 2                # each setting twice, in turn: the fastest of each
    .venv/bin/python bench/engine_bench.py --parallel 1,2,4,8 --rows 24
    .venv/bin/python bench/engine_bench.py --parallel 1,4 --rows 60 --no-ceiling --tag rows60   # 200+ calls compared
    python3 bench/engine_bench.py --gpu-layers -1 --parallel 1,8,32,64 --rows 200 --profile 32 \
        --metrics faithfulness,context_precision,context_recall            # on a GPU (docs/benchmarks/gpu.md)
    .venv/bin/python bench/engine_bench.py --parallel 8 --copy-prefixes on --tag copies   # the GPU policy, on a CPU
    .venv/bin/python bench/engine_bench.py --metrics judge --parallel 16 --no-ceiling --tag judge   # every judge metric
    .venv/bin/python bench/engine_bench.py --metrics judge --parallel 16 --no-ceiling --rows-from faithbench --tag judge-faithbench
    .venv/bin/python bench/engine_bench.py --metrics judge --parallel 16 --no-ceiling --scoring-slots 6 --tag slots6

Run it on a quiet machine: two llama.cpp processes on two cores slow each other about tenfold; it holds
the model lock. Results go to bench/results/engine-<date>-<judge>-<device>[-<tag>].json.
"""

from __future__ import annotations

import json
import platform
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import harness

from localeval import JudgeOptions, MetricOptions, evaluate
from localeval.embed import choose, load_embedder
from localeval.judge import RunConfig
from localeval.distributed.actors import models_needed
from localeval.metrics import build_metrics

RAGAS = ["faithfulness", "answer_relevance", "context_precision", "context_recall"]


#: Row sources: HaluEval-QA (one short passage, one-sentence answers, a reference) and FaithBench (one long
#: source passage, multi-sentence summaries, no reference).
SOURCES = {"halueval": ("halueval_qa_dev.jsonl", ("id", "question", "answer", "contexts", "reference")),
           "faithbench": ("faithbench_dev.jsonl", ("id", "question", "answer", "contexts"))}


def rows(n: int, source: str = "halueval") -> list[dict[str, Any]]:
    name, keys = SOURCES[source]
    out = []
    for line in harness.dev_data(name).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        out.append({k: row[k] for k in keys})
        if len(out) == n:
            break
    return out


class Counted:
    """Counts calls of llama.cpp C functions (decode steps, stream copies) during a run, and the seconds spent
    in them, which is where a run's time goes: decoding (on a GPU llama_decode only queues the work, and
    reading the logits waits for it), grammar-constrained sampling on the CPU, or Python between them. Both
    the top-level module (the batched engine's) and llama-cpp-python's internal one (the sequential
    backend's) are wrapped."""

    NAMES = {"decode_steps": "llama_decode", "prefix_copies": "llama_memory_seq_cp", "logits_reads": "llama_get_logits_ith",
             "grammar_applies": "llama_sampler_apply"}

    def __enter__(self) -> dict[str, Any]:
        import llama_cpp
        import llama_cpp.llama_cpp as inner

        self.counts: dict[str, Any] = dict.fromkeys(self.NAMES, 0)
        self.counts["seconds_in"] = dict.fromkeys(self.NAMES.values(), 0.0)
        self.saved = [(module, name, getattr(module, name)) for module in (llama_cpp, inner) for name in self.NAMES.values()]
        for module, name, real in self.saved:
            key = next(k for k, v in self.NAMES.items() if v == name)
            setattr(module, name, self._counting(key, name, real))
        return self.counts

    def _counting(self, key: str, name: str, real: Any) -> Any:
        def counted(*args: Any) -> Any:
            self.counts[key] += 1
            started = time.perf_counter()
            try:
                return real(*args)
            finally:
                self.counts["seconds_in"][name] += time.perf_counter() - started
        return counted

    def __exit__(self, *exc: Any) -> None:
        for module, name, real in self.saved:
            setattr(module, name, real)


def forced_backend(copy_prefixes: str, scoring_slots: int | None) -> str | None:
    """The batched engine with a policy fixed, registered as a judge backend of its own; its name, or None
    when nothing is forced. --copy-prefixes on/off: the prefix policy regardless of the device (which picks
    it otherwise: copies on a GPU), so that the GPU policy's token and step counts can be measured on a CPU;
    --scoring-slots N: the fewest slots kept for verdicts on a CPU (the rest are generation lanes)."""
    forced: dict[str, Any] = {}
    parts = []
    if copy_prefixes != "auto":
        forced["copy_prefixes"] = copy_prefixes == "on"
        parts.append(f"copy-prefixes-{copy_prefixes}")
    if scoring_slots is not None:
        forced["scoring_slots"] = scoring_slots
        parts.append(f"scoring-slots-{scoring_slots}")
    if not forced:
        return None
    from localeval.judge import register_backend
    from localeval.judge.llama_batched import BatchedLlamaBackend

    @register_backend
    class Forced(BatchedLlamaBackend):
        name = "batched-" + "-".join(parts)

        @classmethod
        def configured(cls, config: Any) -> dict[str, Any]:
            return {**super().configured(config), **forced}

    return Forced.name


def run(samples: list[dict[str, Any]], parallel: int, args: Any, cache: Path, batched: str | None) -> dict[str, Any]:
    """One setting from an empty cache; `batched` names the backend of a setting above 1 (None: the default)."""
    judge = JudgeOptions(judge=args.judge, cache=str(cache), n_threads=args.threads, gpu_layers=args.gpu_layers,
                         parallel=parallel, n_ctx=args.n_ctx, backend=batched if parallel > 1 else None)
    evaluate(samples[:1], ["mrr"], MetricOptions(judge=judge))  # imports, out of the clock
    started = time.perf_counter()
    with Counted() as counts:
        result = evaluate(samples, args.metrics.split(","), MetricOptions(judge=judge))
    seconds = time.perf_counter() - started
    usage = result.summary["judge"]["usage"]
    total = {k: sum(u.get(k, 0) for u in usage.values()) for k in ("calls", "prompt_tokens", "cached_tokens", "generated_tokens")}
    skipped = sum(m["n_skipped"] for m in result.summary["metrics"].values())
    return {"parallel": parallel, "engine": result.summary["judge"]["engine"], "samples": len(samples),
            "seconds": round(seconds, 2), "samples_per_min": round(60 * len(samples) / seconds, 3),
            "calls": total["calls"], "prompt_tokens": total["prompt_tokens"],
            "evaluated_tokens": total["prompt_tokens"] - total["cached_tokens"],
            "generated_tokens": total["generated_tokens"],
            "prompt_tok_per_s": round(total["prompt_tokens"] / seconds, 1),
            "evaluated_tok_per_s": round((total["prompt_tokens"] - total["cached_tokens"]) / seconds, 1),
            "generated_tok_per_s": round(total["generated_tokens"] / seconds, 2), "skipped_values": skipped, **counts,
            "seconds_in": {k: round(v, 2) for k, v in counts["seconds_in"].items()},
            "means": {k: (round(v, 6) if v is not None else None) for k, v in result.means.items()}}


def compare_caches(a: Path, b: Path) -> dict[str, Any]:
    """Per judge call present in both caches: largest |ΔP|, flips at 0.5, differing JSON answers."""
    def entries(path: Path) -> dict[str, tuple[str, Any]]:
        with sqlite3.connect(path) as db:
            return {key: (kind, json.loads(value)) for key, kind, value in db.execute("SELECT key, kind, value FROM judge_calls")}

    left, right = entries(a), entries(b)
    shared = sorted(set(left) & set(right))
    delta, flips, json_differ, distributions = 0.0, 0, 0, 0
    for key in shared:
        kind, x = left[key]
        y = right[key][1]
        if kind == "json":
            json_differ += x != y
            continue
        distributions += 1
        for option in x[0]:
            delta = max(delta, abs(x[0][option] - y[0][option]))
        if "yes" in x[0]:
            flips += (x[0]["yes"] >= 0.5) != (y[0]["yes"] >= 0.5)
    return {"calls_compared": len(shared), "only_in_one": len(set(left) ^ set(right)), "distribution_calls": distributions,
            "max_abs_delta_p": delta, "verdict_flips": flips, "json_answers_differing": json_differ}


def measure(args: Any) -> None:
    """Every setting --repeats times from an empty cache, the fastest of each against the ceiling, and the
    judge calls the settings share compared between their caches."""
    batched = forced_backend(args.copy_prefixes, args.scoring_slots)
    default = RunConfig.resolve(JudgeOptions(judge=args.judge, gpu_layers=args.gpu_layers, n_ctx=args.n_ctx)).parallel
    settings = [int(p) for p in args.parallel.split(",")] if args.parallel else [1, default]
    samples = rows(args.rows, args.rows_from)
    limit = None if args.no_ceiling else harness.ceiling(args.judge, n_ctx=args.n_ctx, threads=args.threads,
                                                         gpu_layers=args.gpu_layers)
    # sentence-transformers' first import (~13 s) would otherwise fall in the first setting's clock alone;
    # metrics that embed nothing leave PyTorch out of the process (on the measured GPU it crashed beside llama.cpp).
    if "embedder" in models_needed(build_metrics(args.metrics, MetricOptions())):
        load_embedder(choose(RunConfig.resolve(JudgeOptions()).embedder, "en"))
    best: dict[int, dict[str, Any]] = {}
    caches: dict[int, Path] = {}
    with tempfile.TemporaryDirectory() as tmp:
        # Settings in turn, --repeats rounds, each from an empty cache; the fastest run of each setting is
        # reported (this VM's speed drifts by up to a fifth between minutes, and noise only ever slows).
        for round_ in range(args.repeats):
            for parallel in settings:
                cache = Path(tmp) / f"p{parallel}-{round_}.sqlite"
                caches.setdefault(parallel, cache)
                result = run(samples, parallel, args, cache, batched)
                print(json.dumps(result), flush=True)
                seconds = [*best.get(parallel, {}).get("all_seconds", []), result["seconds"]]
                if parallel not in best or result["seconds"] < best[parallel]["seconds"]:
                    best[parallel] = result
                best[parallel]["all_seconds"] = seconds
        results = [best[p] for p in settings]
        for result in results:
            if limit:
                floor = result["evaluated_tokens"] / limit["prompt_tok_per_s"] + result["generated_tokens"] / limit["gen_tok_per_s"]
                result["ceiling_seconds"] = round(floor, 2)
                result["ceiling_fraction"] = round(floor / result["seconds"], 3)
        base = settings[0]
        agreement = {str(p): compare_caches(caches[base], caches[p]) for p in settings[1:]}
        # The same setting's rounds against each other: the numbers must be the same to the last bit.
        repeated = {str(p): compare_caches(caches[p], Path(tmp) / f"p{p}-{args.repeats - 1}.sqlite")
                    for p in settings if args.repeats > 1}
        profile = profiled(samples, args, Path(tmp) / "profiled.sqlite", batched) if args.profile else None
    for r in results:
        r["speedup"] = round(r["samples_per_min"] / results[0]["samples_per_min"], 2)
    header = ("parallel", "engine", "s", "samples/min", "speedup", "prompt tok/s", "evaluated tok/s", "gen tok/s",
              "decode steps", "prefix copies", "ceiling share", "skipped", "s decoding", "s sampling with grammar")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in results:
        lines.append("| " + " | ".join(str(x) for x in (r["parallel"], r["engine"], r["seconds"], r["samples_per_min"],
                                                      r["speedup"], r["prompt_tok_per_s"], r["evaluated_tok_per_s"],
                                                      r["generated_tok_per_s"], r["decode_steps"], r["prefix_copies"],
                                                      r.get("ceiling_fraction", "-"), r["skipped_values"],
                                                      round(r["seconds_in"]["llama_decode"]
                                                            + r["seconds_in"]["llama_get_logits_ith"], 2),
                                                      r["seconds_in"]["llama_sampler_apply"])) + " |")
    print("\n".join(lines))
    print(json.dumps({"with_parallel_%d" % base: agreement, "between_rounds": repeated}, indent=1))
    where = harness.device(args.gpu_layers)
    harness.write_json(harness.results_path("engine", harness.judge_label(args.judge), where, args.tag),
                       {"args": vars(args), "device": where, "machine": platform.platform(), "ceiling": limit,
                        "results": results, "agreement_with_parallel_%d" % base: agreement,
                        "agreement_between_rounds": repeated, "table": "\n".join(lines), "profile": profile})


def profiled(samples: list[dict[str, Any]], args: Any, cache: Path, batched: str | None) -> dict[str, Any]:
    """One more run of the --profile setting under cProfile: the functions that took the most time of their own
    (a C function llama-cpp-python calls counts in its caller, Counted's wrapper here), for the note that
    names what bounds a run."""
    import cProfile
    import io
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    result = run(samples, args.profile, args, cache, batched)
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(25)
    print(text.getvalue())
    return {"parallel": args.profile, "seconds": result["seconds"], "seconds_in": result["seconds_in"],
            "top_by_own_time": text.getvalue().splitlines()}


def main() -> None:
    parser = harness.parser(__doc__, "judge", "threads", "gpu_layers", "n_ctx", "tag")
    parser.add_argument("--rows", type=int, default=24)
    parser.add_argument("--rows-from", choices=sorted(SOURCES), default="halueval", help="the dev set the rows come from")
    parser.add_argument("--metrics", default=",".join(RAGAS), help="metrics and groups, comma-separated (default: "
                        "the Ragas set; `judge` for every judge metric)")
    parser.add_argument("--parallel", default=None, help="comma-separated settings (default: 1 and the device default)")
    parser.add_argument("--no-ceiling", action="store_true", help="skip the llama.cpp ceiling measurement")
    parser.add_argument("--repeats", type=int, default=1, help="rounds over the settings; the fastest of each is reported")
    parser.add_argument("--profile", type=int, default=None, metavar="N",
                        help="then one more run of --parallel N under cProfile, its top functions in the results")
    parser.add_argument("--scoring-slots", type=int, default=None,
                        help="the batched engine's fewest slots for verdicts on a CPU (default: the engine's own, "
                        "llama_batched.SCORING_SLOTS); the rest of --parallel are generation lanes")
    parser.add_argument("--n-batch", type=int, default=None, help="tokens per llama_decode (default: llama_batched.N_BATCH)")
    parser.add_argument("--n-ubatch", type=int, default=None, help="llama.cpp's micro-batch (default: llama_batched.N_UBATCH)")
    parser.add_argument("--copy-prefixes", choices=("auto", "on", "off"), default="auto",
                        help="the batched engine's prefix policy (auto: copies on a GPU only)")
    args = parser.parse_args()
    from localeval.judge import llama_batched

    llama_batched.N_BATCH = args.n_batch or llama_batched.N_BATCH
    llama_batched.N_UBATCH = args.n_ubatch or llama_batched.N_UBATCH
    with harness.model_lock():
        measure(args)


if __name__ == "__main__":
    main()
