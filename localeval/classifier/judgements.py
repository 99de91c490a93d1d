"""The three judgements a classifier can be trained for (ARES's), and the judge prompts they answer.

A classifier does not read prompts: it scores a pair of texts. Each judgement names the prompt whose yes/no
verdicts it gives and the two prompt variables that form the pair, so the metrics keep their flows and
only the answers to those questions change hands (judge/classified.py). Every metric that asks the prompt
is scored by it: `verify_statement` is faithfulness's statement verdict, and also context_recall's and
the claim metrics' per-chunk verdict (a statement supported by a text is one judgement, whoever asks).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Judgement:
    #: ARES's name, also the label field of training rows (generate's negatives.jsonl writes them).
    name: str
    #: The judge prompt whose verdicts the classifier gives, and how the prompt asks it.
    prompt: str
    kind: str
    #: The prompt variables that make the pair (first, second), in the order the cross-encoder reads them
    #: (a faithfulness statement with its marks: reading.py).
    first: str
    second: str
    #: The fields of a labelled training row that make the same pair (negatives.jsonl's names).
    row_fields: tuple[str, str]
    #: The metrics whose verdicts come from the prompt (for the docs and `localeval train`'s report).
    metrics: tuple[str, ...]


JUDGEMENTS: dict[str, Judgement] = {j.name: j for j in (
    Judgement("context_relevance", "passage_relevant", "yes_no", "question", "passage", ("question", "context"),
              ("passage_relevance",)),
    Judgement("answer_faithfulness", "verify_statement", "yes_no", "context", "statement", ("context", "answer"),
              ("faithfulness", "context_recall", "claim_recall", "context_utilization", "noise_sensitivity",
               "hallucination", "self_knowledge")),
    Judgement("answer_relevance", "relevance_rating", "choice", "question", "answer", ("question", "answer"),
              ("answer_relevance_rating",)),
)}

BY_PROMPT: dict[str, Judgement] = {j.prompt: j for j in JUDGEMENTS.values()}
