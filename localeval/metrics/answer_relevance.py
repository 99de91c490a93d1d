"""Does the answer address the question? Two ways: reverse-generated questions, and a 1–5 rating.

answer_relevance (Ragas): the judge writes n questions the answer would answer, and flags a
noncommittal answer ("I don't know", evasions). With the local embedder (unit vectors),

    answer_relevance = mean_i cos(question, generated_i)      (0 when the answer is noncommittal)

answer_relevance_rating (the tutorial's rubric): the judge's next-token distribution over "1".."5" gives
the expected rating E = Σ k · P(k); the score is (E − 1) / 4, in [0, 1], with no text parsed.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ..data.records import Sample
from ..judge.facade import RATINGS, Ask
from ..model_kit import ModelKit
from .base import Measurement, MetricContext, MetricOption, Outcome
from .judged import Flow, JudgeMetric
from .registry import register_metric
from .steps import emptied_answer


@register_metric
class AnswerRelevance(JudgeMetric):
    """Ragas' answer relevancy: similarity of questions the judge generates from the answer to the question."""

    name = "answer_relevance"
    requires = ("answer",)
    # In `ragas` for comparability; localeval's own `judge` group uses answer_relevance_rating, which asks
    # the judge directly instead of going through generated questions and an embedder.
    groups = ("ragas",)
    models = ("judge", "embedder")
    options = (MetricOption("n_questions", 3, "answer_relevance: questions the judge generates from the answer.",
                            minimum=1, maximum=5),)

    @classmethod
    def create(cls, context: MetricContext, k: int | None) -> AnswerRelevance:
        return cls(context.kit, n_questions=context.options["n_questions"])

    def __init__(self, kit: ModelKit, n_questions: int = 3) -> None:
        if n_questions < 1:
            raise ValueError("answer_relevance needs at least one generated question")
        super().__init__(kit)
        self.n = n_questions

    def settings(self) -> dict[str, Any]:
        return {"n_questions": self.n, "embedder": self.kit.embedder_settings(), **super().settings()}

    def flow(self, sample: Sample, lang: str) -> Flow[Outcome]:
        empty = emptied_answer(sample)
        if empty is not None:
            return empty
        prompt = self.kit.prompt("questions", lang, answer=sample.answer or "", n=self.n)
        schema = copy.deepcopy(prompt.schema)
        schema["properties"]["questions"].update(minItems=self.n, maxItems=self.n)
        (answer,) = yield [Ask.json(prompt, schema)]
        value = answer.value
        generated = [q.strip() for q in value["questions"]]
        noncommittal = bool(value["noncommittal"])
        embedder = self.kit.embedder_for(lang)
        vectors = embedder.encode([sample.question, *generated])
        cosines = (vectors[1:] @ vectors[0]).astype(np.float64)
        score = 0.0 if noncommittal else float(np.mean(cosines))
        return Measurement(
            {"answer_relevance": score},
            {"questions": [{"text": q, "cosine": round(float(c), 6)} for q, c in zip(generated, cosines)],
             "noncommittal": noncommittal, "embedder": embedder.name},
        )


@register_metric
class AnswerRelevanceRating(JudgeMetric):
    """The judge's expected 1-5 rating of how directly and completely the answer answers the question."""

    name = "answer_relevance_rating"
    requires = ("answer",)

    def settings(self) -> dict[str, Any]:
        return {"scale": "1-5, (E-1)/4", **super().settings()}

    def flow(self, sample: Sample, lang: str) -> Flow[Outcome]:
        empty = emptied_answer(sample)
        if empty is not None:
            return empty
        prompt = self.kit.prompt("relevance_rating", lang, question=sample.question, answer=sample.answer or "")
        (answer,) = yield [Ask.choice(prompt, RATINGS)]
        dist = answer.value
        expected = sum(int(k) * p for k, p in dist.items())
        return Measurement(
            {"answer_relevance_rating": rating_score(expected)},
            {"distribution": {k: round(p, 6) for k, p in dist.items()}, "expected_rating": round(expected, 6)},
        )


def rating_score(expected: float) -> float:
    """(E − 1) / 4 maps the expected 1–5 rating onto [0, 1]."""
    return (expected - 1.0) / 4.0
