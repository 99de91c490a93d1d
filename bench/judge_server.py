"""llama.cpp's own server (llama-server, embedded by the xllamacpp wheel) serving a GGUF judge to the peers.

bench/ragas_compare.py gives Ragas and DeepEval their judge through this server: llama.cpp's server has
slots (sequences decoded side by side with continuous batching), which the peers' async workers need to
run a whole set as their users would; llama-cpp-python's server answers one request at a time. It runs in
its own venv (bench/.venv-server, bench/requirements-server.txt), uses only the standard library and
xllamacpp, and turns ggml's extra CPU buffer types off (the AMX workaround every llama.cpp of the
project needs). It serves until it is stopped.

    bench/.venv-server/bin/python bench/judge_server.py --model models/judge.gguf --port 8765 --slots 16 \
        --n-ctx 4096 --threads 2
"""

from __future__ import annotations

import argparse
import signal
import threading


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--slots", type=int, default=1, help="requests decoded side by side")
    parser.add_argument("--n-ctx", type=int, default=4096, help="context tokens per slot")
    parser.add_argument("--threads", type=int, required=True)
    args = parser.parse_args()

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_parallel = args.slots
    params.kv_unified = False
    params.n_ctx = args.n_ctx * args.slots  # split evenly between the slots
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.n_gpu_layers = 0
    params.no_extra_bufts = True
    params.fit_params = False  # the sizes above are the ones asked for, not fitted to memory
    params.sampling.seed = 0
    server = xllamacpp.Server(params)
    print(f"serving {args.model} at {server.listening_address} with {args.slots} slots", flush=True)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    stop.wait()


if __name__ == "__main__":
    main()
