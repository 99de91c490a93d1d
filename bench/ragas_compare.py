"""localeval against Ragas and DeepEval on the same GGUF judge, the same rows and the same CPU, one tool at a time.

1. The slice, from the dev-data folder: the first --ares distinct inputs of ares_gold_dev.jsonl (206 rows are
   6 distinct inputs with conflicting labels; each input gets its majority label) and the first --halueval
   rows of halueval_qa_dev.jsonl (right / hallucinated answer pairs, with a reference answer); 24 by default.
2. The llama.cpp ceiling of the judge on this machine (bench/llama_ceiling.py's, harness.ceiling).
3. Each tool scores the four metrics of Ragas's default set (faithfulness, answer relevance, context
   precision, context recall) in each --mode:
   - `per-sample`: one sample at a time, each from an empty judge cache (localeval) and against a llama.cpp
     server with one slot (the peers), so that seconds, requests and tokens per sample are exact;
   - `whole-set`: the whole slice at once, as its users run a test set, each tool at its own default
     concurrency: localeval's library pipeline (measure_batch over the slice: the batched engine, its default
     sequences, one empty judge cache), Ragas's executor (16 jobs in flight, RunConfig's default) and
     DeepEval's evaluate() (20 test cases in flight, AsyncConfig's default) against a server with as many
     slots.
   localeval runs in this process, its judge and embedder loaded before the clock starts. The peers run in
   venvs of their own (bench/ragas_side.py, bench/deepeval_side.py), telemetry off; their judge is
   llama.cpp's own server (bench/judge_server.py, from the xllamacpp wheel) serving the same GGUF with the
   same threads and context per slot on 127.0.0.1, started before their clock and stopped after. Only one
   tool runs at a time: on 2 cores two llama.cpp processes slow each other down tenfold. DeepEval runs twice:
   as it comes, and with its timeouts off (`deepeval-untimed`), since its default of 180 s a metric cuts
   off most metrics of a small judge serving 20 requests on a CPU.
4. One table per mode: samples per minute, wall seconds, judge requests, prompt (and of them evaluated) and
   generated tokens per sample, failed samples, agreement with the human labels; written with every
   per-sample figure to bench/results/compare-<date>-<judge>-<mode>.json.

Context recall needs a reference answer, which the ARES rows lack: every tool skips it there, and none
counts that as a failure. Context precision judges the chunks against the reference when there is one, else
against the generated answer (Ragas: ContextPrecision, else ContextUtilization; DeepEval has no reference-free
one and skips it). A failure is a metric value that raised, was NaN or None, reported an error (the peers), or
was skipped for any reason other than a missing field (localeval); a failed sample has at least one. The
model lock is held from the ceiling to the last tool.

    .venv/bin/python bench/ragas_compare.py                                     # default judge, 24 rows, both modes
    .venv/bin/python bench/ragas_compare.py --mode whole-set --tools localeval  # one tool again
    .venv/bin/python bench/ragas_compare.py --tools deepeval-untimed --add-to bench/results/compare-....json
    .venv/bin/python bench/ragas_compare.py --retable bench/results/compare-....json   # no model
"""

from __future__ import annotations

import json
import os
import platform
import re
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
TOOLS = ("localeval", "ragas", "deepeval", "deepeval-untimed")
NAMES = {"localeval": "localeval", "ragas": "Ragas", "deepeval": "DeepEval",
         "deepeval-untimed": "DeepEval, timeouts off"}
MODES = ("per-sample", "whole-set")
#: Each peer tool: its side (bench/<side>_side.py) and the settings it runs with. DeepEval stops a metric
#: after 180 s by default (DEEPEVAL_PER_TASK_TIMEOUT_SECONDS), which a small judge on a CPU serving 20
#: requests at once often needs more than: "deepeval-untimed" is DeepEval as its docs tell such a user to
#: run it, with DEEPEVAL_DISABLE_TIMEOUTS.
PEERS = {"ragas": ("ragas", {}), "deepeval": ("deepeval", {}),
         "deepeval-untimed": ("deepeval", {"DEEPEVAL_DISABLE_TIMEOUTS": "1"})}
