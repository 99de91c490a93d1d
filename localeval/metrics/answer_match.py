"""Is the answer the reference? The classical QA metrics, with no judge: exact match and token F1 as the
SQuAD v1.1 evaluation script defines them, ROUGE-L of the answer against the reference, and the
embedding similarity of the two (Ragas' answer_similarity).

SQuAD's normalisation (lower case, ASCII punctuation and the articles a/an/the removed, whitespace
collapsed) is kept exactly for text without CJK characters, so an English figure here is the figure the
script prints. It splits on whitespace, which leaves Chinese or Japanese text as one token per phrase, so
an answer that shares most characters with the reference would score 0: when the answer or the reference
holds a CJK character, both are read the way CMRC 2018's evaluation reads Chinese (each Han or kana
character a token, runs of other letters and digits a token each, every Unicode punctuation mark and
space dropped). A sample has one reference: SQuAD's maximum over several ground truths is the user's to
take by scoring each.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from typing import Any, Sequence

import numpy as np

from ..data.records import Sample
from ..text import CJK_LETTERS, count_cjk_letters
from .base import Measurement, Metric, MetricContext, Outcome, Skipped
from .registry import register_metric
from .rouge import RougeL

#: SQuAD scores a reference with no word left ("A", "—") 0 against anything, and exact match then 1 against
#: an answer that is as empty: neither says whether the answer is right.
EMPTY_REFERENCE = "the reference has no word left after normalisation (punctuation and a/an/the are dropped)"
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)
_CJK_TOKEN = re.compile(f"[{CJK_LETTERS}]|[^\\W_{CJK_LETTERS}]+")


def normalize_answer(text: str) -> str:
    """SQuAD v1.1's normalize_answer: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def answer_tokens(text: str, cjk: bool) -> list[str]:
    """The tokens exact match and F1 compare: SQuAD's whitespace tokens of the normalised text, or, for
    CJK text, characters and word runs with punctuation dropped, full-width letters and digits read as
    their ASCII forms (NFKC: １９９０ is 1990)."""
    if not cjk:
        return normalize_answer(text).split()
    text = unicodedata.normalize("NFKC", text)
    kept = "".join(" " if unicodedata.category(ch).startswith("P") else ch for ch in text.lower())
    return _CJK_TOKEN.findall(kept)


def is_cjk_pair(answer: str, reference: str) -> bool:
    """Whether the pair is read as Chinese or Japanese: a Han or kana letter in either (a full-width bracket
    or space in an English answer is not one)."""
    return count_cjk_letters(answer) > 0 or count_cjk_letters(reference) > 0


def exact_match(answer: str, reference: str) -> float:
    """1.0 when the normalised texts are equal (for CJK text: the same token sequence)."""
    if not is_cjk_pair(answer, reference):
        return float(normalize_answer(answer) == normalize_answer(reference))
    return float(answer_tokens(answer, True) == answer_tokens(reference, True))


def token_f1(answer: str, reference: str) -> tuple[float, float, float]:
    """(F1, precision, recall) of the tokens the two share, counted with multiplicity; 0 when they share
    none (SQuAD v1.1 scores two empty texts 0 too)."""
    cjk = is_cjk_pair(answer, reference)
    predicted, gold = answer_tokens(answer, cjk), answer_tokens(reference, cjk)
    same = sum((Counter(predicted) & Counter(gold)).values())
    if same == 0:
        return 0.0, 0.0, 0.0
    precision, recall = same / len(predicted), same / len(gold)
    return 2 * precision * recall / (precision + recall), precision, recall


class _AnswerMetric(Metric):
    """A classical metric of the answer against the reference: one value (or a few) per sample."""

    name = ""
    columns: tuple[str, ...] = ()
    requires = ("answer", "reference")
    groups: tuple[str, ...] = ("correctness",)

    def settings(self) -> dict[str, Any]:
        return {}

    def measure(self, samples: Sequence[Sample]) -> list[Outcome]:
        return [Measurement(self.values(s.answer or "", s.reference or ""))
                if answer_tokens(s.reference or "", is_cjk_pair(s.answer or "", s.reference or ""))
                else Skipped(EMPTY_REFERENCE) for s in samples]

    def values(self, answer: str, reference: str) -> dict[str, float]:
        raise NotImplementedError


