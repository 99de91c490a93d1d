"""The judge backends by name: the built-in ones (sequential and batched llama.cpp, an inference server)
and any a package adds through the entry-point group `localeval.backends`.

A backend is a class that keeps `backend.JudgeBackend` and declares a `name` and two class methods:
`check(config)` (cheap: no model loads; a bad option fails before the input is read) and
`open(config, cache)`. It may also declare `check_options(config)`: the part of `check` that reads no file,
which a Ray run makes on the driver before Ray starts (its models are on the nodes, which check the rest).
`open_judge` puts the run's backend behind the facade (cache, accounting, validation), so metrics never see
which one answers them.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Protocol

from ..errors import OptionError
from .cache import JudgeCache
from .config import JudgeOptions, RunConfig
from .facade import Judge

ENTRY_POINT_GROUP = "localeval.backends"
BUILTIN_MODULES = ("llama_sequential", "llama_batched", "server")


class BackendClass(Protocol):
    """What the registry needs of a backend class (its instances keep backend.JudgeBackend)."""

    name: str

    @classmethod
    def check(cls, config: RunConfig) -> None: ...

    @classmethod
    def open(cls, config: RunConfig, cache: JudgeCache) -> Any: ...


_BACKENDS: dict[str, type] = {}
_LOADED: list[bool] = []


def register_backend(cls: type) -> type:
    """Class decorator: make a backend class selectable by its `name` (--judge-backend NAME)."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name or not all(callable(getattr(cls, m, None)) for m in ("check", "open")):
        raise ValueError(f"backend class {cls.__name__} needs a `name` and the class methods check(config) and "
                         "open(config, cache)")
    existing = _BACKENDS.get(name)
    if existing is not None and existing is not cls:
        raise ValueError(f"backend name '{name}' is already registered by {existing.__module__}.{existing.__name__}")
    _BACKENDS[name] = cls
    return cls


def backend_names() -> list[str]:
    """The registered backends, by name (an order that does not depend on which module was imported first)."""
    _load()
    return sorted(_BACKENDS)


def backend_class(name: str) -> BackendClass:
    """The registered backend `name`; OptionError listing the known ones otherwise."""
    _load()
    if name not in _BACKENDS:
        raise OptionError(f"--judge-backend '{name}' is not a judge backend; known: {', '.join(backend_names())}")
    return _BACKENDS[name]  # type: ignore[return-value]


def check_backend(config: RunConfig) -> None:
    """The run's backend, checked without loading a model (a model file's presence, a URL's form)."""
    backend_class(config.backend).check(config)


def check_backend_options(config: RunConfig) -> None:
    """What of the run's backend needs no file checked (where the models are on other machines)."""
    check_options = getattr(backend_class(config.backend), "check_options", None)
    if check_options is not None:
        check_options(config)


def open_judge(config: RunConfig | JudgeOptions, cache: JudgeCache | None = None) -> Judge:
    """The run's judge: its backend behind the facade, with the cache `cache` (a Ray actor's local copy
    that forwards its new entries) or the file the configuration names. Judge options (from a script) are
    resolved here."""
    config = config if isinstance(config, RunConfig) else RunConfig.resolve(config)
    cache = cache if cache is not None else JudgeCache(config.cache_path)
    return Judge(backend_class(config.backend).open(config, cache), cache)


def load_judge(model: str | Path | None = None, *, cache: str | Path | None = None, n_ctx: int = 4096,
               n_threads: int | None = None, n_gpu_layers: int | None = None, seed: int = 0, **backend_options: Any) -> Judge:
    """The sequential in-process judge from a model name or path, for scripts and tests; `backend_options`
    (reuse_prefix, verbose) go to llama_sequential.SequentialLlamaBackend."""
    config = RunConfig.resolve(JudgeOptions(judge=None if model is None else str(model),
                                            cache=None if cache is None else str(cache), n_ctx=n_ctx,
                                            n_threads=n_threads, gpu_layers=n_gpu_layers, seed=seed, parallel=1))
    judge_cache = JudgeCache(config.cache_path)
    return Judge(backend_class("sequential").open(config, judge_cache, **backend_options), judge_cache)


def _load() -> None:
    """The built-in backends, then plugins, once; a plugin that fails to load is reported and left out."""
    if _LOADED:
        return
    _LOADED.append(True)
    from importlib import import_module
    from importlib.metadata import entry_points

    for module in BUILTIN_MODULES:
        import_module(f"{__package__}.{module}")
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = entry.load()
            if loaded not in _BACKENDS.values():
                register_backend(loaded)
        except Exception as exc:  # a broken third-party plugin must not break localeval
            warnings.warn(f"judge backend plugin '{entry.name}' ({entry.value}) is left out: {exc}", stacklevel=2)
