"""What the judge metrics share: one lazily loaded judge and embedder, prompts in the sample's language,
per-metric accounting, and the two steps several metrics are built from (statements, support).

The judge and the embedder are loaded on first use, so `localeval score -m mrr` never pays for them, and
once per run, however many metrics use them. Shared steps go through the judge's persistent cache, so
when two metrics ask the same question (say, faithfulness and a re-run) the model answers once.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..errors import JudgeError
from ..records import Context, Sample
from .base import Measurement, Outcome, Skipped

#: A statement counts as supported, a chunk as useful, when the judge's probability is at least this.
THRESHOLD = 0.5
#: Words per atomic fact, for the cap on the statements list (see statements_of).
WORDS_PER_FACT = 5


@dataclass(frozen=True)
class JudgeOptions:
    """Everything that selects or configures the judge and the embedder; recorded in the summary."""

    judge: str | None = None  # registry name or .gguf path; None = the registry's default judge
    embedder: str | None = None  # registry name or model folder; None = the default embedder
    n_ctx: int = 4096
    n_threads: int | None = None
    gpu_layers: int = 0
    seed: int = 0
    cache: str | None = None  # SQLite file; None = $LOCALEVAL_CACHE or .localeval-cache/judge.sqlite
    prompts_dir: str | None = None
    lang: str | None = None  # force "en" or "zh"; None = detect per sample

    def settings(self) -> dict[str, Any]:
        return {"judge": self.judge or "default", "n_ctx": self.n_ctx, "seed": self.seed, "lang": self.lang or "auto",
                "prompts": self.prompts_dir or "packaged"}


@dataclass
class JudgeKit:
    """The shared, lazily built judge and embedder of one run."""

    options: JudgeOptions = field(default_factory=JudgeOptions)
    _judge: Any = None
    _embedder: Any = None
    _prompts: dict[tuple[str, str], Any] = field(default_factory=dict)

    @property
    def judge(self) -> Any:
        if self._judge is None:
            from ..judge import Judge

            o = self.options
            self._judge = Judge(o.judge, n_ctx=o.n_ctx, n_threads=o.n_threads, n_gpu_layers=o.gpu_layers, seed=o.seed,
                                cache=o.cache)
        return self._judge

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from ..embeddings import load_embedder

            self._embedder = load_embedder(self.options.embedder)
        return self._embedder

    def lang(self, sample: Sample) -> str:
        from ..prompts import detect_lang

        return detect_lang(f"{sample.question}\n{sample.answer or ''}", self.options.lang)

    def prompt(self, name: str, lang: str, **variables: Any) -> Any:
        """Each prompt file is read and parsed once per run, not once per judge call."""
        if (name, lang) not in self._prompts:
            from ..prompts import load_prompt

            self._prompts[name, lang] = load_prompt(name, lang, self.options.prompts_dir)
        return self._prompts[name, lang].render(**variables)

    def model_info(self) -> dict[str, Any]:
        """Which judge produced the numbers (only when it was loaded)."""
        if self._judge is None:
            return {}
        return {"judge_model": str(self._judge.model_path.name), "judge_sha256": self._judge.model_sha256}


class Usage:
    """Judge work per sample (for details) and in total (for the summary) of one metric."""

    def __init__(self, kit: JudgeKit) -> None:
        self.kit = kit
        self.total: Any = None

    def start(self) -> Any:
        return self.kit.judge.totals

    def since(self, mark: Any) -> dict[str, Any]:
        used = self.kit.judge.totals - mark
        self.total = used if self.total is None else self.total + used
        return _rounded(used.as_dict())

    def as_dict(self) -> dict[str, Any]:
        return _rounded(self.total.as_dict()) if self.total is not None else {}


class JudgeMetric:
    """Per-sample loop, language choice, accounting and judge-error handling shared by the judge metrics.

    A judge error (output cut off, prompt too long even after windowing) skips the sample with the
    reason, counted in the summary: one odd sample never stops a long run, and never becomes a NaN.
    """

    name = ""
    columns: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    #: Tells the pipeline to score sample by sample (progress, resumability) rather than in big batches.
    slow = True

    def __init__(self, kit: JudgeKit) -> None:
        self.kit = kit
        self.columns = self.columns or (self.name,)
        self._usage = Usage(kit)

    def settings(self) -> dict[str, Any]:
        return {"threshold": THRESHOLD, **self.kit.options.settings()}

    def usage(self) -> dict[str, Any]:
        return self._usage.as_dict()

    def measure(self, samples: Sequence[Sample]) -> list[Outcome]:
        outcomes: list[Outcome] = []
        for sample in samples:
            mark = self._usage.start()
            lang = self.kit.lang(sample)
            try:
                outcome = self._one(sample, lang)
            except JudgeError as exc:
                outcome = Skipped(f"judge error: {exc}")
            used = self._usage.since(mark)
            if isinstance(outcome, Measurement):
                outcome.details.update(lang=lang, judge=used)
            outcomes.append(outcome)
        return outcomes

    def _one(self, sample: Sample, lang: str) -> Outcome:
        raise NotImplementedError


def _rounded(stats: dict[str, Any]) -> dict[str, Any]:
    """Seconds vary run to run; round them so details stay readable (the values are never compared)."""
    return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in stats.items()}


def joined(passages: Sequence[Context]) -> str:
    """Passages as one text, numbered in rank order, so the judge sees where each begins."""
    return "\n\n".join(f"[{i}] {p.text.strip()}" for i, p in enumerate(passages, start=1))


def statements_of(kit: JudgeKit, lang: str, question: str, text: str) -> list[str]:
    """The judge's decomposition of `text` into standalone statements (schema-constrained, so it parses).

    The schema caps the list by the text's length (about one fact per WORDS_PER_FACT words, or per
    2 * WORDS_PER_FACT Chinese characters): measured on the 1.5B judge, an uncapped list pads a one-sentence
    answer with paraphrases and background facts the answer never stated, which skews the score.
    """
    prompt = kit.prompt("statements", lang, question=question, answer=text)
    schema = copy.deepcopy(prompt.schema)
    items = schema["properties"]["statements"]
    items["maxItems"] = min(items.get("maxItems", 8), max_statements(text))
    value, _ = kit.judge.json(prompt, schema=schema)
    seen: list[str] = []
    for statement in value["statements"]:
        statement = statement.strip()
        if statement and statement not in seen:
            seen.append(statement)
    return seen


def max_statements(text: str) -> int:
    """An upper bound on the atomic facts in `text`."""
    cjk = sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff")
    words = len(text.split()) + cjk / 2
    return max(1, math.ceil(words / WORDS_PER_FACT))


def support(kit: JudgeKit, lang: str, statements: Sequence[str], passages: Sequence[Context]) -> tuple[list[float], int]:
    """P(supported) of each statement given the passages, and how many windows the passages took.

    The passages come first in the prompt and the statement last, so every statement after the first
    reuses the passages' KV cache. Passages longer than the judge's window are split at sentence ends
    into windows that fit; a statement's probability is its maximum over windows (it is supported if
    some part of the passages supports it). The number of windows goes into the details: nothing is
    ever silently truncated.
    """
    judge = kit.judge
    text = joined(passages)
    longest = max(statements, key=len, default="")
    budget = judge.context_budget(kit.prompt("verify_statement", lang, context="", statement=longest)) - 8
    windows = [text] if judge.count_tokens(text) <= budget else judge.split_to_fit(text, budget)
    best = [0.0] * len(statements)
    for window in windows:
        for i, statement in enumerate(statements):
            p, _ = judge.yes_probability(kit.prompt("verify_statement", lang, context=window, statement=statement))
            best[i] = max(best[i], p)
    return best, len(windows)


def passages_for(sample: Sample, against: str) -> tuple[Context, ...]:
    """The passages a statement is checked against: the retrieved contexts or the reference documents."""
    return (sample.reference_docs if against == "reference_docs" else sample.contexts) or ()
