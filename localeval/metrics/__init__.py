"""Metric names → metric objects. One canonical string per metric, parsed here and nowhere else."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from ..errors import MetricNameError
from .base import Measurement, Metric, Outcome, Skipped
from .judging import JudgeKit, JudgeOptions

RETRIEVAL = ("precision@5", "recall@5", "hit@5", "mrr", "ap", "ndcg@5")
JUDGED = ("faithfulness", "answer_relevance", "answer_relevance_rating", "context_relevance", "context_precision",
          "context_recall")
#: Named sets accepted in --metrics alongside single names.
GROUPS: dict[str, tuple[str, ...]] = {
    "retrieval": RETRIEVAL,
    "classical": (*RETRIEVAL, "rouge_l"),
    "ragas": ("faithfulness", "answer_relevance", "context_precision", "context_recall"),
    "judge": JUDGED,
    "all": (*RETRIEVAL, "rouge_l", *JUDGED),
}

#: Every name pattern, for help texts and error messages.
NAME_FORMS = ("precision@K", "recall@K", "hit@K", "mrr", "mrr@K", "ap", "ap@K", "ndcg@K", "rouge_l", *JUDGED)


@dataclass(frozen=True)
class MetricOptions:
    """Options that change metric values; they are recorded in the summary."""

    ndcg_gain: str = "linear"
    rouge_stemmer: bool = True
    faithfulness_against: str = "contexts"
    n_questions: int = 3
    judge: JudgeOptions = field(default_factory=JudgeOptions)


def expand_names(spec: str | Iterable[str]) -> list[str]:
    """Split a comma list, expand groups, drop repeats while keeping the user's order."""
    parts = spec.split(",") if isinstance(spec, str) else list(spec)
    names: list[str] = []
    for part in (p.strip() for p in parts):
        if not part:
            continue
        for name in GROUPS.get(part.lower(), (part,)):
            if name not in names:
                names.append(name)
    if not names:
        raise MetricNameError("no metrics given; name at least one, e.g. --metrics classical")
    return names


def build_metrics(spec: str | Iterable[str], options: MetricOptions | None = None) -> list[Metric]:
    """Parse metric names (or groups) into metric objects; unknown names raise MetricNameError."""
    from .retrieval import retrieval_metric

    options = options or MetricOptions()
    if options.ndcg_gain not in ("linear", "exponential"):
        raise MetricNameError(f"ndcg gain '{options.ndcg_gain}' is not known; use linear or exponential")
    metrics: list[Metric] = []
    kit = JudgeKit(options.judge)  # loads nothing until a judge metric first needs the model
    for name in expand_names(spec):
        if name == "rouge_l":
            from .rouge import RougeL

            metrics.append(RougeL(use_stemmer=options.rouge_stemmer))
            continue
        if name in JUDGED:
            metrics.append(_judge_metric(name, kit, options))
            continue
        metric = retrieval_metric(name, gain=options.ndcg_gain)
        if metric is None:
            raise MetricNameError(
                f"'{name}' is not a known metric; use one of {', '.join(NAME_FORMS)} or a group ({', '.join(GROUPS)})"
            )
        metrics.append(metric)
    return metrics


def _judge_metric(name: str, kit: JudgeKit, options: MetricOptions) -> Metric:
    from .answer_relevance import AnswerRelevance, AnswerRelevanceRating
    from .context_quality import ContextPrecision, ContextRecall, ContextRelevance
    from .faithfulness import Faithfulness

    if name == "faithfulness":
        return Faithfulness(kit, against=options.faithfulness_against)
    if name == "answer_relevance":
        return AnswerRelevance(kit, n_questions=options.n_questions)
    return {"answer_relevance_rating": AnswerRelevanceRating, "context_relevance": ContextRelevance,
            "context_precision": ContextPrecision, "context_recall": ContextRecall}[name](kit)


__all__ = ["GROUPS", "Measurement", "Metric", "JudgeOptions", "MetricOptions", "Outcome", "Skipped", "build_metrics", "expand_names"]
