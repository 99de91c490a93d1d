"""`localeval score --ray` against a single process on this machine: what Ray costs and what it buys.

Two parts, each a sequence of `localeval score` commands exactly as a user types them, timed from start
to exit (Ray's start-up, model loading and the validation pass included), each judge run from an empty
judge cache:

- judge: HaluEval-QA dev rows (--data, from the dev-data folder) with classical metrics + faithfulness +
  answer_relevance (the tiny judge by default), single process (all cores, then one thread) against a
  local Ray instance with 1 and 2 actors of one CPU each: samples per minute;
- classical: a 1,000,000-line synthetic test set (harness.write_synthetic_set, bench/streaming_bench.py's
  too) with the retrieval metrics, single process against Ray (2 actors, what fits 2 cores, by default):
  rows per second, and the driver's peak memory (its own process: Ray's feeder, actors, raylet and object
  store are other processes).

    .venv/bin/python bench/ray_bench.py                       # both parts
    .venv/bin/python bench/ray_bench.py --part judge --n 64 --judge qwen2.5-coder-1.5b-instruct-q4_k_m

It holds the model lock throughout: two llama.cpp processes on two cores slow each other tenfold, and
here the Ray actors are two such processes by design. Results go to bench/results/ray-<date>.json.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

import harness

JUDGE_METRICS = "classical,faithfulness,answer_relevance"


def timed(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run `localeval ARGS`; wall seconds and the driver's peak resident memory (its own process only)."""
    started = time.perf_counter()
    process = subprocess.Popen([harness.CLI, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stderr is not None
    errors = process.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"localeval {' '.join(args)} failed:\n{errors[-3000:]}")
    return {"seconds": round(seconds, 1), "driver_peak_mb": round(usage.ru_maxrss / 1024)}


def shown(command: list[str]) -> str:
    """The command as recorded: the temporary paths replaced by what they are."""
    words = ["DATA" if i == 1 else ("OUT" if command[i - 1] == "-o" else ("OUT/cache.sqlite" if command[i - 1] == "--cache" else w))
             for i, w in enumerate(command)]
    return "localeval " + " ".join(words)


def judge_part(args: Any, tmp: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    data = tmp / "judge.jsonl"
    with data.open("w", encoding="utf-8") as out:
        for line in args.data.read_text(encoding="utf-8").splitlines()[: args.n]:
            row = json.loads(line)
            out.write(json.dumps({k: row[k] for k in ("id", "question", "answer", "contexts", "reference")}) + "\n")
    settings = [
        ("single process, all cores", []),
        ("single process, 1 thread", ["--threads", "1"]),
        ("ray, 1 actor x 1 CPU", ["--ray", "--ray-actors", "1", "--ray-cpus-per-actor", "1"]),
        ("ray, 2 actors x 1 CPU", ["--ray", "--ray-actors", "2", "--ray-cpus-per-actor", "1"]),
    ]
    figures = []
    for i, (name, extra) in enumerate(settings):
        out = tmp / f"judge-{i}"
        # --parallel 4, as when bench/results/ray-2026-11-22.json was taken (then the CPU default).
        command = ["score", str(data), "-m", JUDGE_METRICS, "--judge", args.judge, "--cache", str(out / "cache.sqlite"),
                   "--parallel", "4", "-o", str(out), "-q", *extra]
        result = timed(command, env)
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        usage = summary["judge"]["usage"]
        result.update(setting=name, command=shown(command),
                      samples=args.n, samples_per_minute=round(args.n / result["seconds"] * 60, 1),
                      judge_calls=sum(u["calls"] for u in usage.values()),
                      faithfulness_mean=summary["metrics"]["faithfulness"]["mean"],
                      parallel=summary["judge"].get("parallel"))
        print(f"{name:28} {result['seconds']:7.1f} s  {result['samples_per_minute']:6.1f} samples/min  "
              f"{result['judge_calls']} calls", flush=True)
        figures.append(result)
    return figures


def classical_part(args: Any, tmp: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    data = tmp / "big.jsonl"
    harness.write_synthetic_set(data, args.rows, seed=0)
    settings = [("single process", [])] + [
        (f"ray, {n} actor{'s' if n > 1 else ''} x 1 CPU", ["--ray", "--ray-actors", str(n)]) for n in args.actors]
    figures = []
    for i, (name, extra) in enumerate(settings):
        out = tmp / f"classical-{i}"
        command = ["score", str(data), "-m", "retrieval", "-o", str(out), "-q", *extra]
        result = timed(command, env)
        result.update(setting=name, command=shown(command),
                      rows=args.rows, rows_per_second=round(args.rows / result["seconds"]))
        if i:
            same = (out / "samples.jsonl").read_bytes() == (tmp / "classical-0" / "samples.jsonl").read_bytes()
            result["samples_jsonl_identical_to_single"] = same
        print(f"{name:28} {result['seconds']:7.1f} s  {result['rows_per_second']:8,} rows/s  "
              f"driver peak {result['driver_peak_mb']} MB", flush=True)
        figures.append(result)
    return figures


def main() -> None:
    parser = harness.parser(__doc__, "judge", judge="smollm2-135m-instruct-q4_1")
    parser.add_argument("--part", choices=["judge", "classical", "both"], default="both")
    parser.add_argument("--n", type=int, default=16, help="judge part: HaluEval rows (a multiple of 8 keeps "
                        "the judge windows of --parallel 4 whole)")
    parser.add_argument("--data", type=Path, default=harness.dev_data("halueval_qa_dev.jsonl"))
    parser.add_argument("--rows", type=int, default=1_000_000, help="classical part: synthetic rows")
    parser.add_argument("--actors", type=int, nargs="+", default=[2], help="classical part: Ray actor counts")
    args = parser.parse_args()
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    report: dict[str, Any] = {"date": date.today().isoformat(), "machine": {
        "cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()}}
    started = time.perf_counter()
    with harness.model_lock(), tempfile.TemporaryDirectory(prefix="ray-bench-") as tmp:
        if args.part in ("judge", "both"):
            report["judge"] = {"judge": args.judge, "metrics": JUDGE_METRICS, "data": args.data.name,
                               "figures": judge_part(args, Path(tmp), env)}
        if args.part in ("classical", "both"):
            report["classical"] = {"metrics": "retrieval", "figures": classical_part(args, Path(tmp), env)}
    report["total_wall_seconds"] = round(time.perf_counter() - started)
    from importlib import metadata

    report["versions"] = {p: metadata.version(p) for p in ("localeval", "ray", "llama_cpp_python")}
    target = harness.results_path("ray")
    if target.exists() and args.part != "both":  # one part re-run: keep the other's figures
        report = {**json.loads(target.read_text(encoding="utf-8")), **report}
    harness.write_json(target, report)


if __name__ == "__main__":
    main()
