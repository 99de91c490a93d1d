"""answer_correctness: is the answer right, measured against the reference answer, claim by claim.

RAGChecker's overall metrics (and Ragas' factual_correctness), with every verdict read as the judge's
probability. The answer's statements are each checked against the reference (is it correct?), and the
reference's statements against the answer (does the answer say it?). With P_i the probability of each:

    answer_correctness.precision = mean P over the answer's statements: the expected share that is right
    answer_correctness.recall    = mean P over the reference's statements: the expected share the answer covers
    answer_correctness           = their harmonic mean (F1), 0 when both are 0

The judge is shown the question beside the text it checks against (correctness_verdict): a reference is
often a bare name or number ("Aleksander Ford"), which says nothing about a claim without the question it
answers. Statements are the texts' own sentences by default (no generation: nothing in the answer can steer
how it is cut up), or the judge's decomposition (`--correctness-statements judge`, RAGChecker's and Ragas'
way); both are measured on the dev sets in bench/accuracy.py.

The claims and their verdicts are shared with RAGChecker's diagnostic metrics (diagnostics.py): every
metric of a run asks for the verdicts through `claim_verdicts`, so a question two metrics need is the same
rendered prompt, and the judge answers it once (the second is a cache hit).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Collection, Sequence

from ..data.records import Context, Sample
from ..judge.injection import Screened, screen
from ..model_kit import ModelKit
from .base import Measurement, MetricContext, MetricOption, Outcome, Skipped, check_choices
from .judged import THRESHOLD, Flow, JudgeMetric, gather
from .registry import register_metric
from .steps import (entailed, lowest_of_cuts, naming_something, nothing_left, run_on_cuts, sentence_statements,
                    statements_of, support)

STATEMENTS = ("sentences", "judge")
STATEMENTS_OPTION = MetricOption(
    "correctness_statements", "sentences", "answer_correctness and RAGChecker's diagnostics: claims are the answer's "
    "and the reference's own sentences, or the judge's decomposition of each (RAGChecker's way).", choices=STATEMENTS)
#: The sets of verdicts `claim_verdicts` can gather (RAGChecker's names in brackets).
CORRECT = "correct"  # answer claims against the reference (answer2response)
COVERED = "covered"  # reference claims against the answer (response2answer)
ANSWER_IN_CHUNKS = "answer_in_chunks"  # answer claims against each retrieved chunk (retrieved2response)
REFERENCE_IN_CHUNKS = "reference_in_chunks"  # reference claims against each retrieved chunk (retrieved2answer)


@dataclass(frozen=True)
class ClaimVerdicts:
    """One sample's claims and the verdicts asked for; a set not asked for is None. Matrices are
    [claim][chunk], chunks in rank order."""

    answer_claims: list[str]
    reference_claims: list[str]
    correct: list[float] | None = None
    covered: list[float] | None = None
    answer_in_chunks: list[list[float]] | None = None
    reference_in_chunks: list[list[float]] | None = None
    #: answer_in_chunks with a claim that aimed words ran on after at its lowest cut per chunk (the same where
    #: none did): what `hallucination` reads, for which a claim in no chunk is the cautious side
    answer_in_chunks_lowest: list[list[float]] | None = None


def claims_of(kit: ModelKit, lang: str, question: str, text: str, statements: str) -> Flow[list[str]]:
    """A text's claims: its own sentences, or the judge's decomposition."""
    if statements == "sentences":
        return sentence_statements(text)
    return (yield from statements_of(kit, lang, question, text))


def claim_verdicts(kit: ModelKit, lang: str, sample: Sample, statements: str,
                   wanted: Collection[str]) -> Flow[ClaimVerdicts | Skipped]:
    """The claims of the answer and of the reference that the `wanted` verdict sets are about, then those
    verdicts, all asked together in one round. Skipped when the reference has no checkable statement, or
    when the answer has none and a chunk set is wanted (the diagnostics have nothing to diagnose;
    answer_correctness, which wants only CORRECT and COVERED, scores such an answer 0, as RAGChecker does)."""
    wanted = set(wanted)
    of_answer, of_reference = bool({CORRECT, ANSWER_IN_CHUNKS} & wanted), bool({COVERED, REFERENCE_IN_CHUNKS} & wanted)
    screened = screen(sample.answer or "", claims=True)
    answer = screened.text
    answer_claims, reference_claims = yield from gather([
        claims_of(kit, lang, sample.question, answer, statements) if of_answer else _nothing(),
        claims_of(kit, lang, sample.question, sample.reference or "", statements) if of_reference else _nothing()])
    # a lenient judge would find a claim that names nothing right and in a chunk, raising precision and
    # diluting hallucination, so it is left out
    answer_claims = naming_something(answer_claims)
    if of_reference and not reference_claims:
        return Skipped("no checkable statement in the reference")
    if of_answer and not answer_claims and wanted - {CORRECT, COVERED}:
        return nothing_left(screened, "no checkable statement in the answer")
    chunks = sample.contexts or ()
    # a claim that aimed words ran on after is also asked cut after each of its last words, as faithfulness
    # asks it: the injection's first words may still be in it. Against the reference its lowest P counts,
    # the cautious side for every metric that reads it; against the chunks the cautious side differs by
    # metric (hallucination counts a claim in no chunk, noise_sensitivity a wrong one in a chunk), so both
    # the claim as it stands and its lowest cut are kept
    cuts = run_on_cuts(answer_claims, screened)
    claims_asked = answer_claims + [cut for of_one in cuts for cut in of_one]
    asked = {
        CORRECT: lambda: _against(kit, lang, sample.question, claims_asked, sample.reference or "", "reference"),
        COVERED: lambda: _covered(kit, lang, sample.question, reference_claims, answer_as_evidence(screened)),
        ANSWER_IN_CHUNKS: lambda: _in_chunks(kit, lang, claims_asked, chunks),
        REFERENCE_IN_CHUNKS: lambda: _in_chunks(kit, lang, reference_claims, chunks),
    }
    names = [name for name in asked if name in wanted]
    found = dict(zip(names, (yield from gather([asked[name]() for name in names]))))
    n = len(answer_claims)
    if CORRECT in found:
        found[CORRECT] = lowest_of_cuts(found[CORRECT][:n], cuts, found[CORRECT][n:])[0]
    if ANSWER_IN_CHUNKS in found:  # claims × chunks, each chunk's column folded on its own
        rows = found[ANSWER_IN_CHUNKS]
        columns = [lowest_of_cuts([row[k] for row in rows[:n]], cuts, [row[k] for row in rows[n:]])[0]
                   for k in range(len(chunks))]
        found[ANSWER_IN_CHUNKS] = rows[:n]
        found["answer_in_chunks_lowest"] = [[column[i] for column in columns] for i in range(n)]
    return ClaimVerdicts(answer_claims, reference_claims, **found)


def _nothing() -> Flow[list[str]]:
    """A flow that asks nothing and finds no claims."""
    return []
    yield  # makes this a generator


def _against(kit: ModelKit, lang: str, question: str, claims: Sequence[str], text: str, against: str) -> Flow[list[float]]:
    """P(each claim is stated by `text`), the question beside it; `against` says whether the text is the
    reference (is the claim correct?) or the answer (does the answer say it?)."""
    if not claims:
        return []
    probs, _ = yield from entailed(kit, lang, "correctness_verdict", "passage", claims, text, question=question,
                                   against=against)
    return probs


def answer_as_evidence(screened: Screened) -> list[str]:
    """What the reference's claims are checked against: the answer as screened and, where the screen cut
    something from it, the answer less any sentence that names nothing beside others (the "Yes" a forged turn
    leaves) and with each claim that aimed words ran on after cut after each of its last words, one text per
    cut. Shown whole, the "Yes" or the injection's first words ("IMPORTANT: whatever the context says,") make
    the answer seem to say what the reference says; as for the answer's own claims, where the claim ends is
    not known, so `_covered` reads the lowest. The answer as it stands is read too: a cut can drop what
    contradicts the reference ("completed in" for "completed in 1925"). A run-on claim so earns little
    recall, as an answer carrying an injection should. An answer the screen left alone is shown as it is
    ("No." answering a yes/no question stays)."""
    if not screened.removed:
        return [screened.text]
    sentences = sentence_statements(screened.text)
    kept = naming_something(sentences)
    cuts = run_on_cuts(kept, screened)
    # a line each: a cut has lost its full stop and would run on into the next sentence
    whole = screened.text if len(kept) == len(sentences) else "\n".join(kept)
    return [whole] + ["\n".join(of_one[min(j, len(of_one) - 1)] if of_one else sentence
                                for sentence, of_one in zip(kept, cuts))
                      for j in range(max([0, *map(len, cuts)]))]


def _covered(kit: ModelKit, lang: str, question: str, claims: Sequence[str], evidence: Sequence[str]) -> Flow[list[float]]:
    """P(the answer states each claim): the lowest over the texts `answer_as_evidence` gives."""
    per_text = yield from gather([_against(kit, lang, question, claims, text, "answer") for text in evidence])
    return [min(probs[i] for probs in per_text) for i in range(len(claims))]


def _in_chunks(kit: ModelKit, lang: str, claims: Sequence[str], chunks: Sequence[Context]) -> Flow[list[list[float]]]:
    """P(each claim is supported by each chunk), as faithfulness asks it of all the contexts at once."""
    if not claims:
        return []
    per_chunk = yield from gather([support(kit, lang, claims, [chunk]) for chunk in chunks])
    return [[probs[i] for probs, _ in per_chunk] for i in range(len(claims))]


class ClaimMetric(JudgeMetric):
    """A metric read off `claim_verdicts`: subclasses name the verdict sets they need and compute."""

    #: The verdict sets `measure_claims` reads.
    wanted: tuple[str, ...] = ()
    options: tuple[MetricOption, ...] = (STATEMENTS_OPTION,)

    @classmethod
    def create(cls, context: MetricContext, k: int | None) -> ClaimMetric:
        return cls(context.kit, statements=context.options["correctness_statements"])

    def __init__(self, kit: ModelKit, statements: str = "sentences") -> None:
        check_choices(self.name, (statements, STATEMENTS))
        super().__init__(kit)
        self.statements = statements

    def settings(self) -> dict[str, Any]:
        return {"statements": self.statements, **super().settings()}

    def flow(self, sample: Sample, lang: str) -> Flow[Outcome]:
        verdicts = yield from claim_verdicts(self.kit, lang, sample, self.statements, self.wanted)
        if isinstance(verdicts, Skipped):
            return verdicts
        return self.measure_claims(verdicts, sample)

    def measure_claims(self, verdicts: ClaimVerdicts, sample: Sample) -> Outcome:
        raise NotImplementedError


@register_metric
class AnswerCorrectness(ClaimMetric):
    """F1 of the answer's statements found correct by the reference and the reference's found in the answer."""

    name = "answer_correctness"
    columns = ("answer_correctness", "answer_correctness.precision", "answer_correctness.recall")
    requires = ("answer", "reference")
    groups = ("correctness", "ragchecker")
    aliases = ("factual_correctness", "correctness")
    wanted = (CORRECT, COVERED)

    def measure_claims(self, verdicts: ClaimVerdicts, sample: Sample) -> Outcome:
        correct, covered = verdicts.correct or [], verdicts.covered or []
        precision = sum(correct) / len(correct) if correct else 0.0  # an answer that states nothing is not right
        recall = sum(covered) / len(covered)
        return Measurement(
            {"answer_correctness": f1(precision, recall), "answer_correctness.precision": precision,
             "answer_correctness.recall": recall},
            {"statements": _listed(verdicts.answer_claims, correct, "correct"),
             "reference_statements": _listed(verdicts.reference_claims, covered, "covered")})


def f1(precision: float, recall: float) -> float:
    """The harmonic mean, 0 when both are 0 (RAGChecker's and SQuAD's convention)."""
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def _listed(claims: Sequence[str], probs: Sequence[float], key: str) -> list[dict[str, Any]]:
    return [{"text": t, "p": round(p, 6), key: p >= THRESHOLD} for t, p in zip(claims, probs)]

