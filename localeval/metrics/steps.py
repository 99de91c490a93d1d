"""The judge steps several metrics are built from: an answer split into statements, and the support of
statements by passages (windowed when the passages are longer than the judge's context).

Shared steps go through the judge's persistent cache, so when two metrics ask the same question the
model answers once.
"""

from __future__ import annotations

import copy
import math
from typing import Sequence

from ..data.records import Context, Sample
from ..judge.facade import Ask
from ..judge.kit import JudgeKit
from ..text import count_cjk_letters
from .judged import Flow

#: Words per atomic fact, for the cap on the statements list (see statements_of).
WORDS_PER_FACT = 5


def joined(passages: Sequence[Context]) -> str:
    """Passages as one text, numbered in rank order, so the judge sees where each begins."""
    return "\n\n".join(f"[{i}] {p.text.strip()}" for i, p in enumerate(passages, start=1))


def statements_of(kit: JudgeKit, lang: str, question: str, text: str) -> Flow[list[str]]:
    """The judge's decomposition of `text` into standalone statements (schema-constrained, so it parses).

    The schema caps the list by the text's length (about one fact per WORDS_PER_FACT words, or per
    2 * WORDS_PER_FACT Chinese characters): measured on the 1.5B judge, an uncapped list pads a one-sentence
    answer with paraphrases and background facts the answer never stated, which skews the score.
    """
    prompt = kit.prompt("statements", lang, question=question, answer=text)
    schema = copy.deepcopy(prompt.schema)
    items = schema["properties"]["statements"]
    items["maxItems"] = min(items.get("maxItems", 8), max_statements(text))
    (answer,) = yield [Ask.json(prompt, schema)]
    seen: list[str] = []
    for statement in answer.value["statements"]:
        statement = statement.strip()
        if statement and statement not in seen:
            seen.append(statement)
    return seen


def max_statements(text: str) -> int:
    """An upper bound on the atomic facts in `text`."""
    cjk = count_cjk_letters(text)
    words = len(text.split()) + cjk / 2
    return max(1, math.ceil(words / WORDS_PER_FACT))


def support(kit: JudgeKit, lang: str, statements: Sequence[str],
            passages: Sequence[Context]) -> Flow[tuple[list[float], int]]:
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
    answers = yield [Ask.yes_no(kit.prompt("verify_statement", lang, context=window, statement=statement))
                     for window in windows for statement in statements]
    best = [0.0] * len(statements)
    for j, answer in enumerate(answers):
        best[j % len(statements)] = max(best[j % len(statements)], answer.value)
    return best, len(windows)


def passages_for(sample: Sample, against: str) -> tuple[Context, ...]:
    """The passages a statement is checked against: the retrieved contexts or the reference documents."""
    return (sample.reference_docs if against == "reference_docs" else sample.contexts) or ()