#: Requests each peer keeps in flight when it runs a whole set (Ragas's RunConfig.max_workers, DeepEval's
#: AsyncConfig.max_concurrent), and so the server's slots for it.
PEER_SLOTS = {"ragas": 16, "deepeval": 20}
#: An object's address in a peer's error message, which would make every failure of a kind a kind of its own.
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")
#: Usage keys, summed per sample (per-sample mode) or over the run (whole-set mode).
USAGE = ("requests", "cache_hits", "prompt_tokens", "cached_tokens", "completion_tokens")


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

def run_localeval(rows: list[dict[str, Any]], judge: str | None, n_ctx: int, threads: int, mode: str,
                  share_cache: bool = False) -> dict[str, Any]:
    """Per sample, each sample starts from an empty judge cache unless `share_cache`: HaluEval's answer pairs
    share question, contexts and reference, so with one cache the second answer of a pair would get its
    context precision and recall for free, which says more about the slice than about the tool. A whole set
    starts from one empty cache, as a first run of a test set does. Reuse within a sample (a statement of
    the answer that is also one of the reference) stays."""
    with tempfile.TemporaryDirectory() as tmp:
        options = MetricOptions(judge=JudgeOptions(judge=judge, n_ctx=n_ctx, n_threads=threads,
                                                   cache=str(Path(tmp) / "judge-0.sqlite")))
        start = time.perf_counter()
        metrics = build_metrics(list(METRICS), options)
        kit = metrics[0].kit
        kit.judge, kit.embedder  # load both before the clock starts, as the peers' server is up before theirs
        setup = time.perf_counter() - start
        tally = Summary({m.name: m.columns for m in metrics})
        samples = [sample_from_record(input_record(row), "<slice>", i) for i, row in enumerate(rows, 1)]
        try:
            if mode == "whole-set":
                before = kit.judge.totals
                start = time.perf_counter()
                results = measure_batch(samples, metrics, tally)
                seconds = time.perf_counter() - start
                work = kit.judge.totals - before
                print(f"localeval whole set: {len(rows)} samples in {seconds:.1f} s, {work.calls} requests", flush=True)
                return {"setup_seconds": round(setup, 3), "samples": [_localeval_sample(r, None) for r in results],
                        "whole_set": {**_in_peer_terms(work.as_dict()), "seconds": round(seconds, 3)}}
            found = []
            for i, (row, sample) in enumerate(zip(rows, samples), 1):
                if not share_cache:
                    kit.judge.cache.close()
                    kit.judge.cache = JudgeCache(Path(tmp) / f"judge-{i}.sqlite")
                start = time.perf_counter()
                [result] = measure_batch([sample], metrics, tally)
                seconds = time.perf_counter() - start
                found.append(_localeval_sample(result, seconds))
                print(f"localeval {i}/{len(rows)} {row['id']}: {seconds:.1f} s, "
                      f"{', '.join(found[-1]['errors']) or 'none failed'}", flush=True)
            return {"setup_seconds": round(setup, 3), "samples": found}
        finally:
            kit.judge.close()


def _localeval_sample(result: dict[str, Any], seconds: float | None) -> dict[str, Any]:
    values, usage, errors = {}, {}, {}
    for name in METRICS:
        reason = result["skipped"].get(name)
        if reason and reason.startswith("missing"):
            continue
        values[name] = result["metrics"].get(name)
        if reason:
            errors[name] = reason
        usage[name] = _in_peer_terms(result["details"].get(name, {}).get("judge", {}))
    return {"id": result["id"], "metrics": values, "usage": usage, "errors": errors,
            **({} if seconds is None else {"seconds": round(seconds, 3)})}


def _in_peer_terms(stats: dict[str, Any]) -> dict[str, Any]:
    """localeval's judge stats (CallStats' fields) under the names the peers' usage has."""
    return {"requests": stats.get("calls", 0), "prompt_tokens": stats.get("prompt_tokens", 0),
            "cached_tokens": stats.get("cached_tokens", 0), "completion_tokens": stats.get("generated_tokens", 0),
            "seconds": stats.get("seconds", 0.0), "cache_hits": stats.get("cache_hits", 0)}


