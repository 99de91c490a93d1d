"""What the benchmarks share: the repository on sys.path, the dev data, results files, the model lock, the
common options, and the measurements more than one benchmark takes.

A benchmark imports it before anything of localeval (`python bench/NAME.py` puts bench/ on sys.path):

    import harness

- `dev_data(*parts)`: the dev sets' folder, from $LOCALEVAL_DEV_DATA, else `<repo>/../shared/data`;
- `results_path(kind, *parts)`: bench/results/<kind>-<date>[-<part>...].json; `write_json(path, data)`;
- `model_lock()`: held while a benchmark runs models; the tests take the same lock;
- `parser(doc, *names, **defaults)`: argparse with the module docstring as --help and the common options;
- `device`, `ceiling`, `write_synthetic_set`, `run_peer`: what several benchmarks measure or run alike.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any, Iterator

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # tests.browser, and localeval itself where it is not installed
    sys.path.insert(0, str(REPO))

RESULTS = REPO / "bench" / "results"
#: The `localeval` command of the environment running the benchmark.
CLI = str(Path(sys.executable).parent / "localeval")
CACHE = REPO / ".localeval-cache"
#: The peers of bench/ragas_compare.py, each in a venv of its own, and the llama.cpp server that judges for them.
PEER_VENVS = {"ragas": REPO / "bench" / ".venv-ragas", "deepeval": REPO / "bench" / ".venv-deepeval"}
SERVER_VENV = REPO / "bench" / ".venv-server"
#: Neither peer reports anything home, and nothing reaches a hub.
PEER_ENV = {"RAGAS_DO_NOT_TRACK": "true", "DEEPEVAL_TELEMETRY_OPT_OUT": "1", "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1"}
#: Held by every process that runs a model (the tests too): on 2 cores two llama.cpp processes slow each other
#: about tenfold.
LOCK = Path("/tmp/localeval-model.lock")


def dev_data(*parts: str) -> Path:
    """The dev sets' folder ($LOCALEVAL_DEV_DATA, else the shared one beside the repository), or a path in it."""
    return Path(os.environ.get("LOCALEVAL_DEV_DATA") or REPO.parent / "shared" / "data").joinpath(*parts)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# ---- results ------------------------------------------------------------------------------------

def judge_label(judge: str | None) -> str:
    """A judge as a results file names it: its registry name, a .gguf's file stem, or 'default'."""
    if not judge:
        return "default"
    return Path(judge).stem if judge.endswith(".gguf") else judge


def results_path(kind: str, *parts: str | None) -> Path:
    """bench/results/<kind>-<today>[-<part>...].json; empty parts are left out, spaces become '_'."""
    name = "-".join([kind, date.today().isoformat(), *(p.replace(" ", "_") for p in parts if p)])
    return RESULTS / f"{name}.json"


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"results in {path.relative_to(REPO) if path.is_relative_to(REPO) else path}")
    return path


# ---- the model lock -----------------------------------------------------------------------------

_held = 0


@contextmanager
def model_lock() -> Iterator[None]:
    """flock on /tmp/localeval-model.lock for the block; re-entrant within a process (a benchmark holding it
    may call `ceiling`, which takes it too)."""
    global _held
    if _held:
        _held += 1
        try:
            yield
        finally:
            _held -= 1
        return
    with LOCK.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for {LOCK}: another process runs a model", file=sys.stderr, flush=True)
            fcntl.flock(handle, fcntl.LOCK_EX)
        _held = 1
        try:
            yield
        finally:
            _held = 0
            fcntl.flock(handle, fcntl.LOCK_UN)


# ---- common options -----------------------------------------------------------------------------

#: Options several benchmarks take: flags and argparse settings; `parser` changes a default on request.
OPTIONS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "judge": (("--judge",), {"default": None, "help": "registry name or .gguf (default: the default judge)"}),
    "threads": (("--threads",), {"type": int, "default": None, "help": "llama.cpp threads (default: physical cores)"}),
    "n_ctx": (("--n-ctx",), {"type": int, "default": 4096, "help": "the judge's context in tokens"}),
    "gpu_layers": (("--gpu-layers",), {"type": int, "default": None,
                                       "help": "layers on the GPU (-1: all; default: $LOCALEVAL_GPU_LAYERS or 0)"}),
    "parallel": (("--parallel",), {"type": int, "default": None,
                                   "help": "sequences in flight (default: the judge's own)"}),
    "limit": (("--limit",), {"type": int, "default": 40, "help": "pairs or rows per set"}),
    "seed": (("--seed",), {"type": int, "default": 0, "help": "seed of the rows drawn"}),
    "cache": (("--cache",), {"default": None, "help": "the judge cache file"}),
    "prompts": (("--prompts",), {"default": None, "help": "a prompts folder to use instead of the packaged prompts "
                                 "(e.g. an earlier commit's, for a before figure)"}),
    "tag": (("--tag",), {"default": "", "help": "suffix of the results file name"}),
}


def parser(doc: str | None, *names: str, **defaults: Any) -> argparse.ArgumentParser:
    """A parser whose --help is the benchmark's docstring, with the named common options; keywords change
    their defaults: `parser(__doc__, "judge", "tag", judge="smollm2-135m-instruct-q4_1")`."""
    made = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name in names:
        flags, settings = OPTIONS[name]
        made.add_argument(*flags, **{**settings, **({"default": defaults[name]} if name in defaults else {})})
    return made


# ---- shared measurements ------------------------------------------------------------------------

