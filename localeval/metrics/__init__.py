"""Metric names → metric objects, through the registry (registry.py) that every metric joins.

`build_metrics("faithfulness,ndcg@10", MetricOptions(ndcg_gain="exponential"))` parses the names, expands
groups, checks every option and returns ready metric objects; nothing heavy (judge, embedder) is loaded
until a metric first needs it.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ..errors import MetricNameError
from ..judge.kit import JudgeKit
from ..judge.options import JudgeOptions
from .base import Measurement, Metric, MetricContext, Outcome, Skipped
from .registry import MetricOption, check_options, expand_names, groups, name_forms, parse_name, register_metric, specs


class MetricOptions:
    """Values of metric options (by name: ndcg_gain, rouge_stemmer, faithfulness_against, n_questions, and
    any a plugin registers) and the judge options. Unset options take their registered defaults."""

    def __init__(self, judge: JudgeOptions | None = None, **values: Any) -> None:
        self.judge = judge or JudgeOptions()
        self.values: Mapping[str, Any] = dict(values)

    def __repr__(self) -> str:
        return f"MetricOptions(judge={self.judge!r}, {', '.join(f'{k}={v!r}' for k, v in self.values.items())})"


def build_metrics(spec: str | Iterable[str], options: MetricOptions | None = None,
                  kit: JudgeKit | None = None) -> list[Metric]:
    """Parse metric names (or groups) into metric objects; unknown names raise MetricNameError and bad
    option values OptionError, both before anything is loaded. `kit` supplies the run's models (default:
    loaded from options.judge on first use)."""
    options = options or MetricOptions()
    names = expand_names(spec)
    parsed = [parse_name(name) for name in names]
    context = MetricContext(check_options(dict(options.values)), kit or JudgeKit(options.judge))
    metrics: list[Metric] = []
    for name, (metric_spec, k) in zip(names, parsed):
        create = getattr(metric_spec.cls, "create", None)
        metric = create(context, k) if create is not None else (metric_spec.cls() if k is None else metric_spec.cls(k))
        if getattr(metric, "name", None) != name:
            raise MetricNameError(f"metric class {metric_spec.cls.__name__} built '{getattr(metric, 'name', None)}' "
                                  f"for '{name}'; its `name` must be the canonical name")
        metrics.append(metric)
    return metrics


__all__ = ["JudgeOptions", "Measurement", "Metric", "MetricContext", "MetricOption", "MetricOptions", "Outcome",
           "Skipped", "build_metrics", "expand_names", "groups", "name_forms", "register_metric", "specs"]
