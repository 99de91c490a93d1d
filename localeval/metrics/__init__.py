"""Metric names → metric objects, through the registry (registry.py) that every metric joins.

`build_metrics("faithfulness,ndcg@10", MetricOptions(ndcg_gain="exponential"))` parses the names, expands
groups, checks every option and returns ready metric objects; nothing heavy (judge, embedder) is loaded
until a metric first needs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from ..classifier.judgements import JUDGEMENTS
from ..errors import MetricNameError, OptionError
from ..judge.config import JudgeOptions
from ..model_kit import ModelKit
from .base import ChunkDetails, Measurement, Metric, MetricContext, MetricOption, Outcome, Skipped
from .criteria import load_criteria
from .judged import Flow, JudgeMetric
from .registry import check_options, expand_names, groups, name_forms, parse_name, register_metric, specs


class MetricOptions:
    """Values of metric options (by name: ndcg_gain, rouge_stemmer, faithfulness_against, n_questions, and
    any a plugin registers) and the judge options. Unset options take their registered defaults."""

    def __init__(self, judge: JudgeOptions | None = None, criteria: Iterable[str | Path] = (), **values: Any) -> None:
        self.judge = judge or JudgeOptions()
        #: Criterion files and folders (metrics/criteria.py): their metrics are scored beside the named ones.
        self.criteria: tuple[str, ...] = tuple(str(c) for c in criteria)
        self.values: Mapping[str, Any] = dict(values)

    def __repr__(self) -> str:
        return (f"MetricOptions(judge={self.judge!r}, criteria={self.criteria!r}, "
                f"{', '.join(f'{k}={v!r}' for k, v in self.values.items())})")


def build_metrics(spec: str | Iterable[str], options: MetricOptions | None = None,
                  kit: ModelKit | None = None) -> list[Metric]:
    """Parse metric names (or groups) into metric objects, the criteria of `options.criteria` after them;
    unknown names raise MetricNameError, bad option values OptionError and bad criteria CriterionError, all
    before any model is loaded. `kit` supplies the run's models (default: loaded from options.judge on
    first use)."""
    options = options or MetricOptions()
    criteria = load_criteria(options.criteria)
    names = expand_names(spec) if spec or not criteria else []
    names += [name for name in criteria if name not in names]
    parsed = [parse_name(name) for name in names]
    context = MetricContext(check_options(dict(options.values)), kit or ModelKit.of(options.judge))
    metrics: list[Metric] = []
    for name, (metric_spec, k) in zip(names, parsed):
        metric = metric_spec.cls.create(context, k)
        if metric.name != name:
            raise MetricNameError(f"metric class {metric_spec.cls.__name__} built '{metric.name}' for '{name}'; its "
                                  "`name` must be the canonical name")
        metrics.append(metric)
    if options.judge.classifier:
        _check_classifier_used(options.judge.classifier, metrics)
    return metrics


def _check_classifier_used(folder: str, metrics: Iterable[Metric]) -> None:
    """A classifier judge that no chosen metric asks would be silently ignored, and the run's numbers
    would be the GGUF judge's (or no judge's) while the user believes them the classifier's."""
    served = {name for judgement in JUDGEMENTS.values() for name in judgement.metrics}
    if not any(type(metric).name in served for metric in metrics):
        chosen = ", ".join(metric.name for metric in metrics) or "none"
        raise OptionError(f"--classifier {folder}: no metric chosen ({chosen}) takes a classifier's verdicts; "
                          f"it scores {', '.join(sorted(served))}")


__all__ = ["ChunkDetails", "Flow", "JudgeMetric", "JudgeOptions", "Measurement", "Metric", "MetricContext",
           "MetricOption", "MetricOptions", "Outcome", "Skipped", "build_metrics", "expand_names", "groups",
           "load_criteria", "name_forms", "register_metric", "specs"]
