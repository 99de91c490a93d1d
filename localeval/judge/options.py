"""Which judge and embedder a run uses, and how to run them; `open_judge` picks the backend.

A new backend adds its options here and one branch to `open_judge`; metrics never see which backend
answers them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .facade import Judge

@dataclass(frozen=True)
class JudgeOptions:
    """Everything that selects or configures the judge and the embedder; recorded in the summary."""

    judge: str | None = None  # registry name or .gguf path; None = $LOCALEVAL_JUDGE or the registry's default
    embedder: str | None = None  # registry name or model folder; None = $LOCALEVAL_EMBEDDER or the default
    n_ctx: int = 4096
    n_threads: int | None = None
    gpu_layers: int = 0
    seed: int = 0
    cache: str | None = None  # SQLite file; None = $LOCALEVAL_CACHE or .localeval-cache/judge.sqlite
    prompts_dir: str | None = None
    lang: str | None = None  # force "en" or "zh"; None = detect per sample
    # The judge on an OpenAI-compatible inference server instead of in-process (judge/server.py).
    judge_url: str | None = None  # e.g. http://gpu-box:8080/v1
    judge_model: str | None = None  # the served model's name; None = the only one the server lists
    judge_api_key_env: str | None = None  # the environment variable holding the server's bearer token
    judge_sha256: str | None = None  # the served GGUF's sha256, when the user knows it (cache identity)
    parallel: int | None = None  # requests / sequences in flight; None = the backend's default

    def settings(self) -> dict[str, Any]:
        where = {"judge_url": self.judge_url, "judge_model": self.judge_model} if self.judge_url else {}
        return {"judge": self.judge or "default", **where, "n_ctx": self.n_ctx, "seed": self.seed,
                "lang": self.lang or "auto", "prompts": self.prompts_dir or "packaged"}


#: Sequences in flight when --parallel is not given (bench/engine_bench.py measured these; README). On a
#: CPU, 16 where llama.cpp's tiled matrix multiply takes the judge's weights (K-quants, i-quants): from 8
#: rows a generated token costs a fraction of one decoded alone, so the batched engine's generation lanes
#: (llama_batched.py) pay off: 2.3-2.8x samples/min over --parallel 1 against 1.93x at 4. Other weights
#: (Q4_0, Q4_1, Q8_0, floats) gain nothing from lanes (the Q4_1 test judge: the same time at 4 and 16) and
#: keep 4 and a quarter of the KV memory.
DEFAULT_PARALLEL_CPU = 4
DEFAULT_PARALLEL_CPU_TILED = 16
DEFAULT_PARALLEL_GPU = 32
#: The CPU default's KV streams (one of --n-ctx tokens per sequence) may take at most this share of the
#: machine's memory; beyond it the default is DEFAULT_PARALLEL_CPU. Total memory, not free memory: the
#: default, and so the numbers, must not depend on what else happens to run.
KV_SHARE_OF_MEMORY = 0.25


def parallel_of(options: JudgeOptions) -> int:
    """--parallel, or the default for the server, or the measured one for the device the judge runs on."""
    if options.parallel is not None:
        return options.parallel
    if options.judge_url:
        from .server import DEFAULT_PARALLEL

        return DEFAULT_PARALLEL
    if options.gpu_layers != 0:
        return DEFAULT_PARALLEL_GPU
    return cpu_default_parallel(options)


def cpu_default_parallel(options: JudgeOptions) -> int:
    """The CPU default for the judge the options name, from its GGUF header (no model load)."""
    import os

    from .. import models
    from ..errors import ModelError
    from ..settings import Settings
    from .gguf import read_header

    try:
        path = models.resolve(Settings.resolve(judge=options.judge).judge, "judge")
    except ModelError:  # opening the judge reports it
        return DEFAULT_PARALLEL_CPU
    header = read_header(path)
    if not header.tiled or header.kv_bytes_per_token is None:
        return DEFAULT_PARALLEL_CPU
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows) or no such value
        return DEFAULT_PARALLEL_CPU
    kv = DEFAULT_PARALLEL_CPU_TILED * options.n_ctx * header.kv_bytes_per_token
    return DEFAULT_PARALLEL_CPU_TILED if kv <= KV_SHARE_OF_MEMORY * memory else DEFAULT_PARALLEL_CPU


def open_judge(options: JudgeOptions, cache: Any = None) -> Judge:
    """Load the judge the options name, behind the backend that runs it, with its cache: the batched engine
    for more than one sequence in flight, the sequential backend for --parallel 1. `cache` (a JudgeCache)
    replaces the file options.cache names, e.g. a Ray actor's local copy that forwards its new entries."""
    from ..settings import Settings
    from .cache import JudgeCache

    settings = Settings.resolve(cache=options.cache, judge=options.judge)
    cache = cache if cache is not None else JudgeCache(settings.cache_path)
    if options.judge_url:
        return Judge(_server(options), cache)
    backend = _in_process(settings.judge, cache, n_ctx=options.n_ctx, n_threads=options.n_threads,
                          n_gpu_layers=options.gpu_layers, seed=options.seed, parallel=parallel_of(options))
    return Judge(backend, cache)


def load_judge(model: str | Path | None = None, *, cache: str | Path | None = None, n_ctx: int = 4096,
               n_threads: int | None = None, n_gpu_layers: int = 0, seed: int = 0, **backend_options: Any) -> Judge:
    """The in-process judge from a model name or path, for scripts and tests; `backend_options`
    (reuse_prefix, verbose) go to LlamaCppBackend."""
    from ..settings import Settings
    from .cache import JudgeCache

    settings = Settings.resolve(cache=cache, judge=None if model is None else str(model))
    judge_cache = JudgeCache(settings.cache_path)
    backend = _in_process(settings.judge, judge_cache, n_ctx=n_ctx, n_threads=n_threads, n_gpu_layers=n_gpu_layers,
                          seed=seed, **backend_options)
    return Judge(backend, judge_cache)


def _server(options: JudgeOptions) -> Any:
    import re

    from ..errors import OptionError
    from ..settings import secret_from_env
    from .server import ServerBackend

    if options.judge:
        raise OptionError("--judge names a model file to load here and --judge-url a server that runs one; give only one")
    if options.judge_sha256 is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", options.judge_sha256):
        raise OptionError(f"--judge-sha256 '{options.judge_sha256}' is not a sha256 (64 hexadecimal digits)")
    api_key = secret_from_env(options.judge_api_key_env, "--judge-api-key-env") if options.judge_api_key_env else None
    return ServerBackend(options.judge_url or "", model=options.judge_model, api_key=api_key,
                         model_sha256=options.judge_sha256.lower() if options.judge_sha256 else None,
                         n_ctx=options.n_ctx, seed=options.seed, parallel=parallel_of(options))


def _in_process(model: str | None, cache: Any, n_threads: int | None, parallel: int = 1, **options: Any) -> Any:
    from .. import models
    from ..settings import physical_cores

    path = models.resolve(model, "judge")
    sha256 = models.model_sha256(path, "judge", cache.path.parent)
    if parallel > 1:
        from .llama_batched import BatchedLlamaBackend

        return BatchedLlamaBackend(path, sha256, parallel=parallel, n_threads=n_threads or physical_cores(), **options)
    from .llama_inprocess import LlamaCppBackend

    return LlamaCppBackend(path, sha256, n_threads=n_threads or physical_cores(), **options)
