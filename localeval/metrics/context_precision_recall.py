"""How good are the retrieved contexts for the answer? Precision of their ranking, and recall of the
reference answer (their relevance to the question is in context_relevance.py).

context_precision (the tutorial's formula): each retrieved chunk k gets P(useful) for answering the
question, judged against the reference answer when there is one, else against the generated answer;
rel_k = 1 when P ≥ the verdict threshold (0.5 unless --verdict-threshold;
`localeval calibrate` fits it on the run's reference_doc_ids). With precision@k = (Σ_{i≤k} rel_i) / k,

    context_precision = Σ_k precision@k · rel_k / (number of relevant chunks), 0 when none is relevant

context_recall (Ragas): the reference answer is split into statements; each gets P(attributable to the
contexts); context_recall = their mean (the expected share attributable, as faithfulness reads its
verdicts), context_recall.share = the share with P ≥ 0.5 (Ragas' count). The statements are the
reference's own sentences by default, as in Ragas' context recall prompt ("analyze each sentence of the
ground truth and classify if it can be attributed to the context"): a reference is written by people, one
claim a sentence or close to it, so a split costs no generation and cannot leave a claim out; "judge" asks
the judge to decompose it, as faithfulness's "judge" statements do.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..data.records import Sample
from ..model_kit import ModelKit
from .base import ChunkDetails, Measurement, MetricContext, MetricOption, Outcome, Skipped, check_choices
from .judged import THRESHOLD, Flow, VerdictMetric, mean_and_share, threshold_of
from .registry import register_metric
from .steps import best_of_windows, sentence_statements, statements_of, support

RECALL_STATEMENTS = ("sentences", "judge")


@register_metric
class ContextPrecision(VerdictMetric):
    """Rank-weighted precision of the chunks the judge finds useful for the (reference) answer."""

    name = "context_precision"
    groups = ("ragas", "judge")
    chunk_details = ChunkDetails("useful", label="useful")
    requires = ("contexts",)

    def flow(self, sample: Sample, lang: str) -> Flow[Outcome]:
        target, against = (sample.reference, "reference") if sample.reference else (sample.answer, "answer")
        if not target:
            return Skipped("missing field 'reference' (or 'answer')")
        if not sample.contexts:
            return Skipped("no contexts retrieved")
        probs = yield from best_of_windows(self.kit, lang, "context_useful", "context", [c.text for c in sample.contexts],
                                           question=sample.question, target=target, target_kind=against)
        relevant = [p >= self.threshold for p in probs]
        return Measurement({self.name: precision_weighted(relevant)},
                           {"useful": [{"p": round(p, 6), "relevant": r} for p, r in zip(probs, relevant)],
                            "against": against})


@register_metric
class ContextRecall(VerdictMetric):
    """Expected share of the reference answer's statements attributable to the contexts (mean P, as
    faithfulness reads its verdicts); `context_recall.share` is Ragas' count of those with P ≥ 0.5."""

    name = "context_recall"
    columns = ("context_recall", "context_recall.share")
    groups = ("ragas", "judge")
    requires = ("contexts", "reference")
    options = VerdictMetric.options + (MetricOption("context_recall_statements", "sentences", "context_recall: statements are the reference "
                            "answer's own sentences (Ragas' context recall) or the judge's decomposition of it.",
                            choices=RECALL_STATEMENTS),)

    @classmethod
    def create(cls, context: MetricContext, k: int | None) -> ContextRecall:
        return cls(context.kit, statements=context.options["context_recall_statements"],
                   threshold=threshold_of(context, cls.name))

    def __init__(self, kit: ModelKit, statements: str = "sentences", threshold: float = THRESHOLD) -> None:
        check_choices(self.name, (statements, RECALL_STATEMENTS))
        super().__init__(kit, threshold)
        self.statements = statements

    def settings(self) -> dict[str, Any]:
        return {"statements": self.statements, **super().settings()}

    def flow(self, sample: Sample, lang: str) -> Flow[Outcome]:
        reference = sample.reference or ""
        if self.statements == "sentences":
            statements = sentence_statements(reference)
        else:
            statements = yield from statements_of(self.kit, lang, sample.question, reference)
        if not statements:
            return Skipped("no checkable statement in the reference")
        probs, windows = ((yield from support(self.kit, lang, statements, sample.contexts)) if sample.contexts
                          else ([0.0] * len(statements), 0))
        mean, share = mean_and_share(probs, self.threshold)
        return Measurement({self.name: mean, "context_recall.share": share},
                           {"statements": [{"text": t, "p": round(p, 6), "attributable": p >= self.threshold}
                                           for t, p in zip(statements, probs)],
                            "windows": windows})


def precision_weighted(relevant: Sequence[bool]) -> float:
    """Σ_k precision@k · rel_k / (number of relevant), 0 when nothing is relevant.

    [1,0,1,0,1] → (1 + 2/3 + 3/5) / 3 = 0.7556; [0,0,0,1,1] → (1/4 + 2/5) / 2 = 0.325; [1,1,1,0,0] → 1.
    """
    hits, total = 0, 0.0
    for k, rel in enumerate(relevant, start=1):
        if rel:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0