# ---- the table -----------------------------------------------------------------------------------

def figures(run: dict[str, Any], rows: list[dict[str, Any]], limit: dict[str, Any]) -> dict[str, Any]:
    """Per-sample means and counts of one tool's run in either mode; `limit` is the llama.cpp ceiling."""
    samples = run["samples"]
    n = len(samples)
    whole = run.get("whole_set")
    if whole:  # the run's totals: its requests overlap, so only the wall time of the whole is meaningful
        per = {key: whole.get(key, 0) / n for key in USAGE}
        seconds = whole["seconds"] / n
    else:
        per = {key: sum(u.get(key, 0) for s in samples for u in s["usage"].values()) / n for key in USAGE}
        seconds = statistics.fmean(s["seconds"] for s in samples)
    evaluated = per["prompt_tokens"] - per["cached_tokens"]
    at_ceiling = evaluated / limit["prompt_tok_per_s"] + per["completion_tokens"] / limit["gen_tok_per_s"]
    out = {
        "n_samples": n,
        "samples_per_minute": 60 / seconds if seconds else None,
        "seconds_per_sample": seconds,
        "requests_per_sample": per["requests"],
        "cache_hits_per_sample": per["cache_hits"],
        "prompt_tokens_per_sample": per["prompt_tokens"],
        "prompt_tokens_evaluated_per_sample": evaluated,
        "generated_tokens_per_sample": per["completion_tokens"],
        "failed_samples": sum(1 for s in samples if s["errors"]),
        "failed_values": sum(len(s["errors"]) for s in samples),
        "values": sum(len(s["metrics"]) for s in samples),
        "setup_seconds": run["setup_seconds"],
        "ceiling_seconds_per_sample": None if whole else at_ceiling,
        "seconds_per_metric": {} if whole else {
            m: statistics.fmean(s["usage"][m]["seconds"] for s in samples if m in s["usage"])
            for m in METRICS if any(m in s["usage"] for s in samples)},
        "failures": dict(Counter(f"{m}: {_ADDRESS.sub('', e)[:80]}" for s in samples for m, e in s["errors"].items())),
    }
    labels = {r["id"]: r["labels"] for r in rows}
    for metric, label in LABELS.items():
        pairs = [(s["metrics"][metric], labels[s["id"]][label]) for s in samples
                 if label in labels[s["id"]] and s["metrics"].get(metric) is not None]
        judged = sum(1 for s in samples if label in labels[s["id"]] and metric in s["metrics"])
        accuracy = agreement([y for _, y in pairs], [v for v, _ in pairs]).accuracy if pairs else None
        out[f"agreement_{metric}"] = {"accuracy": accuracy, "n_scored": len(pairs), "n_labelled": judged}
    return out


