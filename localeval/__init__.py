"""localeval: offline evaluation of retrieval-augmented generation.

The Python API mirrors `localeval score`: `evaluate(samples, metrics=[...])` returns a `Result` with one
row per sample and the summary. Heavy libraries (torch, llama_cpp) are imported only by the metrics that
need them, so importing localeval and `localeval --help` stay instant.
"""

__version__ = "0.1.0"

from .data.records import Context, Sample  # noqa: E402
from .distributed import RayOptions  # noqa: E402
from .errors import InputError, LocalevalError, MetricNameError, ModelError, OutputError  # noqa: E402
from .judge.config import JudgeOptions  # noqa: E402
from .metrics import MetricOptions, build_metrics, load_criteria, register_metric  # noqa: E402
from .metrics.base import Measurement, Skipped  # noqa: E402
from .pipeline import Result, evaluate, score_file  # noqa: E402

__all__ = [
    "Context", "InputError", "JudgeOptions", "LocalevalError", "Measurement", "MetricNameError", "MetricOptions",
    "ModelError", "OutputError", "RayOptions", "Result", "Sample", "Skipped", "build_metrics", "evaluate",
    "load_criteria", "register_metric",
    "score_file",
]
