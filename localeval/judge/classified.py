"""The judge with a trained classifier in front (`--classifier DIR`): the yes/no questions of the prompts
the classifier was trained for are answered by it, every other question by the GGUF judge, which loads
only when such a question comes. Metrics keep their flows; only who answers changes. A pair the
cross-encoder cannot read whole (an answer to rate, or a statement, longer than its window) goes to the
GGUF judge too: the classifier never scores a text with its end cut off.

A classifier reads the pair of texts the prompt was rendered with (RenderedPrompt.variables), not the
chat, a faithfulness statement with its marks (classifier/reading.py). Its answers go through the judge
cache like any judge's, keyed by the classifier folder's hash and the pair as it reads it, so a resumed
run asks nothing twice and another classifier never reuses them. A text too long for the
cross-encoder is windowed by its own tokenizer, as the GGUF judge windows by its context: the budget
that `context_budget` returns for a classifier prompt carries the counter its windows are cut with.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable, Sequence

from ..classifier.folder import Classifier, ClassifierError, ClassifierFolder
from ..classifier.judgements import Judgement
from ..classifier.reading import PAIR_OVERHEAD, shown
from .backend import CallStats
from .cache import JudgeCache, make_key
from .facade import Answer, Ask, Judge
from .prompts import RenderedPrompt
from .windows import split_to_fit

#: The fewest tokens of a passage a window may hold; a statement or question that leaves less goes to the
#: GGUF judge with its windows, rather than being checked against scraps of a few words.
MIN_WINDOW = 32
LANG_NAMES = {"en": "English", "zh": "Chinese"}


class TokenBudget(int):
    """A window size in the classifier's tokens: `windows` cuts with the counter it carries, and a statement
    counts with the other (marked, as a faithfulness classifier reads it: classifier/reading.py)."""

    count_tokens: Callable[[str], int]
    count_statement: Callable[[str], int]

    def __new__(cls, value: int, count_tokens: Callable[[str], int],
                count_statement: Callable[[str], int]) -> TokenBudget:
        budget = super().__new__(cls, value)
        budget.count_tokens = count_tokens
        budget.count_statement = count_statement
        return budget


class ClassifiedJudge:
    """Judge's interface (ask, context_budget, windows, describe, totals, close) over a classifier and a
    lazily opened GGUF judge sharing one cache."""

    def __init__(self, folder: ClassifierFolder, cache: JudgeCache, open_llm: Callable[[JudgeCache], Judge],
                 threads: int | None = None) -> None:
        self.folder = folder
        self.classifier = Classifier(folder, threads)
        self.cache = cache
        self._open_llm = open_llm
        self._llm: Judge | None = None
        self._own = CallStats()

    @property
    def llm(self) -> Judge:
        if self._llm is None:
            self._llm = self._open_llm(self.cache)
        return self._llm

    @property
    def totals(self) -> CallStats:
        return self._own + (self._llm.totals if self._llm is not None else CallStats())

    def describe(self) -> dict[str, Any]:
        return {**(self._llm.describe() if self._llm is not None else {}),
                "classifier": {**self.folder.describe(), "precision": self.classifier.precision}}

    # ---- windows ---------------------------------------------------------------------------------

    def context_budget(self, prompt: RenderedPrompt, max_tokens: int | None = None) -> int:
        judgement = self._judgement(prompt)
        if judgement is None:
            return self.llm.context_budget(prompt, max_tokens)

        def count(text: str) -> int:
            return self.classifier.count_tokens(judgement, text)

        def count_statement(text: str) -> int:
            return self.classifier.pair_tokens(judgement, "", text)

        # The text to window is empty in `prompt`, so a statement counts with every content word marked: the
        # most its marks against any window can take (classifier/reading.py).
        used = self.classifier.pair_tokens(judgement, *_pair(judgement, prompt))
        budget = self.classifier.max_tokens(judgement) - PAIR_OVERHEAD - used
        if budget < MIN_WINDOW:
            return self.llm.context_budget(prompt, max_tokens)
        return TokenBudget(budget, count, count_statement)

    def windows(self, text: str, budget: int) -> list[str]:
        if not isinstance(budget, TokenBudget):
            return self.llm.windows(text, budget)
        return [text] if budget.count_tokens(text) <= budget else split_to_fit(text, budget, budget.count_tokens)

    def __getattr__(self, name: str) -> Any:
        """Everything else a metric may use of a judge (render, count_tokens, json, ...) is the GGUF judge's."""
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.llm, name)

    # ---- questions -------------------------------------------------------------------------------

    def ask(self, asks: Sequence[Ask]) -> list[Answer]:
        """Answers in order: the classifier's for the questions it was trained for (cached, batched per
        judgement), the GGUF judge's for the rest."""
        answers: list[Answer | None] = [None] * len(asks)
        mine: dict[Judgement, list[int]] = {}
        for i, ask in enumerate(asks):
            judgement = self._judgement(ask.prompt, ask.kind)
            if judgement is not None and self._reads_whole(judgement, ask.prompt):
                mine.setdefault(judgement, []).append(i)
        for judgement, indices in mine.items():
            for i, answer in zip(indices, self._classify(judgement, [asks[i] for i in indices])):
                answers[i] = answer
        rest = [i for i, answer in enumerate(answers) if answer is None]
        if rest:
            for i, answer in zip(rest, self.llm.ask([asks[i] for i in rest])):
                answers[i] = answer
        return answers  # type: ignore[return-value]

    def _judgement(self, prompt: RenderedPrompt, kind: str | None = None) -> Judgement | None:
        judgement = self.folder.answers(prompt.name)
        if judgement is None or (kind is not None and kind != judgement.kind):
            return None
        if prompt.lang != self.folder.lang:
            question = str(prompt.variables.get("question", ""))[:60]
            raise ClassifierError(
                f"a {LANG_NAMES.get(prompt.lang, prompt.lang)} sample (question {question!r}): the classifier "
                f"{self.folder.path} was trained for {LANG_NAMES.get(self.folder.lang, self.folder.lang)} only "
                "(its base model reads no other language); score these samples without --classifier")
        return judgement

    def _reads_whole(self, judgement: Judgement, prompt: RenderedPrompt) -> bool:
        """Whether the pair fits the cross-encoder, which would otherwise cut its end off unread: a windowed
        passage always fits (context_budget), an answer to rate or a statement too long does not, and goes
        to the GGUF judge."""
        used = self.classifier.pair_tokens(judgement, *_pair(judgement, prompt))
        return used + PAIR_OVERHEAD <= self.classifier.max_tokens(judgement)

    def _classify(self, judgement: Judgement, asks: Sequence[Ask]) -> list[Answer]:
        """Each distinct pair looked up in the cache, the rest scored in one batch and cached; as in the
        facade, a pair's first fresh answer counts as a call and any repeat as a cache hit."""
        pairs = [_pair(judgement, ask.prompt) for ask in asks]
        # keyed by what the model reads, so a verdict is never reused for a pair read otherwise
        keys = [make_key(model_sha256=self.folder.sha256, judgement=judgement.name, precision=self.classifier.precision,
                         pair=list(shown(judgement, *pair))) for pair in pairs]
        distinct = dict(zip(keys, pairs))
        values: dict[str, float] = {}
        for key in distinct:
            found = self.cache.get(key)
            if found is not None:
                values[key] = float(found[0])
        todo = [key for key in distinct if key not in values]
        seconds = 0.0
        if todo:
            started = time.perf_counter()
            values.update(zip(todo, self.classifier.probabilities(judgement, [distinct[k] for k in todo])))
            seconds = (time.perf_counter() - started) / len(todo)
            self.cache.put_entries([(key, "classifier", self.folder.sha256, f"classifier:{judgement.name}",
                                     json.dumps(values[key]), json.dumps({"seconds": seconds}), time.time())
                                    for key in todo])
        fresh = set(todo)
        answers = []
        for ask, key in zip(asks, keys):
            stats = CallStats(calls=1, seconds=seconds, classified=1) if key in fresh else CallStats(cache_hits=1)
            fresh.discard(key)
            self._own = self._own + stats
            answers.append(Answer(_value(ask, values[key]), stats, mass=1.0))
        return answers

    def close(self) -> None:
        if self._llm is not None:
            self._llm.close()  # closes the shared cache too
            self._llm = None
        else:
            self.cache.close()


def _pair(judgement: Judgement, prompt: RenderedPrompt) -> tuple[str, str]:
    return str(prompt.variables.get(judgement.first, "")), str(prompt.variables.get(judgement.second, ""))


def _value(ask: Ask, p: float) -> Any:
    """P(yes) for a yes/no question; for a rating, the classifier's P put on the top level and 1 − P on the
    bottom one, so the metric's expected rating reads (E − 1) / 4 = P."""
    if ask.kind == "yes_no":
        return p
    options = list(ask.groups or {})
    return {o: (p if o == options[-1] else (1.0 - p) if o == options[0] else 0.0) for o in options}
