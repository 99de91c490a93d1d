"""RAGChecker's diagnostic metrics: why an answer is wrong, read off one set of claim verdicts.

Four sets of verdicts (correctness.py, `claim_verdicts`): each answer claim k against the reference
(c_k: is it correct?) and against each retrieved chunk j (A_kj); each reference claim i against the answer
(v_i: does the answer say it?) and against each chunk (R_ij). RAGChecker reads each as true or false; here
each is the judge's probability, and its formulas are read as expectations: "any chunk" is the highest P
over the chunks, "not" is 1 − P, "and" is the product. Where every P is 0 or 1 the values are RAGChecker's.

    claim_recall        = mean_i max_j R_ij: the expected share of the reference's claims the chunks hold
    context_utilization = Σ_i r_i·v_i / Σ_i r_i with r_i = max_j R_ij: of the reference claims the chunks
                          hold, the share the answer says
    noise_sensitivity   = incorrect claims the answer took from a chunk: .relevant (a chunk holding some
                          reference claim, rel_j = max_i R_ij) and .irrelevant (only from chunks holding
                          none), each mean_k (1 − c_k)·F_k, where F_k = max_j rel_j·A_kj for .relevant and
                          (max_j (1 − rel_j)·A_kj)·(1 − that) for .irrelevant, as RAGChecker keeps them apart
    hallucination       = mean_k (1 − max_j A_kj)·(1 − c_k): claims neither in the chunks nor correct
    self_knowledge      = mean_k (1 − max_j A_kj)·c_k: correct claims the chunks do not hold

Lower is better for noise_sensitivity and hallucination. A run asking for several of them asks each
distinct question once: the metrics render the same prompts, and the judge's cache answers a repeat.
Departures from RAGChecker: a sample whose answer (or reference) has no checkable claim is skipped
rather than scored 0 where the metric reads those claims (context_utilization reads only the reference's), and so is context_utilization when the chunks are expected to hold less than half a
reference claim (RAGChecker's 0 there would say the generator used nothing it was given).
"""

from __future__ import annotations

from typing import Any, Sequence

from ..data.records import Sample
from .base import Measurement, Outcome, Skipped
from .correctness import ANSWER_IN_CHUNKS, CORRECT, COVERED, REFERENCE_IN_CHUNKS, ClaimMetric, ClaimVerdicts
from .registry import register_metric

#: context_utilization is skipped when the reference claims the chunks hold add up to less than this.
MIN_RECALLED = 0.5
GROUPS = ("ragchecker",)


def best(row: Sequence[float]) -> float:
    """P(some chunk holds the claim): the highest over the chunks, 0 with no chunk."""
    return max(row, default=0.0)


def best_rank(row: Sequence[float]) -> int | None:
    """The rank (1-based) of the chunk that holds the claim best."""
    return max(range(len(row)), key=lambda j: row[j]) + 1 if row else None


def _claims(texts: Sequence[str], **columns: Sequence[float | int | None]) -> list[dict[str, Any]]:
    return [{"text": text, **{key: (round(v, 6) if isinstance(v, float) else v) for key, v in zip(columns, values)}}
            for text, *values in zip(texts, *columns.values())]


@register_metric
class ClaimRecall(ClaimMetric):
    """Expected share of the reference's claims found in some retrieved chunk (RAGChecker's claim recall)."""

    name = "claim_recall"
    requires = ("contexts", "reference")
    groups = GROUPS
    wanted = (REFERENCE_IN_CHUNKS,)

    def measure_claims(self, verdicts: ClaimVerdicts, sample: Sample) -> Outcome:
        rows = verdicts.reference_in_chunks or []
        recalled = [best(row) for row in rows]
        return Measurement({self.name: sum(recalled) / len(recalled)},
                           {"reference_claims": _claims(verdicts.reference_claims, context=recalled,
                                                        chunk=[best_rank(r) for r in rows])})


