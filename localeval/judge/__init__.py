"""The LLM judge: a facade (cache, accounting, windowing, validation) over backends that run the model.

`facade.Judge` is what metrics call; `backend.JudgeBackend` is the seam a new way of running a model
implements, and `backends.py` finds the backends by name (the built-in ones and plugins'); `config.RunConfig`
is the judge's configuration, resolved once per run.
"""

from .backend import CallStats, JudgeBackend
from .backends import load_judge, open_judge, register_backend
from .config import JudgeOptions, RunConfig
from .facade import Answer, Ask, Judge

__all__ = ["Answer", "Ask", "CallStats", "Judge", "JudgeBackend", "JudgeOptions", "RunConfig", "load_judge",
           "open_judge", "register_backend"]
