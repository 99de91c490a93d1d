"""Which judge and embedder a run uses and how to run them: the options as given (JudgeOptions, the CLI's
judge flags) and as resolved once for the run (RunConfig)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping

from ..settings import Settings


@dataclass(frozen=True)
class JudgeOptions:
    """Everything that selects or configures the judge and the embedder; recorded in the summary."""

    judge: str | None = None  # registry name or .gguf path; None = $LOCALEVAL_JUDGE or the registry's default
    embedder: str | None = None  # registry name or model folder; None = $LOCALEVAL_EMBEDDER or the default
    n_ctx: int = 4096
    n_threads: int | None = None
    gpu_layers: int | None = None  # None = $LOCALEVAL_GPU_LAYERS or 0 (the CPU)
    seed: int = 0
    cache: str | None = None  # SQLite file; None = $LOCALEVAL_CACHE or .localeval-cache/judge.sqlite
    move_damaged_cache: bool = False  # a damaged cache file is moved aside and a new one started (judge/cache.py)
    prompts_dir: str | None = None
    lang: str | None = None  # force "en" or "zh"; None = detect per sample
    # The judge on an OpenAI-compatible inference server instead of in-process (judge/server.py).
    judge_url: str | None = None  # e.g. http://gpu-box:8080/v1
    judge_model: str | None = None  # the served model's name; None = the only one the server lists
    judge_api_key_env: str | None = None  # the environment variable holding the server's bearer token
    judge_sha256: str | None = None  # the served GGUF's sha256, when the user knows it (cache identity)
    judge_timeout: float | None = None  # seconds of silence from the server before a request is retried; None = http_client's
    parallel: int | None = None  # requests / sequences in flight; None = the backend's default
    #: The backend that runs the judge (judge/backends.py): None picks "server" with judge_url, else "batched"
    #: or "sequential" by `parallel`; a plugin's backend by its registered name.
    backend: str | None = None
    #: A folder `localeval train` wrote: its classifier answers the questions it was trained for.
    classifier: str | None = None

    def settings(self) -> dict[str, Any]:
        where = {"judge_url": self.judge_url, "judge_model": self.judge_model} if self.judge_url else {}
        trained = {"classifier": self.classifier} if self.classifier else {}
        return {"judge": self.judge or "default", **where, "n_ctx": self.n_ctx, "seed": self.seed,
                "lang": self.lang or "auto", "prompts": self.prompts_dir or "packaged", **trained}


#: Sequences in flight when --parallel is not given, as bench/engine_bench.py chose them (figures in the
#: docs' benchmark pages). On a CPU, 16 where llama.cpp's tiled matrix multiply takes the judge's weights
#: (K-quants, i-quants): from 8 rows a generated token costs a fraction of one decoded alone, so the batched
#: engine's generation lanes (llama_batched.py) pay off. Other weights (Q4_0, Q4_1, Q8_0, floats) gain
#: nothing from lanes and keep 4 and a quarter of the KV memory.
DEFAULT_PARALLEL_CPU = 4
DEFAULT_PARALLEL_CPU_TILED = 16
DEFAULT_PARALLEL_GPU = 32
#: Requests in flight to an inference server: its slots (llama-server --parallel) or vLLM's batch take more.
DEFAULT_PARALLEL_SERVER = 4
#: The CPU default's KV streams (one of --n-ctx tokens per sequence) may take at most this share of the
#: machine's memory; beyond it the default is DEFAULT_PARALLEL_CPU. Total memory, not free memory: the
#: default, and so the numbers, must not depend on what else happens to run.
KV_SHARE_OF_MEMORY = 0.25


@dataclass(frozen=True)
class RunConfig:
    """The judge options with what they leave open worked out once, where a run starts (build_metrics, a Ray
    actor, `generate`): the flags over the environment over the defaults (settings.Settings), the sequences
    in flight and the backend. Everything below the entry reads this instead of resolving again."""

    options: JudgeOptions
    settings: Settings

    @classmethod
    def resolve(cls, options: JudgeOptions | None = None, env: Mapping[str, str] | None = None) -> RunConfig:
        options = options or JudgeOptions()
        return cls(options, Settings.resolve(cache=options.cache, judge=options.judge, embedder=options.embedder,
                                             gpu_layers=options.gpu_layers, env=env))

    @property
    def judge(self) -> str | None:
        """The judge's registry name or path; None for the registry's default."""
        return self.settings.judge

    @property
    def embedder(self) -> str | None:
        return self.settings.embedder

    @property
    def cache_path(self) -> Path:
        return self.settings.cache_path

    @property
    def gpu_layers(self) -> int:
        """--gpu-layers, else $LOCALEVAL_GPU_LAYERS, else 0: read here so that the CPU/GPU defaults, Ray's
        actors and the model load all see the same value."""
        return self.settings.gpu_layers

    @cached_property
    def parallel(self) -> int:
        """--parallel, or the server's default, or the one measured for the device the judge runs on (read
        from the GGUF header on first use, so a run with no judge metric never opens the file)."""
        options = self.options
        if options.parallel is not None:
            return options.parallel
        if options.judge_url:
            return DEFAULT_PARALLEL_SERVER
        if self.gpu_layers != 0 and can_offload():
            return DEFAULT_PARALLEL_GPU
        return _cpu_default_parallel(self)

    @property
    def backend(self) -> str:
        """The registered backend that runs the judge."""
        if self.options.backend:
            return self.options.backend
        if self.options.judge_url:
            return "server"
        return "batched" if self.parallel > 1 else "sequential"


def can_offload() -> bool:
    """Whether this llama-cpp-python was built with a GPU backend; without one the layers stay on the CPU
    (llama_model.py says so), and so do the CPU's defaults, the summary and the results files."""
    from llama_cpp import llama_supports_gpu_offload

    return bool(llama_supports_gpu_offload())


def _cpu_default_parallel(config: RunConfig) -> int:
    """The CPU default for the configured judge, from its GGUF header (no model load)."""
    import os

    from .. import models
    from ..errors import ModelError
    from .gguf import read_header

    try:
        path = models.resolve(config.judge, "judge")
    except ModelError:  # opening the judge reports it
        return DEFAULT_PARALLEL_CPU
    header = read_header(path)
    if not header.tiled or header.kv_bytes_per_token is None:
        return DEFAULT_PARALLEL_CPU
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows) or no such value
        return DEFAULT_PARALLEL_CPU
    kv = DEFAULT_PARALLEL_CPU_TILED * config.options.n_ctx * header.kv_bytes_per_token
    return DEFAULT_PARALLEL_CPU_TILED if kv <= KV_SHARE_OF_MEMORY * memory else DEFAULT_PARALLEL_CPU