def device(gpu_layers: int | None) -> str:
    """Where the judge runs, as results files name it: the GPU's name, or cpu-<cores>core (also when
    llama-cpp-python was built without GPU support, where the layers stay on the CPU)."""
    from localeval.judge.config import can_offload
    from localeval.settings import current, physical_cores

    if (current().gpu_layers if gpu_layers is None else gpu_layers) and can_offload():
        try:
            return subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                                  text=True, check=True).stdout.strip().splitlines()[0]
        except (OSError, subprocess.CalledProcessError, IndexError):
            return "gpu"
    return f"cpu-{physical_cores()}core"


FILLER = ("The committee reviewed the quarterly report, noted the figures for each region, and asked the "
          "authors to explain the changes since the previous year in plain language. ")


def ceiling(judge_name: str | None, *, n_ctx: int = 4096, threads: int | None = None, prompt_tokens: int = 512,
            gen_tokens: int = 64, repeats: int = 3, gpu_layers: int | None = None) -> dict[str, Any]:
    """The llama.cpp ceiling (bench/llama_ceiling.py): prompt and generated tokens per second of the judge loaded
    as localeval loads it; the best of `repeats`, since the other core's noise only ever slows."""
    from localeval.judge import load_judge
    from localeval.settings import physical_cores

    with model_lock(), tempfile.TemporaryDirectory() as tmp:
        judge = load_judge(judge_name, n_ctx=n_ctx, n_threads=threads, n_gpu_layers=gpu_layers,
                           cache=Path(tmp) / "judge.sqlite")
        try:
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
                    llm.eval([llm.sample(temp=0.0)])
                gen_s.append(time.perf_counter() - start)
            model = judge.backend.model_path.name
        finally:
            judge.close()
    return {"prompt_tokens": len(words), "prompt_tok_per_s": round(len(words) / min(prompt_s), 2),
            "gen_tokens": gen_tokens, "gen_tok_per_s": round(gen_tokens / min(gen_s), 2), "repeats": repeats,
            "model": model, "threads": threads or physical_cores(), "n_ctx": n_ctx, "device": device(gpu_layers)}


def write_synthetic_set(path: Path, rows: int, seed: int) -> None:
    """A retrieval test set (bench/streaming_bench.py's): synthetic RAG outputs with 10 ranked contexts and
    graded relevance."""
    import numpy as np

    rng = np.random.default_rng(seed)
    with path.open("w", encoding="utf-8") as handle:
        for i in range(rows):
            docs = rng.integers(0, 1000, size=10)
            relevant = rng.integers(0, 1000, size=3)
            record = {
                "id": f"q{i}",
                "question": f"synthetic question {i}?",
                "answer": "a synthetic answer",
                "contexts": [{"id": f"d{d}", "text": f"passage {d}"} for d in docs],
                "reference_doc_ids": {f"d{d}": int(g) for d, g in zip(relevant, rng.integers(1, 4, size=3))},
            }
            handle.write(json.dumps(record) + "\n")


def server_version() -> str:
    """The version of the xllamacpp wheel that serves the peers' judge (bench/judge_server.py)."""
    done = subprocess.run([str(SERVER_VENV / "bin" / "python"), "-c",
                           "from importlib.metadata import version; print(version('xllamacpp'))"],
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


def run_peer(tool: str, records: list[dict[str, Any]], model: Path, embedder: Path, n_ctx: int, threads: int,
             workdir: Path, *, mode: str = "per-sample", slots: int = 1, metrics: str | None = None,
             settings: dict[str, str] | None = None) -> dict[str, Any]:
    """A peer ("ragas" or "deepeval") on `records` (localeval's input format), in its own venv
    (bench/<tool>_side.py), its judge llama.cpp's server (bench/judge_server.py, `slots` requests side by side)
    serving `model` on 127.0.0.1; the caller holds the model lock. `metrics` is Ragas's --metrics; `settings`
    are environment variables the peer reads (its own settings, not the server's)."""
    from localeval.judge.llama_server import free_port, serving

    python, server = PEER_VENVS[tool] / "bin" / "python", SERVER_VENV / "bin" / "python"
    for needed in (python, server):
        if not needed.exists():
            raise SystemExit(f"error: {needed} is missing; `make peers` creates it (bench/requirements-*.txt)")
    data = workdir / "slice.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    out = workdir / f"{tool}.jsonl"
    env = {**os.environ, **PEER_ENV}
    port = free_port()
    command = [str(server), str(REPO / "bench" / "judge_server.py"), "--model", str(model), "--port", str(port),
               "--slots", str(slots), "--n-ctx", str(n_ctx), "--threads", str(threads)]
    side = [str(python), str(REPO / "bench" / f"{tool}_side.py"), "--data", str(data), "--out", str(out),
            "--mode", mode, *(["--embedder", str(embedder)] if tool == "ragas" else []),
            *(["--metrics", metrics] if metrics else [])]
    start = time.perf_counter()
    with (workdir / f"{tool}-server.log").open("w") as log, serving(command, port, log=log, env=env) as (url, _):
        server_start = time.perf_counter() - start
        subprocess.run([*side, "--base-url", url], env={**env, **(settings or {})}, check=True, cwd=workdir)
    lines = read_jsonl(out)
    header, samples = lines[0], [line for line in lines[1:] if "whole_set" not in line]
    totals = next((line["whole_set"] for line in lines[1:] if "whole_set" in line), None)
    return {"setup_seconds": round(server_start + header["setup_seconds"], 3), "server_start_seconds":
            round(server_start, 3), "versions": header["versions"], "samples": samples, "whole_set": totals}

