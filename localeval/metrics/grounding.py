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
(bench/accuracy.py; docs/pages/benchmarks/accuracy.md). It has no natural threshold: a paraphrase is
less expected than a copy, so its scale depends on the judge and on how answers are written. Rank or
compare systems with it, or set a threshold from your own labels (`localeval calibrate`).

A sample's details name the tokens the headline averages (`unexpected`: text, the word it is in, position,
probability; least expected first, at most eight): where a reader looks in the passages. The report lists them in the
drill-down and leaves the columns uncoloured (`scale = "relative"`): 0.02 is not bad on its own.

An answer with no passages, or that is only text aimed at the judge, is skipped with that reason. Passages
longer than the judge's window (--n-ctx, less the prompt and the answer) are split at sentence ends into
windows that fit and the answer is read after each; every token keeps its highest log-probability over the
windows, as a token is expected if some part of the passages expects it (faithfulness takes a statement's
best window the same way). The details say how many windows it took; nothing is cut. An answer too long
to leave room for any passage is skipped with the judge's message.
"""

from __future__ import annotations

import math
import unicodedata
from typing import Any, Sequence

from ..data.records import Sample
from ..judge.facade import Ask
from ..judge.injection import screen
from .base import Measurement, Outcome, Skipped
from .judged import Flow, JudgeMetric
from .registry import register_metric
from .steps import nothing_left

#: The share of the answer's tokens, the least expected ones, whose mean log-probability is the headline,
#: and the fewest tokens it takes. Two, not one: a short answer's least expected token is often how it
#: begins (a phrasing choice a right and a wrong answer share), and one token alone then ties them. On the
#: dev sets 1 and 2 give the same figures; 3 and more lose HaluEval pairs (bench/accuracy.py).
LOWEST_SHARE = 0.1
LOWEST_AT_LEAST = 2
#: The least expected tokens a sample's details name (with their text), for the report and samples.jsonl.
SHOWN = 8


@register_metric
class Grounding(JudgeMetric):
    """The geometric-mean probability of the answer's least expected tenth of tokens, given the passages."""

    name = "grounding"
    columns = ("grounding", "grounding.min", "grounding.mean")
    requires = ("answer", "contexts")
    #: A likelihood: it ranks answers, 0.02 is not "bad" on its own (the report leaves it uncoloured).
    scale = "relative"

    def settings(self) -> dict[str, Any]:
        return {"lowest_share": LOWEST_SHARE, **super().settings()}

    def flow(self, sample: Sample, lang: str) -> Flow[Outcome]:
        screened = screen(sample.answer or "", claims=True)
        answer = screened.text.strip()
        if not answer:
            return nothing_left(screened, "the answer is empty")
        if not sample.contexts:
            return Skipped("no contexts to ground the answer in")
        judge = self.kit.judge
        text = "\n\n".join(screen(c.text).text for c in sample.contexts)  # each on its own: see steps.joined
        empty = self.kit.prompt("grounding", lang, question=sample.question, context="")
        windows = judge.windows(text, judge.context_budget(empty, max_tokens=judge.count_tokens(answer)))
        replies = yield [Ask.continuation_of(self.kit.prompt("grounding", lang, question=sample.question, context=window),
                                             answer) for window in windows]
        # a token is as expected as the window that expects it most: some part of the passages holds it
        logprobs = [max(float(v) for v in values) for values in zip(*(reply.value for reply in replies))]
        if not logprobs:
            return Skipped("the answer has no tokens")
        details: dict[str, Any] = {"tokens": len(logprobs), "lowest": [round(v, 4) for v in sorted(logprobs)[:5]],
                                   "windows": len(windows)}
        texts = judge.token_texts(answer)
        if texts is not None and len(texts) == len(logprobs):
            details["unexpected"] = unexpected(texts, logprobs)
        if screened.removed:
            details["aimed_at_judge"] = {"answer": list(screened.removed)}
        return Measurement(scores(logprobs), details)


def unexpected(texts: Sequence[str], logprobs: Sequence[float]) -> list[dict[str, Any]]:
    """The tokens the headline averages (at most SHOWN), least expected first, each with its text, the
    word it is part of, its position among the answer's tokens and its probability: what a reader checks
    against the passages."""
    order = sorted(range(len(logprobs)), key=lambda i: logprobs[i])[: min(SHOWN, headline_count(len(logprobs)))]
    # a token holding part of a character (text '') is named by the character its next tokens complete
    named = [texts[i] or next((t for t in texts[i + 1:] if t), "") for i in order]
    return [{"text": text, "word": word_of(texts, i) or text.strip(), "token": i, "p": round(math.exp(logprobs[i]), 6)}
            for text, i in zip(named, order)]


def word_of(texts: Sequence[str], i: int) -> str:
    """The word token i is part of: " Nin" of " Nin|ete|en" is "Nineteen". Tokens join while one ends and the
    next begins with a letter or digit of a script that spaces its words; a CJK character stands alone."""
    start, end = i, i + 1
    while start > 0 and _continues(texts[start - 1], texts[start]):
        start -= 1
    while end < len(texts) and _continues(texts[end - 1], texts[end]):
        end += 1
    return "".join(texts[start:end]).strip()


def _continues(left: str, right: str) -> bool:
    return bool(left and right) and _in_word(left[-1]) and _in_word(right[0])


def _in_word(char: str) -> bool:
    return char.isalnum() and unicodedata.east_asian_width(char) not in ("W", "F")


def headline_count(n_tokens: int) -> int:
    """How many of the least expected tokens the headline averages."""
    return max(LOWEST_AT_LEAST, math.floor(n_tokens * LOWEST_SHARE))


def scores(logprobs: Sequence[float]) -> dict[str, float]:
    """The three columns from an answer's token log-probabilities (at least one; with one, all three are its)."""
    ordered = sorted(logprobs)
    lowest = ordered[: headline_count(len(ordered))]
    return {"grounding": math.exp(sum(lowest) / len(lowest)), "grounding.min": math.exp(ordered[0]),
            "grounding.mean": math.exp(sum(ordered) / len(ordered))}
