"""A deterministic judge backend and embedder for unit tests of metric logic (milliseconds, no model).

Never a stand-in for the product: the real GGUF judge and the real embedder run in test_judge.py,
test_judge_metrics.py and the end-to-end tests. Here a word is a token, JSON answers come from a rule
the test gives (default: a minimal value of the schema), P(yes) from a rule on the rendered prompt, and a
continuation's token log-probabilities from a rule (default: a word the prompt holds is certain, any other
has probability UNSEEN).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from localeval.judge import Judge
from localeval.judge.backend import (Call, CallStats, ContinuationCall, ContinuationReply, DistributionCall,
                                     DistributionReply, JsonCall, JsonReply, OnReply, Reply, answer_each)
from localeval.judge.config import JudgeOptions
from localeval.model_kit import ModelKit

TOKEN = re.compile(r"\w+|[^\w\s]")
JsonRule = Callable[[JsonCall], Any]
ProbabilityRule = Callable[[DistributionCall], Mapping[str, float]]
ContinuationRule = Callable[[ContinuationCall], Sequence[float]]
#: The default continuation rule's probability for a word the prompt does not hold.
UNSEEN = 0.01


def seen_in_prompt(call: ContinuationCall) -> list[float]:
    """Each word of the continuation: log 1 when the prompt holds it (any case), else log UNSEEN."""
    held = {w.lower() for w in TOKEN.findall(call.text)}
    return [0.0 if w.lower() in held else math.log(UNSEEN) for w in TOKEN.findall(call.continuation)]


def minimal(schema: Mapping[str, Any]) -> Any:
    """The smallest value that satisfies a (bounded) JSON schema."""
    kind = schema.get("type")
    if kind == "object":
        return {key: minimal(sub) for key, sub in schema.get("properties", {}).items()}
    if kind == "array":
        return [minimal(schema.get("items", {})) for _ in range(schema.get("minItems", 0))]
    return {"string": "x", "integer": 1, "number": 0.0, "boolean": False}.get(kind)  # type: ignore[arg-type]


def between(text: str, start: str, end: str | None = None) -> str:
    """The part of a rendered prompt after the last `start` (up to `end`), for rules that read the input."""
    part = text.rsplit(start, 1)[-1]
    return (part.split(end, 1)[0] if end else part).strip()


class FakeBackend:
    """Implements judge.backend.JudgeBackend; records every call it was sent in `calls`."""

    def __init__(self, json_rule: JsonRule | None = None, probability_rule: ProbabilityRule | None = None,
                 n_ctx: int = 4096, continuation_rule: ContinuationRule | None = None) -> None:
        self.json_rule = json_rule or (lambda call: minimal(call.schema))
        self.probability_rule = probability_rule or (lambda call: {k: 1.0 for k in call.groups})
        self.continuation_rule = continuation_rule or seen_in_prompt
        self.n_ctx = n_ctx
        self.calls: list[Call] = []

    def identity(self) -> dict[str, Any]:
        return {"model_sha256": "fake", "decoding": {"fake": 1}}

    def describe(self) -> dict[str, Any]:
        return {"judge_model": "fake", "judge_sha256": "fake", "engine": "fake"}

    def render(self, messages: Sequence[Mapping[str, str]]) -> str:
        return "".join(f"<{m['role']}>\n{m['content']}\n" for m in messages) + "<assistant>\n"

    def count_tokens(self, text: str) -> int:
        return len(TOKEN.findall(text))

    def prompt_tokens(self, text: str) -> int:
        return self.count_tokens(text) + 1

    def token_texts(self, text: str) -> list[str]:
        """The tokens seen_in_prompt gives a log-probability each, with the spaces before them (joined: the text)."""
        ends = [m.end() for m in TOKEN.finditer(text)]
        return [text[start:end] for start, end in zip([0, *ends], ends)]

    def run(self, calls: Sequence[Call], on_reply: OnReply | None = None) -> list[Reply]:
        return answer_each(calls, self._answer, on_reply)

    def _answer(self, call: Call) -> Reply:
        self.calls.append(call)
        stats = CallStats(1, self.prompt_tokens(call.text), 0, 0, 0.0, 0)
        if isinstance(call, JsonCall):
            value = self.json_rule(call)
            return JsonReply("" if value is None else repr(value), value, value is not None, stats)
        if isinstance(call, ContinuationCall):
            return ContinuationReply(tuple(self.continuation_rule(call)), stats)
        weights = self.probability_rule(call)
        return DistributionReply({k: math.log(max(w, 1e-12)) for k, w in weights.items()}, 0.0, stats)

    def close(self) -> None:
        pass


class FakeEmbedder:
    """Bag-of-words unit vectors over a fixed hashing space: equal texts have cosine 1, disjoint ones 0."""

    name = "fake"
    languages = ("en", "zh")

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), 64), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in TOKEN.findall(text.lower()):
                vectors[i, sum(map(ord, word)) % 64] += 1.0
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms > 0, norms, 1.0)

    def cut(self, texts: Sequence[str]) -> list[bool]:
        return [False] * len(texts)


def fake_kit(backend: FakeBackend, cache: Path, **options: Any) -> ModelKit:
    """A ModelKit whose judge runs `backend` (with a real SQLite cache) and whose embedder is FakeEmbedder."""
    kit = ModelKit.of(JudgeOptions(**{"embedder": FakeEmbedder.name, **options}))
    kit._judge = Judge(backend, cache)
    kit._embedders[FakeEmbedder.name] = FakeEmbedder()
    return kit
