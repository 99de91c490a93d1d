"""localeval against Ragas on the same GGUF judge, the same data and the same CPU, in one run.

1. The slice, from the dev-data folder: the first --ares distinct inputs of ares_gold_dev.jsonl (206 rows are
   6 distinct inputs with conflicting labels; each input gets its majority label) and the first --halueval
   rows of halueval_qa_dev.jsonl (right / hallucinated answer pairs, with a reference answer).
2. The llama.cpp ceiling of the judge on this machine (bench/llama_ceiling.py's, harness.ceiling).
3. localeval, in this process: faithfulness, answer_relevance, context_precision, context_recall through
   the library's own pipeline (build_metrics → measure_batch), one sample at a time, each from an empty
   temporary judge cache (see run_localeval). The judge is loaded before the clock starts.
4. Ragas 0.4 in bench/.venv-ragas (bench/ragas_side.py), against llama-cpp-python's server (run by
   localeval/judge/llama_server.py, with the AMX workaround, from the Ragas venv) serving the same GGUF
   with the same threads and context size on 127.0.0.1, started and stopped here. The
   two never run at the same time: on 2 cores, two llama.cpp processes slow each other down tenfold.
5. One table: wall seconds, judge requests, prompt and generated tokens per sample, failed samples,
   agreement with the human labels, and the ratios localeval / Ragas; written with every per-sample
   figure to bench/results/ragas-compare-<date>-<judge>.json.

Context recall needs a reference answer, which the ARES rows lack: both tools skip it there, and
neither counts that as a failure. Context precision judges the chunks against the reference when there
is one, else against the generated answer (Ragas: ContextPrecision, else ContextUtilization). A failure is a
metric that raised or returned NaN (Ragas) or one that was skipped for any reason other than a missing field
(localeval). It holds the model lock from the ceiling to the last Ragas sample.

    .venv/bin/python bench/ragas_compare.py                                  # SmolLM2-135M
    .venv/bin/python bench/ragas_compare.py --judge qwen2.5-coder-1.5b-instruct-q4_k_m --ares 2 --halueval 4
    .venv/bin/python bench/ragas_compare.py --retable bench/results/ragas-compare-....json   # no model
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import tempfile
import time
from collections import Counter, defaultdict
from datetime import date
from pathlib import Path
from typing import Any

import harness

from localeval import JudgeOptions, MetricOptions, build_metrics, models
from localeval.data.records import sample_from_record
from localeval.judge.cache import JudgeCache
from localeval.scoring import measure_batch
from localeval.results.aggregate import Summary
from localeval.settings import physical_cores
from localeval.stats.agreement import agreement

METRICS = ("faithfulness", "answer_relevance", "context_precision", "context_recall")
#: Which human label each metric is checked against (a label of 1 should score >= 0.5).
LABELS = {"faithfulness": "faithful", "answer_relevance": "relevant"}


# ---- the slice -----------------------------------------------------------------------------------

def load_slice(data: Path, n_ares: int, n_halueval: int) -> list[dict[str, Any]]:
    """Rows in localeval's input format, each with a `labels` dict (not an input field; kept aside)."""
    rows: list[dict[str, Any]] = []
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for line in (data / "ares_gold_dev.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row.get("answer") and row.get("contexts"):
            groups[row["question"], row["answer"], tuple(row["contexts"])].append(row)
    for (question, answer, contexts), members in list(groups.items())[:n_ares]:
        rows.append({"id": members[0]["id"], "question": question, "answer": answer, "contexts": list(contexts),
                     "labels": {"faithful": _majority(m["answer_faithfulness"] for m in members),
                                "relevant": _majority(m["answer_relevance"] for m in members)},
                     "source": f"ares ({len(members)} rows)"})
    with (data / "halueval_qa_dev.jsonl").open(encoding="utf-8") as handle:
        for _, line in zip(range(n_halueval), handle):
            row = json.loads(line)
            rows.append({"id": row["id"], "question": row["question"], "answer": row["answer"],
                         "contexts": row["contexts"], "reference": row["reference"],
                         "labels": {"faithful": 1 - int(row["is_hallucinated"])}, "source": "halueval"})
    return rows


def input_record(row: dict[str, Any]) -> dict[str, Any]:
    """What both tools get to see of a slice row: its labels and provenance stay with the harness."""
    return {k: v for k, v in row.items() if k not in ("labels", "source")}


def _majority(values: Any) -> int:
    counts = Counter(int(v) for v in values)
    return 1 if counts[1] >= counts[0] else 0


# ---- localeval -----------------------------------------------------------------------------------

def run_localeval(rows: list[dict[str, Any]], judge: str | None, n_ctx: int, threads: int,
                  share_cache: bool) -> dict[str, Any]:
    """Each sample starts from an empty judge cache unless `share_cache`: HaluEval's answer pairs share
    question, contexts and reference, so with one cache the second answer of a pair would get its
    context precision and recall for free, which says more about the slice than about the tool.
    Reuse within a sample (a statement of the answer that is also one of the reference) stays."""
    with tempfile.TemporaryDirectory() as tmp:
        options = MetricOptions(judge=JudgeOptions(judge=judge, n_ctx=n_ctx, n_threads=threads,
                                                   cache=str(Path(tmp) / "judge-0.sqlite")))
        start = time.perf_counter()
        metrics = build_metrics(list(METRICS), options)
        kit = metrics[0].kit
        kit.judge, kit.embedder  # load both before the clock starts, as the Ragas side does in its setup
        setup = time.perf_counter() - start
        tally = Summary({m.name: m.columns for m in metrics})
        samples = []
        try:
            for i, row in enumerate(rows, 1):
                if not share_cache:
                    kit.judge.cache.close()
                    kit.judge.cache = JudgeCache(Path(tmp) / f"judge-{i}.sqlite")
                sample = sample_from_record(input_record(row), "<slice>", i)
                start = time.perf_counter()
                [result] = measure_batch([sample], metrics, tally)
                seconds = time.perf_counter() - start
                samples.append(_localeval_sample(result, seconds))
                print(f"localeval {i}/{len(rows)} {row['id']}: {seconds:.1f} s, "
                      f"{', '.join(samples[-1]['errors']) or 'none failed'}", flush=True)
        finally:
            kit.judge.close()
    return {"setup_seconds": round(setup, 3), "samples": samples}


def _localeval_sample(result: dict[str, Any], seconds: float) -> dict[str, Any]:
    values, usage, errors = {}, {}, {}
    for name in METRICS:
        reason = result["skipped"].get(name)
        if reason and reason.startswith("missing"):
            continue
        values[name] = result["metrics"].get(name)
        if reason:
            errors[name] = reason
        judge = result["details"].get(name, {}).get("judge", {})
        usage[name] = {"requests": judge.get("calls", 0), "prompt_tokens": judge.get("prompt_tokens", 0),
                       "cached_tokens": judge.get("cached_tokens", 0),
                       "completion_tokens": judge.get("generated_tokens", 0), "seconds": judge.get("seconds", 0.0),
                       "cache_hits": judge.get("cache_hits", 0)}
    return {"id": result["id"], "metrics": values, "usage": usage, "errors": errors, "seconds": round(seconds, 3)}


# ---- the table -----------------------------------------------------------------------------------

def figures(tool: dict[str, Any], rows: list[dict[str, Any]], limit: dict[str, Any]) -> dict[str, Any]:
    """Per-sample means and counts of one tool's run; `limit` is the llama.cpp ceiling."""
    samples = tool["samples"]
    n = len(samples)
    per = {key: sum(u.get(key, 0) for s in samples for u in s["usage"].values()) / n
           for key in ("requests", "cache_hits", "prompt_tokens", "cached_tokens", "completion_tokens")}
    evaluated = per["prompt_tokens"] - per["cached_tokens"]
    at_ceiling = evaluated / limit["prompt_tok_per_s"] + per["completion_tokens"] / limit["gen_tok_per_s"]
    seconds = statistics.fmean(s["seconds"] for s in samples)
    out = {
        "n_samples": n,
        "seconds_per_sample": seconds,
        "requests_per_sample": per["requests"],
        "cache_hits_per_sample": per["cache_hits"],
        "prompt_tokens_per_sample": per["prompt_tokens"],
        "prompt_tokens_evaluated_per_sample": evaluated,
        "generated_tokens_per_sample": per["completion_tokens"],
        "failed_samples": sum(1 for s in samples if s["errors"]),
        "failed_values": sum(len(s["errors"]) for s in samples),
        "values": sum(len(s["metrics"]) for s in samples),
        "setup_seconds": tool["setup_seconds"],
        "ceiling_seconds_per_sample": at_ceiling,
        "share_of_ceiling": at_ceiling / seconds if seconds else None,
        "seconds_per_metric": {m: statistics.fmean(s["usage"][m]["seconds"] for s in samples if m in s["usage"])
                               for m in METRICS if any(m in s["usage"] for s in samples)},
        "failures": dict(Counter(f"{m}: {e[:80]}" for s in samples for m, e in s["errors"].items())),
    }
    labels = {r["id"]: r["labels"] for r in rows}
    for metric, label in LABELS.items():
        pairs = [(s["metrics"][metric], labels[s["id"]][label]) for s in samples
                 if label in labels[s["id"]] and s["metrics"].get(metric) is not None]
        judged = sum(1 for s in samples if label in labels[s["id"]] and metric in s["metrics"])
        accuracy = agreement([y for _, y in pairs], [v for v, _ in pairs]).accuracy if pairs else None
        out[f"agreement_{metric}"] = {"accuracy": accuracy, "n_scored": len(pairs), "n_labelled": judged}
    return out


def table(ours: dict[str, Any], theirs: dict[str, Any]) -> str:
    def ratio(a: float | None, b: float | None) -> str:
        return f"{a / b:.2f}" if a is not None and b else "—"

    def agree(f: dict[str, Any]) -> str:
        return "—" if f["accuracy"] is None else f"{f['accuracy']:.2f} ({f['n_scored']}/{f['n_labelled']})"

    lines = [("", "localeval", "Ragas", "localeval / Ragas")]
    for label, key, fmt in (("wall s / sample", "seconds_per_sample", "{:.1f}"),
                            ("judge requests / sample", "requests_per_sample", "{:.1f}"),
                            ("  judge calls answered by the run's cache", "cache_hits_per_sample", "{:.1f}"),
                            ("prompt tokens / sample", "prompt_tokens_per_sample", "{:.0f}"),
                            ("  of which evaluated (not reused)", "prompt_tokens_evaluated_per_sample", "{:.0f}"),
                            ("generated tokens / sample", "generated_tokens_per_sample", "{:.0f}"),
                            ("s / sample at the llama.cpp ceiling", "ceiling_seconds_per_sample", "{:.1f}"),
                            ("setup s (model + embedder load)", "setup_seconds", "{:.1f}")):
        lines.append((label, fmt.format(ours[key]), fmt.format(theirs[key]), ratio(ours[key], theirs[key])))
    for metric in METRICS:
        a, b = ours["seconds_per_metric"].get(metric), theirs["seconds_per_metric"].get(metric)
        lines.append((f"  s / sample in {metric}", "—" if a is None else f"{a:.1f}", "—" if b is None else f"{b:.1f}",
                      ratio(a, b)))
    lines.append(("failed samples", f"{ours['failed_samples']} / {ours['n_samples']}",
                  f"{theirs['failed_samples']} / {theirs['n_samples']}", ""))
    lines.append(("failed metric values", f"{ours['failed_values']} / {ours['values']}",
                  f"{theirs['failed_values']} / {theirs['values']}", ""))
    for metric in LABELS:
        lines.append((f"agreement, {metric} (acc@0.5, scored/labelled)", agree(ours[f"agreement_{metric}"]),
                      agree(theirs[f"agreement_{metric}"]), ""))
    widths = [max(len(row[i]) for row in lines) for i in range(4)]
    rendered = ["| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths)) + " |" for row in lines]
    rendered.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(rendered)


def machine() -> dict[str, Any]:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    return {"cpu": cpu, "logical_cpus": os.cpu_count(), "physical_cores": physical_cores(),
            "python": platform.python_version()}


def main() -> None:
    parser = harness.parser(__doc__, "judge", "n_ctx", "threads", judge="smollm2-135m-instruct-q4_1")
    parser.add_argument("--ares", type=int, default=2, help="distinct ARES inputs (at most 6)")
    parser.add_argument("--halueval", type=int, default=6, help="HaluEval rows (pairs: keep it even)")
    parser.add_argument("--data", type=Path, default=harness.dev_data(), help="the dev-data folder")
    parser.add_argument("--share-cache", action="store_true",
                        help="one judge cache for the whole slice (default: an empty one per sample)")
    parser.add_argument("--retable", type=Path, default=None, metavar="RESULTS_JSON",
                        help="recompute the figures and table of an earlier results file from its samples; run nothing")
    args = parser.parse_args()
    if args.retable:
        retable(args.retable)
        return
    threads = args.threads or physical_cores()
    model = models.resolve(args.judge, "judge")
    embedder = models.resolve(None, "embedder")
    rows = load_slice(args.data, args.ares, args.halueval)
    print(f"slice: {len(rows)} samples ({args.ares} ARES inputs, {args.halueval} HaluEval rows); judge {model.name}; "
          f"{threads} threads, n_ctx {args.n_ctx}", flush=True)

    started = time.perf_counter()
    with harness.model_lock():
        limit = harness.ceiling(args.judge, n_ctx=args.n_ctx, threads=threads)
        print(f"llama.cpp ceiling: prompt {limit['prompt_tok_per_s']:.1f} tok/s, generation "
              f"{limit['gen_tok_per_s']:.1f} tok/s", flush=True)
        ours = run_localeval(rows, args.judge, args.n_ctx, threads, args.share_cache)
        with tempfile.TemporaryDirectory() as tmp:
            theirs = harness.run_ragas([input_record(r) for r in rows], model, embedder, args.n_ctx, threads, Path(tmp))
    ours_f, theirs_f = figures(ours, rows, limit), figures(theirs, rows, limit)
    rendered = table(ours_f, theirs_f)
    print("\n" + rendered)
    for name, f in (("localeval", ours_f), ("Ragas", theirs_f)):
        for failure, count in f["failures"].items():
            print(f"{name} failed {count}×: {failure}")

    spec = models.find(args.judge, "judge") if not args.judge.endswith(".gguf") else None
    result = {
        "date": date.today().isoformat(), "judge": model.name, "judge_sha256": spec.sha256 if spec else None,
        "slice": {"ares_inputs": args.ares, "halueval_rows": args.halueval, "ids": [r["id"] for r in rows],
                  "labels": {r["id"]: r["labels"] for r in rows}},
        "settings": {"threads": threads, "n_ctx": args.n_ctx, "share_cache": args.share_cache, "embedder": embedder.name, "metrics": list(METRICS)},
        "machine": machine(), "ceiling": limit, "total_wall_seconds": round(time.perf_counter() - started, 1),
        "versions": {"localeval_llama_cpp_python": _version("llama_cpp_python"), **theirs.pop("versions")},
        "figures": {"localeval": ours_f, "ragas": theirs_f}, "table": rendered,
        "samples": {"localeval": ours["samples"], "ragas": theirs["samples"]},
    }
    harness.write_json(harness.results_path("ragas-compare", Path(model.name).stem), result)


def retable(path: Path) -> None:
    result = json.loads(path.read_text(encoding="utf-8"))
    rows = [{"id": i, "labels": labels} for i, labels in result["slice"]["labels"].items()]
    runs = {tool: {"setup_seconds": result["figures"][tool]["setup_seconds"], "samples": result["samples"][tool]}
            for tool in ("localeval", "ragas")}
    result["figures"] = {tool: figures(run, rows, result["ceiling"]) for tool, run in runs.items()}
    result["table"] = table(result["figures"]["localeval"], result["figures"]["ragas"])
    print(result["table"])
    harness.write_json(path, result)


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


if __name__ == "__main__":
    main()
