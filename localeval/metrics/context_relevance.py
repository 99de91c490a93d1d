"""Are the retrieved contexts relevant to the question? Per sentence (how much of them is needed) and per
passage (does each contain what is needed: what ARES's context-relevance labels measure).

context_relevance (ARES / Ragas' context relevancy): the contexts are split into sentences (English and
Chinese punctuation) and the share of sentences needed to answer the question is

    context_relevance = |needed sentences| / |all sentences|

method="list": the sentences are numbered and the judge returns the numbers of the needed ones under a
JSON schema, so no sentence is ever rewritten or misquoted. method="probability": each sentence gets
P(needed) from the next-token probabilities of Yes/No, with the question and the passages first in the
prompt (reused from the KV cache) and the sentence last; a sentence is needed when P ≥ 0.5.

passage_relevance: each context gets P(it contains information needed to answer the question), and

    passage_relevance = mean over contexts of P(relevant)

with the probabilities per context in the details (a context longer than the judge's window counts its
best window).
"""

from __future__ import annotations

from typing import Any

from ..data.records import Sample
from ..judge.facade import Ask
from ..judge.injection import screen
from ..judge.windows import split_to_fit
from ..model_kit import ModelKit
from ..text import split_sentences
from .base import ChunkDetails, Measurement, MetricContext, MetricOption, Outcome, Skipped, check_choices
from .judged import THRESHOLD, Flow, VerdictMetric, threshold_of
from .registry import register_metric
from .steps import best_of_windows

METHODS = ("list", "probability")


@register_metric
class ContextRelevance(VerdictMetric):
    """Share of the contexts' sentences the judge finds needed to answer the question."""

    name = "context_relevance"
    requires = ("contexts",)
    options = VerdictMetric.options + (MetricOption("context_relevance_method", "list", "context_relevance: the judge lists the needed "
                            "sentences (JSON), or gives each sentence a probability.", choices=METHODS),)

    @classmethod
    def create(cls, context: MetricContext, k: int | None) -> ContextRelevance:
        return cls(context.kit, method=context.options["context_relevance_method"], threshold=threshold_of(context, cls.name))

    def __init__(self, kit: ModelKit, method: str = "list", threshold: float = THRESHOLD) -> None:
        check_choices(self.name, (method, METHODS))
        super().__init__(kit, threshold)
        self.method = method

    def settings(self) -> dict[str, Any]:
        return {"method": self.method, **super().settings()}

    def flow(self, sample: Sample, lang: str) -> Flow[Outcome]:
        # each screened alone: a forged turn is cut to its paragraph's end, which in the one-per-line list the
        # judge sees would take every later sentence, of every context, with it
        sentences = [screen(s).text.strip() for c in sample.contexts or () for s in split_sentences(c.text)]
        if not sentences:
            return Skipped("contexts have no text")
        if self.method == "probability":  # a sentence is shown twice: among the passages and on its own
            sentences = self._fitted(sentences, 0.5, "sentence_relevant", lang, question=sample.question, passages="",
                                     sentence="")
            return (yield from self._probabilities(sample, lang, sentences))
        sentences = self._fitted(sentences, 1.0, "context_sentences", lang, question=sample.question, sentences="")
        needed: set[int] = set()
        out_of_range = 0
        windows = self._windows(sentences, "context_sentences", lang, question=sample.question, sentences="")
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

    def _probabilities(self, sample: Sample, lang: str, sentences: list[str]) -> Flow[Outcome]:
        longest = max(sentences, key=self.kit.judge.count_tokens)
        windows = self._windows(sentences, "sentence_relevant", lang, question=sample.question, passages="",
                                sentence=longest)
        asks = []
        for start, stop in windows:
            passages = "\n".join(sentences[start:stop])
            asks += [Ask.yes_no(self.kit.prompt("sentence_relevant", lang, question=sample.question, passages=passages,
                                                sentence=sentences[i])) for i in range(start, stop)]
        answers = yield asks
        probs = [answer.value for answer in answers]
        needed = [i + 1 for i, p in enumerate(probs) if p >= self.threshold]
        return Measurement({self.name: len(needed) / len(sentences)},
                           {"sentences": len(sentences), "needed": needed, "p": [round(p, 6) for p in probs],
                            "windows": len(windows)})

    def _fitted(self, items: list[str], share: float, prompt: str, lang: str, **empty: str) -> list[str]:
        """The sentences, each longer than `share` of the prompt's room cut into pieces that fit, each then
        counted as a sentence: text with no sentence marks (a PDF's, Chinese with commas only) would
        overflow any window, and the whole sample be lost."""
        judge = self.kit.judge
        room = int(judge.context_budget(self.kit.prompt(prompt, lang, **empty)) * share) - judge.count_tokens("99. \n")
        return [piece for sentence in items
                for piece in (split_to_fit(sentence, room, judge.count_tokens) if judge.count_tokens(sentence) > room
                              else [sentence])]

    def _windows(self, items: list[str], prompt: str, lang: str, **empty: str) -> list[tuple[int, int]]:
        """Consecutive runs of sentences whose (numbered) list fits the judge's window."""
        judge = self.kit.judge
        budget = judge.context_budget(self.kit.prompt(prompt, lang, **empty))
        windows, start, used = [], 0, 0
        for i, sentence in enumerate(items):
            cost = judge.count_tokens(f"{i - start + 1}. {sentence}\n")
            if i > start and used + cost > budget:
                windows.append((start, i))
                start, used = i, judge.count_tokens(f"1. {sentence}\n")
            else:
                used += cost
        windows.append((start, len(items)))
        return windows


@register_metric
class PassageRelevance(VerdictMetric):
    """Mean P(a retrieved passage contains what is needed to answer the question), per passage in the details."""

    name = "passage_relevance"
    requires = ("contexts",)
    chunk_details = ChunkDetails("passages", label="relevant", in_order=False)

    def flow(self, sample: Sample, lang: str) -> Flow[Outcome]:
        ranked = [(rank, c) for rank, c in enumerate(sample.contexts or (), start=1) if c.text.strip()]
        contexts = [c for _, c in ranked]
        if not contexts:
            return Skipped("contexts have no text")
        probs = yield from best_of_windows(self.kit, lang, "passage_relevant", "passage", [c.text for c in contexts],
                                           question=sample.question)
        return Measurement({self.name: sum(probs) / len(probs)},
                           {"passages": [{"id": c.id, "rank": rank, "p": round(p, 6), "relevant": p >= self.threshold}
                                         for (rank, c), p in zip(ranked, probs)]})
