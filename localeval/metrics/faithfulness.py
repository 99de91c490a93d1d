"""faithfulness: is every claim of the answer backed by the passages it was generated from?

Ragas' definition, made robust for small local judges: the answer is split into statements, and each
statement gets P(supported) from the next-token probabilities of the verdict words (no text to parse).
With n statements, of which s have P ≥ the verdict threshold (0.5 unless --verdict-threshold):

    faithfulness       = mean of the n probabilities: the expected share of supported statements when each
                         verdict is read as the probability it is
    faithfulness.share = s / n, Ragas' count (on one- or two-sentence answers it can only be 0, ½ or 1, so
                         answers tie often and ties hide differences: bench/accuracy.py measures the mean
                         ranking the better answer first more often on every pair set)
    faithfulness.min   = the smallest probability (an answer is as faithful as its weakest claim)

How the statements are made, what each is checked against and how the verdict is asked are options,
each measured on the dev sets by bench/accuracy.py (docs/pages/benchmarks/accuracy.md):
statements = "sentences" (the answer's own sentences; the default: no generation, so nothing in the
answer can steer how it is cut up, and on HaluEval dev it ranks the right answer first more often at less
than half the time), "judge" (the judge's decomposition under a JSON schema, Ragas' way) or "both";
question = "none" (each sentence is checked as a claim of its own, the default) or "beside" (the question
shown beside each sentence: a bare "1889." becomes checkable, but a small judge reads a claim that
answers the question as more likely supported, and passed false sentences it rejects without it);
evidence = "related" (for each statement, the passage sentences that share a content word with what it
adds to the question; the default), "context" (all passages, windowed) or "selected" (the few passage
sentences that share most words with each statement); verdict = "two-way" (Yes/No) or "three-way"
(Yes/No/Unknown).

Text aimed at the judge (an order to answer Yes, a forged chat turn, ...: judge/injection.py) is cut
from the answer before it is split, so it never becomes a statement, and from the passages when the
prompt is rendered; both cuts are listed in the details under "aimed_at_judge". Where aimed words ran on
after a claim with no full stop, the injection's first words may be left in the claim's sentence: it is
checked ending at each of its last words too (steps.shorter_cuts), and the lowest P counts. What the
screen misses is met by two rules that do not read wording: a statement the passages name no more than
half of, one that leans on the sentence before it, and a question are held below the others
(steps.hold_unanchored), and the judge reads, for each statement, only the passage sentences naming what
it adds to the question (steps.related_passages), so a note to the checker inside a passage, even one that
repeats the question's words, is not shown to it (but for a statement that adds nothing to the question,
which is related through the question's words).

An answer with no checkable statement is skipped with that reason (neither NaN nor a free 1.0); with no
passages at all every statement is unsupported, and (evidence="related") so is a statement the passages
mention whose additions to the question no passage sentence names (the judge is not asked).
`against="reference_docs"` checks the answer against the ground-truth documents instead of the retrieved
contexts (seed 004's variant).
"""

from __future__ import annotations

from typing import Any

from ..data.records import Context, Sample
from ..judge.injection import screen
from ..model_kit import ModelKit
from .base import Measurement, MetricContext, MetricOption, Outcome, check_choices
from .judged import THRESHOLD, Flow, VerdictMetric, gather, mean_and_share, threshold_of
from .registry import register_metric
from .steps import (VERDICTS, added_words, ends_run_on, hold_unanchored, lowest_of_cuts, nothing_left, passage_words,
                    passages_for, related_passages, run_on_cuts, sentence_statements, statements_of, support,
                    unmentioned)

AGAINST = ("contexts", "reference_docs")
STATEMENTS = ("judge", "sentences", "both")
EVIDENCE = ("related", "context", "selected")
QUESTION = ("none", "beside")