def table(found: dict[str, dict[str, Any]], mode: str) -> str:
    """One column per tool, then localeval's speed-up over each peer (its samples per minute over theirs)."""
    tools = list(found)
    peers = [t for t in tools if t != "localeval"] if "localeval" in tools else []

    def cell(value: Any, fmt: str) -> str:
        return "—" if value is None else fmt.format(value)

    def agree(f: dict[str, Any]) -> str:
        return "—" if f["accuracy"] is None else f"{f['accuracy']:.2f} ({f['n_scored']}/{f['n_labelled']})"

    header = [f"{mode}, {found[tools[0]]['n_samples']} samples", *(NAMES[t] for t in tools),
              *(f"localeval ÷ {NAMES[p]}" for p in peers)]
    lines = [header]
    for label, key, fmt in (("samples / minute", "samples_per_minute", "{:.2f}"),
                            ("wall s / sample", "seconds_per_sample", "{:.1f}"),
                            ("judge requests / sample", "requests_per_sample", "{:.1f}"),
                            ("  judge calls answered by the run's cache", "cache_hits_per_sample", "{:.1f}"),
                            ("prompt tokens / sample", "prompt_tokens_per_sample", "{:.0f}"),
                            ("  of which evaluated (not reused)", "prompt_tokens_evaluated_per_sample", "{:.0f}"),
                            ("generated tokens / sample", "generated_tokens_per_sample", "{:.0f}"),
                            ("s / sample at the llama.cpp ceiling", "ceiling_seconds_per_sample", "{:.1f}"),
                            ("setup s (model, embedder, server)", "setup_seconds", "{:.1f}")):
        values = [found[t][key] for t in tools]
        if all(v is None for v in values):
            continue
        ratios = []
        for p in peers:
            ours, theirs = found["localeval"][key], found[p][key]
            ratios.append("—" if ours is None or not theirs or not ours else f"{ours / theirs:.2f}")
        lines.append([label, *(cell(v, fmt) for v in values), *ratios])
    for key, label in (("failed_samples", "failed samples"), ("failed_values", "failed metric values")):
        total = "n_samples" if key == "failed_samples" else "values"
        lines.append([label, *(f"{found[t][key]} / {found[t][total]}" for t in tools), *("" for _ in peers)])
    for metric in LABELS:
        lines.append([f"agreement, {metric} (acc@0.5, scored/labelled)",
                      *(agree(found[t][f"agreement_{metric}"]) for t in tools), *("" for _ in peers)])
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    rendered = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in lines]
    rendered.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(rendered)


def machine() -> dict[str, Any]:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    return {"cpu": cpu, "logical_cpus": os.cpu_count(), "physical_cores": physical_cores(),
            "python": platform.python_version()}


def main() -> None:
    parser = harness.parser(__doc__, "judge", "n_ctx", "threads", "tag")
    parser.add_argument("--ares", type=int, default=6, help="distinct ARES inputs (at most 6)")
    parser.add_argument("--halueval", type=int, default=18, help="HaluEval rows (pairs: keep it even)")
    parser.add_argument("--data", type=Path, default=harness.dev_data(), help="the dev-data folder")
    parser.add_argument("--mode", default=",".join(MODES), help=f"comma-separated, from: {', '.join(MODES)}")
    parser.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated, from: {', '.join(TOOLS)}")
    parser.add_argument("--share-cache", action="store_true",
                        help="per sample: one judge cache for the whole slice (default: an empty one per sample)")
    parser.add_argument("--add-to", type=Path, default=None, metavar="RESULTS_JSON",
                        help="run --tools on the slice of an earlier results file, in its mode, and add them to it")
    parser.add_argument("--retable", type=Path, default=None, metavar="RESULTS_JSON",
                        help="recompute the figures and table of an earlier results file from its samples; run nothing")
    args = parser.parse_args()
    if args.retable:
        retable(args.retable)
        return
    threads = args.threads or physical_cores()
    model = models.resolve(args.judge, "judge")
    rows = load_slice(args.data, args.ares, args.halueval)
    tools, modes = args.tools.split(","), args.mode.split(",")
    print(f"slice: {len(rows)} samples ({args.ares} ARES inputs, {args.halueval} HaluEval rows); judge {model.name}; "
          f"{threads} threads, n_ctx {args.n_ctx}; tools {', '.join(tools)}; modes {', '.join(modes)}", flush=True)

    with harness.model_lock():
        limit = harness.ceiling(args.judge, n_ctx=args.n_ctx, threads=threads)
        print(f"llama.cpp ceiling: prompt {limit['prompt_tok_per_s']:.1f} tok/s, generation "
              f"{limit['gen_tok_per_s']:.1f} tok/s", flush=True)
        if args.add_to:
            add_to(args.add_to, tools, rows, args, threads)
            return
        for mode in modes:
            started = time.perf_counter()
            runs, versions = run_tools(tools, mode, rows, args, threads)
            result = {
                "date": date.today().isoformat(), "mode": mode, "judge": model.name,
                "judge_sha256": None if args.judge and models.names_a_path(args.judge) else
                                (models.find(args.judge, "judge") if args.judge else models.default("judge")).sha256,
                "slice": {"ares_inputs": args.ares, "halueval_rows": args.halueval, "ids": [r["id"] for r in rows],
                          "labels": {r["id"]: r["labels"] for r in rows}},
                "settings": {"threads": threads, "n_ctx": args.n_ctx, "share_cache": args.share_cache,
                             "embedder": models.resolve(None, "embedder").name, "metrics": list(METRICS),
                             "tools": tools, "peers": peer_settings(tools, mode)},
                "machine": machine(), "ceiling": limit, "total_wall_seconds": round(time.perf_counter() - started, 1),
                "versions": versions, "runs": runs,
            }
            finish(result)
            harness.write_json(harness.results_path("compare", Path(model.name).stem, mode, args.tag), result)


