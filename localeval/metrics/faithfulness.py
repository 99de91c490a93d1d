"""faithfulness: is every claim of the answer backed by the passages it was generated from?

Ragas' definition, made robust for small local judges: the judge splits the answer into short standalone
statements under a JSON schema (so the list always parses), then each statement gets P(supported) from
the next-token probabilities of "Yes"/"No" (no text to parse). With n statements of which s have
P ≥ 0.5:

    faithfulness      = s / n
    faithfulness.soft = mean of the n probabilities

An answer with no checkable statement is skipped with that reason (neither NaN nor a free 1.0); with no
passages at all, every statement is unsupported. `against="reference_docs"` checks the answer against
the ground-truth documents instead of the retrieved contexts (seed 004's variant).
"""

from __future__ import annotations

from typing import Any

from ..data.records import Sample
from ..judge.kit import JudgeKit
from .base import Measurement, MetricContext, Outcome, Skipped
from .judged import THRESHOLD, Flow, JudgeMetric
from .registry import MetricOption, register_metric
from .steps import passages_for, statements_of, support

AGAINST = ("contexts", "reference_docs")


@register_metric
class Faithfulness(JudgeMetric):
    """Share of the answer's statements supported by the contexts (or reference documents)."""

    name = "faithfulness"
    columns = ("faithfulness", "faithfulness.soft")
    groups = ("ragas", "judge")
    options = (MetricOption("faithfulness_against", "contexts", "Check the answer's statements against the "
                            "retrieved contexts or the reference documents.", choices=AGAINST),)

    @classmethod
    def create(cls, context: MetricContext, k: int | None) -> Faithfulness:
        return cls(context.kit, against=context.options["faithfulness_against"])

    def __init__(self, kit: JudgeKit, against: str = "contexts") -> None:
        if against not in AGAINST:
            raise ValueError(f"faithfulness is checked against one of {', '.join(AGAINST)}, not {against!r}")
        super().__init__(kit)
        self.against = against
        self.requires = ("answer", against)

    def settings(self) -> dict[str, Any]:
        return {"against": self.against, **super().settings()}

    def _flow(self, sample: Sample, lang: str) -> Flow[Outcome]:
        statements = yield from statements_of(self.kit, lang, sample.question, sample.answer or "")
        if not statements:
            return Skipped("no checkable statement in the answer")
        passages = passages_for(sample, self.against)
        probs, windows = (yield from support(self.kit, lang, statements, passages)) if passages else ([0.0] * len(statements), 0)
        supported = [p >= THRESHOLD for p in probs]
        return Measurement(
            {"faithfulness": sum(supported) / len(statements), "faithfulness.soft": sum(probs) / len(probs)},
            {"statements": [{"text": t, "p": round(p, 6), "supported": ok} for t, p, ok in zip(statements, probs, supported)],
             "against": self.against, "windows": windows},
        )