@register_metric
class ContextUtilization(ClaimMetric):
    """Of the reference claims the chunks hold, the expected share the answer says (RAGChecker)."""

    name = "context_utilization"
    requires = ("answer", "contexts", "reference")
    groups = GROUPS
    wanted = (REFERENCE_IN_CHUNKS, COVERED)

    def measure_claims(self, verdicts: ClaimVerdicts, sample: Sample) -> Outcome:
        recalled = [best(row) for row in verdicts.reference_in_chunks or []]
        covered = verdicts.covered or []
        held = sum(recalled)
        if held < MIN_RECALLED:
            return Skipped("the contexts hold none of the reference's claims")
        return Measurement({self.name: sum(r * v for r, v in zip(recalled, covered)) / held},
                           {"reference_claims": _claims(verdicts.reference_claims, context=recalled, answer=covered)})


@register_metric
class NoiseSensitivity(ClaimMetric):
    """Expected share of the answer's claims that are wrong and taken from a relevant / irrelevant chunk."""

    name = "noise_sensitivity"
    columns = ("noise_sensitivity.relevant", "noise_sensitivity.irrelevant")
    lower_is_better = True
    requires = ("answer", "contexts", "reference")
    groups = GROUPS
    wanted = (CORRECT, ANSWER_IN_CHUNKS, REFERENCE_IN_CHUNKS)

    def measure_claims(self, verdicts: ClaimVerdicts, sample: Sample) -> Outcome:
        answer_rows, correct = verdicts.answer_in_chunks or [], verdicts.correct or []
        reference_rows = verdicts.reference_in_chunks or []
        n_chunks = len(sample.contexts or ())
        relevant = [max((row[j] for row in reference_rows), default=0.0) for j in range(n_chunks)]
        from_relevant = [max((r * a for r, a in zip(relevant, row)), default=0.0) for row in answer_rows]
        from_irrelevant = [max(((1 - r) * a for r, a in zip(relevant, row)), default=0.0) * (1 - f)
                           for row, f in zip(answer_rows, from_relevant)]
        n = len(correct)
        return Measurement(
            {"noise_sensitivity.relevant": sum((1 - c) * f for c, f in zip(correct, from_relevant)) / n,
             "noise_sensitivity.irrelevant": sum((1 - c) * f for c, f in zip(correct, from_irrelevant)) / n},
            {"claims": _claims(verdicts.answer_claims, correct=correct, relevant_chunk=from_relevant,
                               irrelevant_chunk=from_irrelevant),
             "chunks": [{"rank": j + 1, "relevant": round(p, 6)} for j, p in enumerate(relevant)]})


class _Unfaithful(ClaimMetric):
    """Answer claims no chunk holds, split by whether the reference finds them correct."""

    requires = ("answer", "contexts", "reference")
    groups = GROUPS
    wanted = (CORRECT, ANSWER_IN_CHUNKS)
    #: True: count the correct ones (self_knowledge); False: the incorrect ones (hallucination).
    correct_ones = False

    def measure_claims(self, verdicts: ClaimVerdicts, sample: Sample) -> Outcome:
        # hallucination reads a run-on claim at its lowest cut (in no chunk is its cautious side);
        # self_knowledge, which is neither good nor bad, reads the claim as it stands
        lowest = None if self.correct_ones else verdicts.answer_in_chunks_lowest
        rows, correct = lowest or verdicts.answer_in_chunks or [], verdicts.correct or []
        outside = [1 - best(row) for row in rows]
        weight = [c if self.correct_ones else 1 - c for c in correct]
        return Measurement({self.name: sum(o * w for o, w in zip(outside, weight)) / len(correct)},
                           {"claims": _claims(verdicts.answer_claims, correct=correct,
                                              context=[best(row) for row in rows],
                                              chunk=[best_rank(row) for row in rows])})


@register_metric
class Hallucination(_Unfaithful):
    """Expected share of the answer's claims that are wrong and in no retrieved chunk (RAGChecker)."""

    name = "hallucination"
    lower_is_better = True


@register_metric
class SelfKnowledge(_Unfaithful):
    """Expected share of the answer's claims that are correct but in no retrieved chunk (RAGChecker)."""

    name = "self_knowledge"
    correct_ones = True
