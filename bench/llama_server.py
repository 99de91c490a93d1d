"""`python -m llama_cpp.server` with ggml's extra CPU buffer types turned off; the Ragas side's judge.

Same reason as localeval.judge's `extra_buffers=False`: on CPUs that advertise AMX inside some VMs (this
one), ggml's AMX kernels die with SIGILL on the first eval, and llama_cpp.server has no option for it.
This runs in bench/.venv-ragas, which has llama-cpp-python but not localeval, so the few lines that
set the field on llama.cpp's default model parameters are repeated here rather than imported.

    bench/.venv-ragas/bin/python bench/llama_server.py --model M.gguf --host 127.0.0.1 --port 8765 ...
"""

from __future__ import annotations

import llama_cpp.llama_cpp as lib
from llama_cpp.server.__main__ import main

_defaults = lib.llama_model_default_params


def _without_extra_buffers():  # type: ignore[no-untyped-def]
    params = _defaults()
    params.use_extra_bufts = False
    return params


if __name__ == "__main__":
    lib.llama_model_default_params = _without_extra_buffers
    main()
