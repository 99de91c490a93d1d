"""Option groups several commands share, written once: the judge and embedder options, and one flag per
registered metric option (derived from the metric registry, so a new metric's option needs no CLI edit).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

import click

from ..errors import OptionError
from ..judge.config import JudgeOptions
from ..settings import parse_pairs

Command = Callable[..., Any]


#: More resamples than a percentile interval can use, and the most that fit in memory a chunk at a time.
MAX_BOOTSTRAP = 1_000_000


class FiniteFloatRange(click.FloatRange):
    """click's FloatRange, which lets NaN through (every comparison with it is false), without it or infinity."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


class OutPath(click.Path):
    """Where results go. An empty value is refused rather than read as the current folder: it is nearly
    always `--out "$DIR"` with DIR unset, and would scatter result files over the working tree."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail("an empty path; give a file or folder name (is a shell variable unset?)", param, ctx)
        return super().convert(value, param, ctx)


def judge_options(command: Command) -> Command:
    """The judge and embedder options of every command that runs the judge; they arrive as **judge."""
    options = [
        click.option("--judge", help="Judge: a registered name (see `localeval models list`) or a .gguf file. "
                     "Default: the registry's default judge. Env: LOCALEVAL_JUDGE."),
        click.option("--embedder", help="Embedding model: a registered name or a sentence-transformers folder. "
                     "Env: LOCALEVAL_EMBEDDER."),
        click.option("--gpu-layers", type=int, default=None,
                     help="Layers to offload to the GPU (-1: all); needs llama-cpp-python built with CUDA or Metal. "
                     "Default: 0. Env: LOCALEVAL_GPU_LAYERS."),
        click.option("--n-ctx", type=click.IntRange(min=512), default=4096, show_default=True,
                     help="Judge context window in tokens; longer contexts are split into windows."),
        click.option("--threads", type=click.IntRange(min=1), help="CPU threads for the judge (default: $LOCALEVAL_THREADS, else one per physical core)."),
        click.option("--parallel", type=click.IntRange(min=1),
                     help="Judge sequences in flight: the batched engine decodes them together; 1 = one call at a "
                          "time. Default on CPU: 16 for a K-quant judge (the default one) whose 16 KV streams fit in a quarter "
                          "of the machine's memory, else 4; 32 with --gpu-layers or LOCALEVAL_GPU_LAYERS. "
                          "With --judge-url: requests in flight (default 4; match the server's slots, e.g. "
                          "llama-server -np)."),
        click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True,
                     help="Judge seed (decoding is greedy); `generate` also samples its chunks with it."),
        click.option("--cache", type=click.Path(path_type=Path),
                     help="Judge cache file (SQLite). Default: $LOCALEVAL_CACHE or .localeval-cache/judge.sqlite."),
        click.option("--move-damaged-cache", is_flag=True,
                     help="If the judge cache file is damaged (a crash, a full disk, a bad copy), move it aside to "
                          "FILE.damaged-TIME and start a new one, instead of stopping."),
        click.option("--prompts", "prompts_dir", type=click.Path(file_okay=False, path_type=Path),
                     help="Folder with your own prompt files (en/NAME.md, zh/NAME.md); missing ones fall back to ours."),
        click.option("--lang", type=click.Choice(["en", "zh"]), help="Prompt language for every sample (default: detected per sample)."),
        click.option("--judge-url", metavar="URL", help="Run the judge on an OpenAI-compatible inference server (llama-server, "
                     "vLLM, llama-cpp-python) at this base URL, e.g. http://gpu-box:8080/v1, instead of loading a GGUF "
                     "here; nothing is sent anywhere else."),
        click.option("--judge-model", metavar="NAME", help="With --judge-url: the served model (default: the only one the "
                     "server lists)."),
        click.option("--judge-api-key-env", metavar="VAR", help="With --judge-url: the environment variable holding the "
                     "server's API key (sent as a bearer token; never stored)."),
        click.option("--judge-sha256", metavar="HEX", help="With --judge-url: the sha256 of the served GGUF, so that "
                     "cached answers name the exact weights."),
        click.option("--judge-timeout", type=FiniteFloatRange(min=0, min_open=True), metavar="SECONDS",
                     help="With --judge-url: how long to wait for the server to connect or to send the next bytes of an "
                     "answer before the request is retried (default 600)."),
        click.option("--judge-backend", "backend", metavar="NAME", help="What runs the judge: sequential, batched, "
                     "server, or a plugin's backend (entry-point group localeval.backends). Default: server with "
                     "--judge-url, else batched, or sequential with --parallel 1."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def judge_settings(judge: str | None = None, embedder: str | None = None, gpu_layers: int | None = None, n_ctx: int = 4096,
                   threads: int | None = None, parallel: int | None = None, seed: int = 0, cache: Path | None = None,
                   prompts_dir: Path | None = None, lang: str | None = None, move_damaged_cache: bool = False,
                   **server: Any) -> JudgeOptions:
    """The **judge keyword arguments of `judge_options` as JudgeOptions (the server options by their names)."""
    return JudgeOptions(judge=judge, embedder=embedder, n_ctx=n_ctx, n_threads=threads, parallel=parallel,
                        gpu_layers=gpu_layers, seed=seed, cache=str(cache) if cache else None,
                        move_damaged_cache=move_damaged_cache,
                        prompts_dir=str(prompts_dir) if prompts_dir else None, lang=lang, **server)


def interval_options(n_boot: int, what: str) -> Callable[[Command], Command]:
    """--n-boot, --confidence and --seed of the commands that draw bootstrap intervals (`what` they are for)."""

    def decorate(command: Command) -> Command:
        options = [
            click.option("--n-boot", default=n_boot, show_default=True, type=click.IntRange(100, MAX_BOOTSTRAP),
                         help=f"Bootstrap resamples for {what}."),
            click.option("--confidence", default=0.95, show_default=True,
                         type=FiniteFloatRange(0, 1, min_open=True, max_open=True), help="Confidence level of the intervals."),
            click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0), help="Seed of the bootstrap's random generator."),
        ]
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


def ray_options(command: Command) -> Command:
    """--ray [ADDRESS] and the actor pool's shape; they arrive as **ray_* and are read by pop_ray_options."""
    options = [
        click.option("--ray", "ray_address", is_flag=False, flag_value="", default=None, metavar="[ADDRESS]",
                     help="Score on a Ray cluster (pip install 'localeval[ray]'): ADDRESS of a running cluster "
                          "(host:port, or auto); without it, a local Ray instance is started for the run."),
        click.option("--ray-actors", type=click.IntRange(min=1),
                     help="With --ray: scoring actors, each with its own judge and embedder. Default: as many as "
                          "the nodes' CPUs (and GPUs) hold."),
        click.option("--ray-cpus-per-actor", type=FiniteFloatRange(min=0, min_open=True),
                     help="With --ray: CPUs reserved per actor (fractions allowed); the judge's threads. Default: 1."),
        click.option("--ray-gpus-per-actor", type=FiniteFloatRange(min=0),
                     help="With --ray: GPUs reserved per actor (fractions allowed, e.g. 0.5), with --gpu-layers -1. "
                          "Default: 0."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def pop_ray_options(kwargs: dict[str, Any]) -> Any:
    """RayOptions when --ray was given, else None (and the --ray-* options then are a mistake)."""
    from ..distributed import RayOptions

    address = kwargs.pop("ray_address")
    shape = {name: kwargs.pop(f"ray_{name}") for name in ("actors", "cpus_per_actor", "gpus_per_actor")}
    if address is None:
        given = [f"--ray-{name.replace('_', '-')}" for name, value in shape.items() if value is not None]
        if given:
            raise click.UsageError(f"{given[0]} needs --ray")
        return None
    return RayOptions(address=address or None, **{k: v for k, v in shape.items() if v is not None})


def metric_options(command: Command) -> Command:
    """One flag per metric option in the registry; the values arrive as keyword arguments by option name."""
    from ..metrics.registry import options

    for option in reversed(list(options().values())):
        if isinstance(option.default, bool):
            flag = f"{option.flag}/--no-{option.flag[2:]}"
            command = click.option(flag, option.name, default=option.default, show_default=True, help=option.help)(command)
        elif option.choices is not None:
            command = click.option(option.flag, option.name, type=click.Choice(list(option.choices)), default=option.default,
                                   show_default=True, help=option.help)(command)
        elif isinstance(option.default, int):
            command = click.option(option.flag, option.name, type=click.IntRange(option.minimum, option.maximum),
                                   default=option.default, show_default=True, help=option.help)(command)
        else:
            command = click.option(option.flag, option.name, default=option.default, show_default=True,
                                   metavar=option.metavar, help=option.help)(command)
    return command


def pop_metric_options(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Take the metric options out of a command's keyword arguments."""
    from ..metrics.registry import options

    return {name: kwargs.pop(name) for name in options() if name in kwargs}


def pairs_callback(example: str) -> Callable[[click.Context, click.Parameter, tuple[str, ...]], dict[str, str]]:
    """A click callback reading repeatable KEY=VALUE options into a dict."""

    def callback(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
        try:
            return parse_pairs(values, param.opts[0], example)
        except OptionError as exc:
            raise click.BadParameter(str(exc)) from None

    return callback


def run_labels(values: tuple[str, ...], runs: tuple[Path, ...]) -> dict[str, Path]:
    """RUN=LABELS pairs; RUN must be one of the runs given (split at the last '=', since RUN is a path).
    With a single run, a bare LABELS belongs to it, whether or not its file name holds an '='."""
    names = [str(r) for r in runs]
    bare: dict[str, Path] = {}
    if len(names) == 1:
        paired = []
        for v in values:
            run, eq, _ = v.rpartition("=")
            if eq and run in names:
                paired.append(v)
            elif eq and not Path(v).exists():  # neither RUN=LABELS nor a file named so
                raise OptionError(f"--labels '{v}': {run} is not one of the runs given ({names[0]}), "
                                  f"and there is no labels file named '{v}'")
            else:
                bare[names[0]] = Path(v)
        values = tuple(paired)
    pairs = parse_pairs(values, "--labels", "RUN=LABELS", last=True)
    for run in pairs:
        if run not in names:
            raise OptionError(f"--labels '{run}=...': {run} is not one of the runs given ({', '.join(sorted(names))})")
    return {**{run: Path(path) for run, path in pairs.items()}, **bare}
