"""localeval: offline evaluation of retrieval-augmented generation.

The Python API mirrors `localeval score`: `evaluate(samples, metrics=[...])` returns a `Result` with one
row per sample and the summary. Heavy libraries (torch, llama_cpp) are imported only by the metrics that
need them, so importing localeval and `localeval --help` stay instant.
"""

__version__ = "0.1.0"

from .data.records import Context, Sample  # noqa: E402
from .distributed import RayOptions  # noqa: E402
from .errors import InputError, LocalevalError, MetricNameError, ModelError, OutputError  # noqa: E402
from .judge.backends import register_backend  # noqa: E402
from .judge.config import JudgeOptions, RunConfig  # noqa: E402
from .metrics import (JudgeMetric, Measurement, Metric, MetricContext, MetricOption, MetricOptions,  # noqa: E402
                      Skipped, build_metrics, load_criteria, register_metric)
from .pipeline import Result, evaluate, score_file  # noqa: E402

__all__ = [
    "Context", "InputError", "JudgeMetric", "JudgeOptions", "LocalevalError", "Measurement", "Metric", "MetricContext",
    "MetricNameError", "MetricOption", "MetricOptions", "ModelError", "OutputError", "RayOptions", "Result",
    "RunConfig", "Sample", "Skipped", "build_metrics", "evaluate", "load_criteria", "register_backend",
    "register_metric", "score_file",
]
