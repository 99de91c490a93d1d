"""How good are the retrieved contexts? Relevance of their sentences, precision of their ranking, and
recall of the reference answer.

context_relevance (ARES / Ragas' context relevancy): the contexts are split into sentences (English and
Chinese punctuation), numbered, and the judge returns the numbers of the sentences needed to answer the
question, under a JSON schema, so no sentence is ever rewritten or misquoted:

    context_relevance = |needed sentences| / |all sentences|

context_precision (the tutorial's formula): each retrieved chunk k gets P(useful) for answering the
question, judged against the reference answer when there is one, else against the generated answer;
rel_k = 1 when P ≥ 0.5. With precision@k = (Σ_{i≤k} rel_i) / k,

    context_precision = Σ_k precision@k · rel_k / (number of relevant chunks), 0 when none is relevant

context_recall (Ragas): the reference answer is split into statements; each gets P(attributable to the
contexts); context_recall = attributable / total.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..data.records import Sample
from ..judge.facade import Ask
from ..text import split_sentences
from .base import Measurement, Outcome, Skipped
from .judged import THRESHOLD, Flow, JudgeMetric
from .registry import register_metric
from .steps import statements_of, support


@register_metric
class ContextRelevance(JudgeMetric):
    """Share of the contexts' sentences the judge lists as needed to answer the question."""

    name = "context_relevance"
    requires = ("contexts",)

    def _flow(self, sample: Sample, lang: str) -> Flow[Outcome]:
        sentences = [s for c in sample.contexts or () for s in split_sentences(c.text)]
        if not sentences:
            return Skipped("contexts have no text")
        needed: set[int] = set()
        out_of_range = 0
        windows = self._windows(sentences, lang, sample.question)
        prompts = [self.kit.prompt("context_sentences", lang, question=sample.question,
                                   sentences="\n".join(f"{i - start + 1}. {sentences[i]}" for i in range(start, stop)))
                   for start, stop in windows]
        answers = yield [Ask.json(prompt) for prompt in prompts]
        for (start, stop), answer in zip(windows, answers):
            for number in answer.value["relevant"]:
                if 1 <= number <= stop - start:
                    needed.add(start + number - 1)
                else:
                    out_of_range += 1
        details: dict[str, Any] = {"sentences": len(sentences), "needed": sorted(i + 1 for i in needed),
                                   "windows": len(windows)}
        if out_of_range:
            details["out_of_range_numbers_ignored"] = out_of_range
        return Measurement({self.name: len(needed) / len(sentences)}, details)

    def _windows(self, sentences: list[str], lang: str, question: str) -> list[tuple[int, int]]:
        """Consecutive runs of sentences whose numbered list fits the judge's window."""
        judge = self.kit.judge
        budget = judge.context_budget(self.kit.prompt("context_sentences", lang, question=question, sentences="")) - 8
        windows, start, used = [], 0, 0
        for i, sentence in enumerate(sentences):
            cost = judge.count_tokens(f"{i - start + 1}. {sentence}\n")
            if i > start and used + cost > budget:
                windows.append((start, i))
                start, used = i, judge.count_tokens(f"1. {sentence}\n")
            else:
                used += cost
        windows.append((start, len(sentences)))
        return windows


@register_metric
class ContextPrecision(JudgeMetric):
    """Rank-weighted precision of the chunks the judge finds useful for the (reference) answer."""

    name = "context_precision"
    groups = ("ragas", "judge")
    requires = ("contexts",)

    def _flow(self, sample: Sample, lang: str) -> Flow[Outcome]:
        target, against = (sample.reference, "reference") if sample.reference else (sample.answer, "answer")
        if not target:
            return Skipped("missing field 'reference' (or 'answer')")
        if not sample.contexts:
            return Skipped("no contexts retrieved")
        answers = yield [Ask.yes_no(self.kit.prompt("context_useful", lang, question=sample.question, target=target,
                                                    target_kind=against, context=context.text))
                         for context in sample.contexts]
        probs = [answer.value for answer in answers]
        relevant = [p >= THRESHOLD for p in probs]
        return Measurement({self.name: precision_weighted(relevant)},
                           {"useful": [{"p": round(p, 6), "relevant": r} for p, r in zip(probs, relevant)],
                            "against": against})


@register_metric
class ContextRecall(JudgeMetric):
    """Share of the reference answer's statements attributable to the contexts."""

    name = "context_recall"
    groups = ("ragas", "judge")
    requires = ("contexts", "reference")

    def _flow(self, sample: Sample, lang: str) -> Flow[Outcome]:
        statements = yield from statements_of(self.kit, lang, sample.question, sample.reference or "")
        if not statements:
            return Skipped("no checkable statement in the reference")
        probs, windows = ((yield from support(self.kit, lang, statements, sample.contexts)) if sample.contexts
                          else ([0.0] * len(statements), 0))
        attributable = [p >= THRESHOLD for p in probs]
        return Measurement({self.name: sum(attributable) / len(statements)},
                           {"statements": [{"text": t, "p": round(p, 6), "attributable": a}
                                           for t, p, a in zip(statements, probs, attributable)],
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
