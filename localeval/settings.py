"""Where things live and which models are used by default: resolved in one place, flags > environment >
defaults, so no other module reads the environment.

| setting    | flag         | environment          | default                                                      |
|------------|--------------|----------------------|--------------------------------------------------------------|
| models_dir | -            | LOCALEVAL_MODELS     | the checkout's models/ when run from one, else the user's data folder |
| cache_path | --cache      | LOCALEVAL_CACHE      | .localeval-cache/judge.sqlite under the current folder       |
| judge      | --judge      | LOCALEVAL_JUDGE      | the registry's default judge                                 |
| embedder   | --embedder   | LOCALEVAL_EMBEDDER   | the registry's default embedder                              |
| gpu_layers | --gpu-layers | LOCALEVAL_GPU_LAYERS | 0 (the judge on the CPU); -1 offloads every layer            |
| threads    | --threads    | LOCALEVAL_THREADS    | one per physical core (a container's CPU quota is not seen)  |

A judge server's API key is read from the environment variable the user names (--judge-api-key-env), so
it never appears on a command line, in a result file or in a cache key.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from .errors import OptionError
from .resources import CHECKOUT_MODELS

MODELS_ENV = "LOCALEVAL_MODELS"
CACHE_ENV = "LOCALEVAL_CACHE"
JUDGE_ENV = "LOCALEVAL_JUDGE"
EMBEDDER_ENV = "LOCALEVAL_EMBEDDER"
GPU_LAYERS_ENV = "LOCALEVAL_GPU_LAYERS"
THREADS_ENV = "LOCALEVAL_THREADS"
CACHE_RELATIVE = Path(".localeval-cache") / "judge.sqlite"


@dataclass(frozen=True)
class Settings:
    models_dir: Path
    cache_path: Path
    judge: str | None
    embedder: str | None
    #: --gpu-layers as given, else the text of $LOCALEVAL_GPU_LAYERS: read (and refused if malformed) only
    #: where a judge is about to run, so a typo there cannot stop `localeval models` or a retrieval-only run.
    gpu_layers_given: int | str = 0

    @property
    def gpu_layers(self) -> int:
        """Judge layers offloaded to the GPU (-1: all)."""
        given = self.gpu_layers_given
        if isinstance(given, int):
            return given
        try:
            return int(given) if given.strip() else 0
        except ValueError:
            raise OptionError(f"{GPU_LAYERS_ENV}={given.strip()!r} is not a whole number of layers to offload to "
                              "the GPU (-1: all, 0: none)") from None

    @classmethod
    def resolve(cls, *, cache: str | Path | None = None, judge: str | None = None, embedder: str | None = None,
                gpu_layers: int | None = None, env: Mapping[str, str] | None = None) -> Settings:
        """Flags given here win over the environment, which wins over the defaults."""
        env = os.environ if env is None else env
        return cls(
            models_dir=Path(env[MODELS_ENV]) if env.get(MODELS_ENV) else default_models_dir(env),
            cache_path=Path(cache) if cache else (Path(env[CACHE_ENV]) if env.get(CACHE_ENV) else Path.cwd() / CACHE_RELATIVE),
            judge=judge or env.get(JUDGE_ENV) or None,
            embedder=embedder or env.get(EMBEDDER_ENV) or None,
            gpu_layers_given=gpu_layers if gpu_layers is not None else env.get(GPU_LAYERS_ENV, ""),
        )


def current() -> Settings:
    """The settings from the environment as it is now (tests change it between calls, so nothing is memoised)."""
    return Settings.resolve()


def default_models_dir(env: Mapping[str, str]) -> Path:
    """A source checkout keeps weights in its models/ folder (beside registry.json, as `make install` puts
    them); an installed wheel keeps them in the user's data folder."""
    if (CHECKOUT_MODELS / "registry.json").is_file():
        return CHECKOUT_MODELS
    data_home = Path(env["XDG_DATA_HOME"]) if env.get("XDG_DATA_HOME") else Path.home() / ".local" / "share"
    return data_home / "localeval" / "models"


def secret_from_env(variable: str, flag: str, env: Mapping[str, str] | None = None) -> str:
    """The value of the environment variable a flag names (a token: never echoed in messages)."""
    value = (os.environ if env is None else env).get(variable, "")
    if not value.strip():
        raise OptionError(f"{flag} {variable}: the environment variable {variable} is not set or empty")
    return value.strip()


def judge_threads(env: Mapping[str, str] | None = None) -> int:
    """The llama.cpp judge's CPU threads when --threads is not given: $LOCALEVAL_THREADS, else one per physical
    core. A container's CPU quota is invisible to /proc/cpuinfo, and llama.cpp's threads spin: more threads
    than the CPUs a process really has slow it manyfold, so a site (or a test run beside other work) sets it."""
    given = (os.environ if env is None else env).get(THREADS_ENV, "").strip()
    if not given:
        return physical_cores()
    try:
        threads = int(given)
    except ValueError:
        threads = 0
    if threads < 1 or not given.isascii():
        raise OptionError(f"{THREADS_ENV}={given!r} is not a whole number of threads, 1 or more")
    return threads


def physical_cores() -> int:
    """llama.cpp runs best with one thread per physical core; hyper-threads only add contention."""
    try:
        pairs = set()
        physical = core = None
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "physical id":
                physical = value.strip()
            elif key == "core id":
                core = value.strip()
                pairs.add((physical, core))
        count = len(pairs)
    except OSError:
        count = 0
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(count or max(available // 2, 1), available))


def parse_pairs(values: Iterable[str], flag: str, example: str, last: bool = False) -> dict[str, str]:
    """'KEY=VALUE' option values as a dict; `last` splits at the last '=' (for values that are paths
    holding '=' on the left, e.g. RUN=LABELS). A malformed pair names the flag and shows an example."""
    pairs: dict[str, str] = {}
    for value in values:
        key, sep, rest = value.rpartition("=") if last else value.partition("=")
        if not sep or not key.strip() or not rest.strip():
            raise OptionError(f"{flag} '{value}' is not {example}")
        pairs[key.strip()] = rest.strip()
    return pairs
