"""localeval: offline evaluation of retrieval-augmented generation.

The Python API mirrors `localeval score`: `evaluate(samples, metrics=[...])` returns a `Result` with one
row per sample and the summary. Heavy libraries (torch, llama_cpp) are imported only by the metrics that
need them, so importing localeval and `localeval --help` stay instant.
"""

__version__ = "0.1.0"

from .errors import InputError, LocalevalError, MetricNameError, ModelError  # noqa: E402
from .evaluation import Result, evaluate  # noqa: E402
from .metrics import MetricOptions, build_metrics  # noqa: E402
from .records import Context, Sample  # noqa: E402

__all__ = [
    "Context", "InputError", "LocalevalError", "MetricNameError", "MetricOptions", "ModelError", "Result",
    "Sample", "build_metrics", "evaluate",
]
