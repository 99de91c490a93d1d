"""grounding: how expected the judge finds the answer's words, given the question and the passages.

The judge reads the answer as its own reply to the question over the passages and gives each answer
token its log-probability there: one forward pass, nothing generated, nothing parsed (a continuation
call, judge/backend.py). A word the passages hold or imply is expected; a name, number or claim they do
not hold is not. Conditional-likelihood detectors (BARTScore, HaRiM, CoP) read the same signal. With the
answer's token log-probabilities l_1..l_n:

    grounding      = exp(mean of the lowest tenth of the l_i, at least two): the geometric-mean
                     probability of the answer's least expected tenth, where an unsupported detail shows
    grounding.min  = exp(min l_i): the least expected token alone
    grounding.mean = exp(mean l_i): every token (inverse perplexity), diluted by the expected ones

It sees words the passages do not hold, not a wrong relation between words they hold: "Aldous Huxley
wrote Nineteen Eighty-Four" over passages naming Huxley as another novel's author is expected, every word
of it being there (the bundled example's q3; faithfulness's verdict rejects it). Read it beside
faithfulness, never instead.

This is a likelihood, not a share of verified claims. Where the yes/no verdicts of faithfulness tie
(a lenient small judge passes every statement of a fluent wrong answer), it still ranks the answers;
on FaithBench dev it separates the hallucinated summaries best of everything measured
(bench/accuracy.py; README, "How accurate is the judge?"). It has no natural threshold: a paraphrase is
less expected than a copy, so its scale depends on the judge and on how answers are written. Rank or
compare systems with it, or set a threshold from your own labels (`localeval calibrate`).

An answer with no passages, or that is only text aimed at the judge, is skipped with that reason. The
passages and the answer must fit the judge's context window together (--n-ctx); a longer sample is skipped
with the judge's message, never cut.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from ..data.records import Sample
from ..judge.facade import Ask
from ..judge.injection import screen
from .base import Measurement, Outcome, Skipped
from .judged import Flow, JudgeMetric
from .registry import register_metric

#: The share of the answer's tokens, the least expected ones, whose mean log-probability is the headline,
#: and the fewest tokens it takes. Two, not one: a short answer's least expected token is often how it
#: begins (a phrasing choice a right and a wrong answer share), and one token alone then ties them. On the
#: dev sets 1 and 2 give the same figures; 3 and more lose HaluEval pairs (bench/accuracy.py).
LOWEST_SHARE = 0.1
LOWEST_AT_LEAST = 2


@register_metric
class Grounding(JudgeMetric):
    """The geometric-mean probability of the answer's least expected tenth of tokens, given the passages."""

    name = "grounding"
    columns = ("grounding", "grounding.min", "grounding.mean")
    requires = ("answer", "contexts")

    def settings(self) -> dict[str, Any]:
        return {"lowest_share": LOWEST_SHARE, **super().settings()}

    def _flow(self, sample: Sample, lang: str) -> Flow[Outcome]:
        screened = screen(sample.answer or "")
        answer = screened.text.strip()
        if not answer:
            return Skipped("the answer has only text aimed at the judge" if screened.removed else "the answer is empty")
        if not sample.contexts:
            return Skipped("no contexts to ground the answer in")
        prompt = self.kit.prompt("grounding", lang, question=sample.question,
                                 context="\n\n".join(c.text for c in sample.contexts))
        (reply,) = yield [Ask.continuation_of(prompt, answer)]
        logprobs = [float(v) for v in reply.value]
        if not logprobs:
            return Skipped("the answer has no tokens")
        details: dict[str, Any] = {"tokens": len(logprobs), "lowest": [round(v, 4) for v in sorted(logprobs)[:5]]}
        if screened.removed:
            details["aimed_at_judge"] = {"answer": list(screened.removed)}
        return Measurement(scores(logprobs), details)


def scores(logprobs: Sequence[float]) -> dict[str, float]:
    """The three columns from an answer's token log-probabilities (at least one; with one, all three are its)."""
    ordered = sorted(logprobs)
    lowest = ordered[: max(LOWEST_AT_LEAST, math.floor(len(ordered) * LOWEST_SHARE))]
    return {"grounding": math.exp(sum(lowest) / len(lowest)), "grounding.min": math.exp(ordered[0]),
            "grounding.mean": math.exp(sum(ordered) / len(ordered))}
