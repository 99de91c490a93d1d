"""ROUGE-L (precision, recall, F) of the retrieved contexts against the reference answer.

Reproduces `rouge-score` (Google's re-implementation of ROUGE-1.5.5) with one change: its tokenizer keeps
only [a-z0-9], so Chinese or Japanese text has no tokens and scores 0. Ours makes every Han or kana
character a token of its own and keeps other Unicode letters, while ASCII text tokenizes exactly as
rouge-score's default (lower-cased [a-z0-9] runs, Porter stemming of words longer than 3 characters).

Following the seed scheme, the reference is the *target* and the contexts (joined in rank order) the
*prediction*: recall = LCS / reference tokens ("how much of the reference the contexts cover"),
precision = LCS / context tokens, F = harmonic mean. No context token scores 0, as in rouge-score; a reference
with no token (punctuation alone) is skipped with the reason, where rouge-score would give 0.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Sequence

from ..data.records import Sample
from ..text import CJK_LETTERS as _CJK_CHARS
from .base import Measurement, Metric, MetricContext, MetricOption, Outcome, Skipped
from .registry import register_metric

_TOKEN_RE = re.compile(f"[{_CJK_CHARS}]|[^\\W_{_CJK_CHARS}]+")
_ASCII_WORD_RE = re.compile(r"^[a-z0-9]+$")


class CJKTokenizer:
    """One token per Han/kana character; word tokens otherwise; optional Porter stemming of ASCII words.

    rouge-score only calls `tokenize`, so no base class is needed (importing it would load nltk early).
    """

    def __init__(self, use_stemmer: bool = True) -> None:
        from nltk.stem import porter  # rouge-score's own dependency; same stemmer as its default tokenizer

        self._stemmer = porter.PorterStemmer() if use_stemmer else None

    def tokenize(self, text: str) -> list[str]:
        """NFKC first, so full-width letters and digits (common in Chinese text) are their ASCII forms; ASCII
        text is unchanged by it."""
        tokens = _TOKEN_RE.findall(unicodedata.normalize("NFKC", text).lower())
        if self._stemmer is None:
            return tokens
        return [self._stemmer.stem(t) if len(t) > 3 and _ASCII_WORD_RE.match(t) else t for t in tokens]


@register_metric
class RougeL(Metric):
    """ROUGE-L of the retrieved contexts against the reference answer (CJK-aware tokens)."""

    name = "rouge_l"
    requires = ("contexts", "reference")
    columns = ("rouge_l.precision", "rouge_l.recall", "rouge_l.f")
    groups = ("classical",)
    options = (MetricOption("rouge_stemmer", True, "Porter-stem English words before ROUGE-L."),)

    @classmethod
    def create(cls, context: MetricContext, k: int | None) -> RougeL:
        return cls(use_stemmer=context.options["rouge_stemmer"])

    def __init__(self, use_stemmer: bool = True) -> None:
        from rouge_score import rouge_scorer  # imports nltk and scipy: seconds, so only when ROUGE-L is asked for

        self.use_stemmer = use_stemmer
        self._tokenizer = CJKTokenizer(use_stemmer)
        self._scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=self._tokenizer)

    def settings(self) -> dict[str, Any]:
        return {"tokenizer": "cjk-char", "stemmer": "porter" if self.use_stemmer else None, "contexts_joined": "\\n"}

    def pair(self, sample: Sample) -> tuple[str, str]:
        """(target, prediction): the reference, and the contexts joined in rank order."""
        return sample.reference or "", "\n".join(c.text for c in sample.contexts or ())

    def measure(self, samples: Sequence[Sample]) -> list[Outcome]:
        """Columns in the order precision, recall, F of `columns` (answer_rouge_l puts F first)."""
        precision, recall, f = _roles(self.columns)
        outcomes: list[Outcome] = []
        for sample in samples:
            target, prediction = self.pair(sample)
            if not self._tokenizer.tokenize(target):  # rouge-score gives 0 to a target with no token
                outcomes.append(Skipped("the reference has no word to match (only punctuation)"))
                continue
            score = self._scorer.score(target, prediction)["rougeL"]
            outcomes.append(Measurement({precision: score.precision, recall: score.recall, f: score.fmeasure}))
        return outcomes


def _roles(columns: Sequence[str]) -> tuple[str, str, str]:
    """Which column holds precision, recall and F: `.precision`, `.recall`, and the other one."""
    precision = next(c for c in columns if c.endswith(".precision"))
    recall = next(c for c in columns if c.endswith(".recall"))
    (f,) = [c for c in columns if c not in (precision, recall)]
    return precision, recall, f
