"""llama.cpp with ggml's extra CPU buffer types off, in-process or as llama-cpp-python's server.

On CPUs that advertise AMX inside some VMs (the development machine is one), ggml's AMX kernels die with
SIGILL on the first eval. `Llama()` has no argument for it and `python -m llama_cpp.server` no option,
so `model_params` sets the field on the defaults llama.cpp's model loader starts from. The in-process
judge loads its model under it; run as a program, this module starts llama-cpp-python's server under it
(the server judge's tests, and the Ragas side of the bench):

    python -m localeval.judge.llama_server --model M.gguf --host 127.0.0.1 --port 8765 --logits_all true

At import time it needs nothing but the standard library, so another virtual environment that has
llama-cpp-python but not localeval (bench/.venv-ragas) runs it by its file path.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterator, Mapping, Sequence

#: A server is ready when its model list answers; loading a GGUF takes a few seconds.
READY_PATH = "/v1/models"
#: Loopback requests must not go through a proxy named in the environment.
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@contextmanager
def model_params(**overrides: Any) -> Iterator[None]:
    """Llama() exposes no argument for some llama_model_params fields; set them on the defaults it starts from."""
    import llama_cpp.llama_cpp as lib

    original = lib.llama_model_default_params

    def patched() -> Any:
        params = original()
        for name, value in overrides.items():
            setattr(params, name, value)
        return params

    lib.llama_model_default_params = patched
    try:
        yield
    finally:
        lib.llama_model_default_params = original


def free_port() -> int:
    """A TCP port nothing listens on now (the OS picks it), on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_command(model: Path, port: int, *, n_ctx: int, threads: int, python: str | Path = sys.executable,
                   logits_all: bool = True, extra: Sequence[str] = ()) -> list[str]:
    """The command line of a llama-cpp-python server on 127.0.0.1 run through this file (so with the
    workaround), seed 0, on the CPU; `logits_all` keeps the logits of every position, which its
    logprobs need (and which costs some prompt speed)."""
    return [str(python), str(Path(__file__).resolve()), "--model", str(model), "--host", "127.0.0.1",
            "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(threads), "--n_threads_batch",
            str(threads), "--seed", "0", "--n_gpu_layers", "0", "--logits_all", str(logits_all).lower(), *extra]


def wait_ready(url: str, server: subprocess.Popen[bytes], timeout: float) -> None:
    """Poll `url` until it answers; a server that exits first, or never answers, is an error."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with status {server.returncode} before it was ready")
        try:
            with NO_PROXY.open(url, timeout=5):
                return
        except OSError:
            time.sleep(0.25)
    raise RuntimeError(f"the server did not answer {url} within {timeout:.0f} s")


@contextmanager
def local_server(model: Path, *, n_ctx: int, threads: int, log: IO[Any], python: str | Path = sys.executable,
                 logits_all: bool = True, extra: Sequence[str] = (), env: Mapping[str, str] | None = None,
                 timeout: float = 600) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A llama-cpp-python server on a free loopback port for the duration of the block: yields its base
    URL (ending in /v1) and the process (a test may kill it); stops it on the way out."""
    port = free_port()
    command = server_command(model, port, n_ctx=n_ctx, threads=threads, python=python, logits_all=logits_all, extra=extra)
    with serving(command, port, log=log, env=env, timeout=timeout) as running:
        yield running


@contextmanager
def serving(command: Sequence[str], port: int, *, log: IO[Any], env: Mapping[str, str] | None = None,
            timeout: float = 600) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Any OpenAI-compatible server `command` that listens on 127.0.0.1:`port` (llama-cpp-python's, a
    llama-server binary), from ready to stopped: yields its base URL and the process."""
    server = subprocess.Popen(list(command), stdout=log, stderr=subprocess.STDOUT, env=None if env is None else dict(env))
    try:
        wait_ready(f"http://127.0.0.1:{port}{READY_PATH}", server, timeout)
        yield f"http://127.0.0.1:{port}/v1", server
    finally:
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


if __name__ == "__main__":
    # Run by its path, this file's folder heads sys.path: its modules (server.py, cache.py, config.py)
    # must not shadow a top-level module of the same name that the server's dependencies import.
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
    from llama_cpp.server.__main__ import main

    with model_params(use_extra_bufts=False):
        main()