@register_metric
class Faithfulness(VerdictMetric):
    """Expected share of the answer's statements supported by the contexts (or reference documents)."""

    name = "faithfulness"
    columns = ("faithfulness", "faithfulness.share", "faithfulness.min")
    groups = ("ragas", "judge")
    options = VerdictMetric.options + (
        MetricOption("faithfulness_against", "contexts", "Check the answer's statements against the retrieved "
                     "contexts or the reference documents.", choices=AGAINST),
        MetricOption("faithfulness_statements", "sentences", "faithfulness: statements are the answer's own "
                     "sentences, the judge's decomposition (Ragas' way), or both.", choices=STATEMENTS),
        MetricOption("faithfulness_evidence", "related", "faithfulness: check each statement against the passage "
                     "sentences that share a word with what it adds to the question, against all passages, or "
                     "against the passage sentences most similar to it.", choices=EVIDENCE),
        MetricOption("faithfulness_question", "none", "faithfulness: check each of the answer's own sentences "
                     "as a claim of its own, or with the question beside it (a bare name is a claim only with "
                     "its question, but the small judge is more lenient with it).",
                     choices=QUESTION),
        MetricOption("faithfulness_verdict", "two-way", "faithfulness: ask Yes/No, or Yes/No/Unknown.",
                     choices=tuple(VERDICTS)),
    )

    @classmethod
    def create(cls, context: MetricContext, k: int | None) -> Faithfulness:
        o = context.options
        return cls(context.kit, against=o["faithfulness_against"], statements=o["faithfulness_statements"],
                   evidence=o["faithfulness_evidence"], verdict=o["faithfulness_verdict"],
                   question=o["faithfulness_question"], threshold=threshold_of(context, cls.name))

    def __init__(self, kit: ModelKit, against: str = "contexts", statements: str = "sentences",
                 evidence: str = "related", verdict: str = "two-way", question: str = "none",
                 threshold: float = THRESHOLD) -> None:
        check_choices(self.name, (against, AGAINST), (statements, STATEMENTS), (evidence, EVIDENCE),
                      (verdict, tuple(VERDICTS)), (question, QUESTION))
        super().__init__(kit, threshold)
        self.against, self.statements, self.evidence, self.verdict = against, statements, evidence, verdict
        self.question = question
        self.requires = ("answer", against)

    def settings(self) -> dict[str, Any]:
        return {"against": self.against, "statements": self.statements, "evidence": self.evidence,
                "verdict": self.verdict, "question": self.question, **super().settings()}

    def _support(self, lang: str, asked: list[tuple[str, str | None]], passages: tuple[Context, ...],
                 question: str, named: set[str]) -> Flow[tuple[list[float], int, int]]:
        """P(supported) of each (statement, question shown beside it), the most windows any evidence took,
        and (evidence="related") how many passage sentences no statement was shown.

        With related evidence each statement is checked against the passage sentences naming what it adds to
        the question, so a sentence added to the answer cannot change what another statement is checked
        against. When no passage sentence names what a statement adds, the passages speak of its subject
        without stating its claim: unsupported, the judge not asked. A statement the passages do not mention
        at all (a preamble, an aside, an invented fact) is checked against the whole passages instead: the
        judge's P is what it gets, and the hold keeps it from raising the mean. Statements with the same
        evidence are asked together, sharing its KV cache. `named`: the passages' content words."""
        whole = tuple(passages)
        shown_to = [whole] * len(asked)
        aside = 0
        if self.evidence == "related":
            added = [added_words(text, question) for text, _ in asked]

            def evidence_for(text: str, words: set[str]) -> tuple[Context, ...]:
                related = tuple(related_passages(passages, words)[0])
                return related or (whole if unmentioned(text, named) else ())

            shown_to = [evidence_for(text, words) for (text, _), words in zip(asked, added)]
            aside = 0 if whole in shown_to else related_passages(passages, set().union(*added))[1]
        groups: dict[tuple[tuple[Context, ...], str | None], list[int]] = {}
        for i, ((_, beside), shown) in enumerate(zip(asked, shown_to)):
            if shown:
                groups.setdefault((shown, beside), []).append(i)
        evidence = "context" if self.evidence == "related" else self.evidence
        checked = [(indices, support(self.kit, lang, [asked[i][0] for i in indices], shown, verdict=self.verdict,
                                     evidence=evidence, question=beside))
                   for (shown, beside), indices in groups.items()]
        results = yield from gather([flow for _, flow in checked])
        probs = [0.0] * len(asked)
        for (indices, _), (found, _) in zip(checked, results):
            for i, p in zip(indices, found):
                probs[i] = p
        return probs, max((used for _, used in results), default=0), aside

    def flow(self, sample: Sample, lang: str) -> Flow[Outcome]:
        screened = screen(sample.answer or "", claims=True)
        answer = screened.text
        decomposed = (yield from statements_of(self.kit, lang, sample.question, answer)) if self.statements != "sentences" else []
        own = sentence_statements(answer) if self.statements != "judge" else []
        own = [s for s in own if s not in decomposed]
        if not decomposed and not own:
            return nothing_left(screened, "no checkable statement in the answer")
        passages = passages_for(sample, self.against)
        texts = decomposed + own
        beside = sample.question if self.question == "beside" else None
        asked = [(t, None) for t in decomposed] + [(t, beside) for t in own]
        # a sentence that aimed words ran on after: the claim in it ends at one of its last words, unknown
        # which, so each shorter cut is checked too and the lowest P counts
        run_on = [ends_run_on(t, screened) for t in texts]
        cuts = run_on_cuts(texts, screened)
        asked += [(cut, beside) for of_one in cuts for cut in of_one]
        named = passage_words(passages)
        found, windows, aside = yield from self._support(lang, asked, passages, sample.question, named)
        probs, cut_at = lowest_of_cuts(found[:len(texts)], cuts, found[len(texts):])
        probs, held = hold_unanchored(texts, probs, named)
        supported = [p >= self.threshold for p in probs]
        details: dict[str, Any] = {
            "statements": [{"text": t, "p": round(p, 6), "supported": ok, **({"held": True} if i in held else {}),
                            **({"run_on": True} if run_on[i] else {}), **({"lowest_cut": cut_at[i]} if i in cut_at else {})}
                           for i, (t, p, ok) in enumerate(zip(texts, probs, supported))],
            "against": self.against, "windows": windows, **({"set_aside": aside} if aside else {})}
        cut = {"answer": list(screened.removed),
               self.against: [r for passage in passages for r in screen(passage.text).removed]}
        if any(cut.values()):
            details["aimed_at_judge"] = {where: removed for where, removed in cut.items() if removed}
        mean, share = mean_and_share(probs, self.threshold)
        return Measurement({"faithfulness": mean, "faithfulness.share": share, "faithfulness.min": min(probs)}, details)