def run_tools(tools: list[str], mode: str, rows: list[dict[str, Any]], args: Any,
              threads: int) -> tuple[dict[str, Any], dict[str, dict[str, str]]]:
    """Each tool's run of the slice in `mode`, one after another, and the versions of what each ran."""
    model, embedder = models.resolve(args.judge, "judge"), models.resolve(None, "embedder")
    runs, versions = {}, {"localeval": {"llama_cpp_python": _version("llama_cpp_python")}}
    for tool in tools:
        if tool == "localeval":
            runs[tool] = run_localeval(rows, args.judge, args.n_ctx, threads, mode, args.share_cache)
            continue
        side, settings = PEERS[tool]
        with tempfile.TemporaryDirectory() as tmp:
            runs[tool] = harness.run_peer(side, [input_record(r) for r in rows], model, embedder, args.n_ctx, threads,
                                          Path(tmp), mode=mode, slots=slots(tool, mode), settings=settings)
        versions[tool] = runs[tool].pop("versions")
    if set(tools) - {"localeval"}:
        versions["judge_server"] = {"xllamacpp": harness.server_version()}
    return runs, versions


def add_to(path: Path, tools: list[str], rows: list[dict[str, Any]], args: Any, threads: int) -> None:
    """Run `tools` on the slice of an earlier results file, in its mode, and add their runs to it."""
    result = json.loads(path.read_text(encoding="utf-8"))
    if result["slice"]["ids"] != [r["id"] for r in rows]:
        raise SystemExit(f"error: {path} holds another slice; give the same --ares and --halueval")
    started = time.perf_counter()
    runs, versions = run_tools(tools, result["mode"], rows, args, threads)
    result["runs"].update(runs)
    result["versions"].update(versions)
    result["settings"]["tools"] = [*result["settings"]["tools"], *(t for t in tools if t not in result["settings"]["tools"])]
    result["settings"].setdefault("peers", {}).update(peer_settings(tools, result["mode"]))
    result.setdefault("added", []).append({"date": date.today().isoformat(), "tools": tools,
                                           "wall_seconds": round(time.perf_counter() - started, 1)})
    finish(result)
    harness.write_json(path, result)


def peer_settings(tools: list[str], mode: str) -> dict[str, Any]:
    return {t: {"slots": slots(t, mode), "settings": PEERS[t][1]} for t in tools if t in PEERS}


def slots(tool: str, mode: str) -> int:
    return 1 if mode == "per-sample" else PEER_SLOTS[PEERS[tool][0]]


def finish(result: dict[str, Any]) -> None:
    """The figures and the table of a result from its runs (a run, or --retable), printed."""
    rows = [{"id": i, "labels": labels} for i, labels in result["slice"]["labels"].items()]
    result["figures"] = {tool: figures(run, rows, result["ceiling"]) for tool, run in result["runs"].items()}
    result["table"] = table(result["figures"], result["mode"])
    print("\n" + result["table"])
    for tool, found in result["figures"].items():
        for failure, count in found["failures"].items():
            print(f"{NAMES[tool]} failed {count}×: {failure}")


def retable(path: Path) -> None:
    result = json.loads(path.read_text(encoding="utf-8"))
    finish(result)
    harness.write_json(path, result)


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


if __name__ == "__main__":
    main()