@register_metric
class ExactMatch(_AnswerMetric):
    """1 when the answer equals the reference after SQuAD's normalisation (CJK: character tokens), else 0."""

    name = "exact_match"
    columns = ("exact_match",)
    aliases = ("em",)

    def settings(self) -> dict[str, Any]:
        return {"normalisation": "squad-v1.1", "cjk": "characters"}

    def values(self, answer: str, reference: str) -> dict[str, float]:
        return {"exact_match": exact_match(answer, reference)}


@register_metric
class TokenF1(_AnswerMetric):
    """F1 of the tokens the answer shares with the reference (SQuAD v1.1; CJK: character tokens)."""

    name = "token_f1"
    columns = ("token_f1", "token_f1.precision", "token_f1.recall")
    aliases = ("f1",)

    def settings(self) -> dict[str, Any]:
        return {"normalisation": "squad-v1.1", "cjk": "characters"}

    def values(self, answer: str, reference: str) -> dict[str, float]:
        f1, precision, recall = token_f1(answer, reference)
        return {"token_f1": f1, "token_f1.precision": precision, "token_f1.recall": recall}


@register_metric
class AnswerRougeL(RougeL):
    """ROUGE-L F of the answer against the reference answer (CJK-aware tokens, as rouge_l)."""

    name = "answer_rouge_l"
    requires = ("answer", "reference")
    columns = ("answer_rouge_l", "answer_rouge_l.precision", "answer_rouge_l.recall")
    groups = ()

    def settings(self) -> dict[str, Any]:
        return {k: v for k, v in super().settings().items() if k != "contexts_joined"}

    def pair(self, sample: Sample) -> tuple[str, str]:
        return sample.reference or "", sample.answer or ""


@register_metric
class AnswerSimilarity(Metric):
    """Cosine similarity of the answer's and the reference's embeddings (Ragas' answer_similarity)."""

    name = "answer_similarity"
    columns = ("answer_similarity",)
    requires = ("answer", "reference")
    groups = ("correctness",)
    aliases = ("semantic_similarity",)
    models = ("embedder",)

    @classmethod
    def create(cls, context: MetricContext, k: int | None) -> AnswerSimilarity:
        return cls(context.kit)

    def __init__(self, kit: Any) -> None:
        self.kit = kit

    def settings(self) -> dict[str, Any]:
        return {"embedder": self.kit.embedder_settings()}

    def measure(self, samples: Sequence[Sample]) -> list[Outcome]:
        outcomes: list[Outcome] = []
        by_lang: dict[str, list[int]] = {}
        for i, sample in enumerate(samples):
            by_lang.setdefault(self.kit.lang(sample), []).append(i)
        cosines: dict[int, float] = {}
        details: dict[int, dict[str, Any]] = {}
        for lang, rows in by_lang.items():
            embedder = self.kit.embedder_for(lang)
            texts = [t for i in rows for t in (samples[i].answer or "", samples[i].reference or "")]
            vectors = embedder.encode(texts).astype(np.float64)
            cut = embedder.cut(texts)
            for j, i in enumerate(rows):
                cosines[i] = float(np.clip(vectors[2 * j] @ vectors[2 * j + 1], -1.0, 1.0))
                details[i] = {"embedder": embedder.name}
                read_in_part = [field for field, was_cut in zip(("answer", "reference"), cut[2 * j: 2 * j + 2]) if was_cut]
                if read_in_part:  # the model embedded only their start: said, never silent
                    details[i]["truncated"] = read_in_part
        for i in range(len(samples)):
            outcomes.append(Measurement({"answer_similarity": cosines[i]}, details[i]))
        return outcomes
