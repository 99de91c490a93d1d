"""The LLM judge: a facade (cache, accounting, windowing, validation) over backends that run the model.

`facade.Judge` is what metrics call; `backend.JudgeBackend` is the seam a new way of running a model
implements (`llama_inprocess.LlamaCppBackend` is the first); `options.open_judge` picks one.
"""

from .backend import CallStats, JudgeBackend
from .facade import Answer, Ask, Judge
from .options import JudgeOptions, load_judge, open_judge

__all__ = ["Answer", "Ask", "CallStats", "Judge", "JudgeBackend", "JudgeOptions", "load_judge", "open_judge"]
