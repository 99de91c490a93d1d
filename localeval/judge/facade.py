"""The LLM judge as metrics see it: four kinds of question, answered through a cache, on any backend.

- `json`: greedy generation under a grammar built from a JSON schema, so the output always parses; the
  value is validated against the same schema before a metric sees it;
- `yes_probability` / `choice_distribution`: the next-token distribution over the answer words, so
  scores are probabilities rather than parsed text (no sampling, nothing to parse);
- `continuation`: the log-probability of each token of a given text after the prompt (how expected the
  judge finds an answer, given its sources), again read from one forward pass.

`ask` takes many questions at once and hands the ones the cache cannot answer to the backend together,
so a backend that runs many sequences at a time can fill its batch; a failed question comes back as its
error and never sinks the others. Every call is keyed by the model's identity, the prompt file (name,
version, hash), the rendered prompt and the call's settings, so a cached answer is only ever reused for
exactly the question that produced it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import JudgeError
from ..strict_json import check_json_value
from .backend import (Call, CallStats, ContinuationCall, ContinuationReply, DistributionCall, DistributionReply,
                      JsonCall, JsonReply, JudgeBackend, Reply, logsumexp)
from .cache import JudgeCache, make_key
from .grammar import GRAMMAR_VERSION
from .prompts import RenderedPrompt, defuse, validate
from .windows import split_to_fit

RATINGS = ("1", "2", "3", "4", "5")


#: Tokens context_budget keeps free: text counted on its own can take a few more tokens where it meets the
#: prompt's text around its slot.
SLOT_MARGIN = 8


@dataclass(frozen=True)
class Ask:
    """One question for the judge. Build it with `Ask.json`, `Ask.yes_no`, `Ask.choice` or `Ask.continuation_of`."""

    prompt: RenderedPrompt
    kind: str
    schema: Mapping[str, Any] | None = None
    max_tokens: int | None = None
    groups: Mapping[str, tuple[str, ...]] | None = None
    continuation: str | None = None

    @classmethod
    def json(cls, prompt: RenderedPrompt, schema: Mapping[str, Any] | None = None,
             max_tokens: int | None = None) -> Ask:
        """Bound arrays and strings in the schema (maxItems, maxLength) so the JSON always closes in time."""
        schema = schema if schema is not None else prompt.schema
        if schema is None:
            raise JudgeError(f"prompt '{prompt.name}' has no schema; pass one or add 'schema:' to its front matter")
        return cls(prompt, "json", schema, max_tokens or prompt.max_tokens)

    @classmethod
    def yes_no(cls, prompt: RenderedPrompt) -> Ask:
        """P(yes) / (P(yes) + P(no)) for the first answer token, over the prompt's answer words."""
        for key in ("yes", "no"):
            if not prompt.answers.get(key):
                raise JudgeError(f"prompt '{prompt.name}' has no '{key}' answer words; it must be a yes_no prompt")
        return cls(prompt, "yes_no", groups={"yes": prompt.answers["yes"], "no": prompt.answers["no"]})

    @classmethod
    def choice(cls, prompt: RenderedPrompt, options: Sequence[str] | None = None) -> Ask:
        """The probability of each option as the first answer token, renormalised over the options."""
        opts = list(options or prompt.answers or RATINGS)
        return cls(prompt, "choice", groups={o: (o,) for o in opts})

    @classmethod
    def continuation_of(cls, prompt: RenderedPrompt, text: str) -> Ask:
        """log p of each token of `text` written as the start of the judge's reply to `prompt`."""
        if not text:
            raise JudgeError(f"prompt '{prompt.name}': an empty continuation has no tokens to read")
        return cls(prompt, "continuation", continuation=text)

    def settings(self) -> dict[str, Any]:
        """The call's part of the cache key (unchanged since the first cache format)."""
        if self.kind == "json":
            return {"kind": "json", "schema": self.schema, "max_tokens": self.max_tokens, "grammar": GRAMMAR_VERSION}
        if self.kind == "continuation":
            return {"kind": "continuation", "continuation": self.continuation}
        return {"kind": "distribution", "groups": {k: list(v) for k, v in (self.groups or {}).items()}}


@dataclass(frozen=True)
class Answer:
    """The judge's answer to one Ask: `value` is the JSON value, P(yes), {option: probability}, or the
    continuation's token log-probabilities (a list);
    `error` is set instead when the judge could give no usable answer. `mass` is the probability the
    answer words held of the whole next-token distribution (distributions only)."""

    value: Any
    stats: CallStats
    error: JudgeError | None = None
    mass: float | None = None

    def unwrap(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


class Judge:
    """Cache, accounting, windowing and validation over one backend; not thread-safe."""

    def __init__(self, backend: JudgeBackend, cache: JudgeCache | str | Path | None = None) -> None:
        self.backend = backend
        self.cache = cache if isinstance(cache, JudgeCache) else JudgeCache(cache)
        self.totals = CallStats()
        self.last_answer_mass: float | None = None  # P(any answer word) in the last distribution call
        self._identity = dict(backend.identity())

    @property
    def n_ctx(self) -> int:
        return self.backend.n_ctx

    @property
    def model_sha256(self) -> str:
        return str(self._identity["model_sha256"])

    def describe(self) -> dict[str, Any]:
        return dict(self.backend.describe())

    # ---- text, tokens, windows -------------------------------------------------------------------

    def render(self, prompt: RenderedPrompt) -> str:
        return self.backend.render(prompt.messages)

    def count_tokens(self, text: str) -> int:
        return self.backend.count_tokens(text)

    def token_texts(self, text: str) -> list[str] | None:
        """The text of each token of a continuation (None where the backend cannot tell)."""
        return self.backend.token_texts(text)

    def context_budget(self, prompt: RenderedPrompt, max_tokens: int | None = None) -> int:
        """Tokens that text inserted into `prompt` (render it with the slot empty) may take before n_ctx is
        hit, less SLOT_MARGIN."""
        used = self.backend.prompt_tokens(self.render(prompt))
        return self.n_ctx - (prompt.max_tokens if max_tokens is None else max_tokens) - used - SLOT_MARGIN

    def split_to_fit(self, text: str, max_tokens: int) -> list[str]:
        """Pieces of at most max_tokens tokens, cut at sentence ends; callers window long contexts with this."""
        return split_to_fit(text, max_tokens, self._rendered_tokens)

    def windows(self, text: str, budget: int) -> list[str]:
        """`text` as written when it fits `budget` tokens (so a sample that fits is asked exactly as it
        reads), else split_to_fit's pieces."""
        return [text] if self._rendered_tokens(text) <= budget else self.split_to_fit(text, budget)

    def _rendered_tokens(self, text: str) -> int:
        """Tokens of `text` as a prompt holds it: each "<s>" or "<|...|>" is defused with one more character
        (prompts.py), which a passage of HTML strike-throughs repeats often enough to overflow a window."""
        return self.count_tokens(defuse(text))

    # ---- one question at a time (raise JudgeError) -----------------------------------------------

    def json(self, prompt: RenderedPrompt, schema: Mapping[str, Any] | None = None,
             max_tokens: int | None = None) -> tuple[Any, CallStats]:
        """The parsed value, validated against `schema`; JudgeError (with `.raw`) when max_tokens runs
        out before the JSON closes."""
        return self._one(Ask.json(prompt, schema, max_tokens))

    def yes_probability(self, prompt: RenderedPrompt) -> tuple[float, CallStats]:
        return self._one(Ask.yes_no(prompt))

    def choice_distribution(self, prompt: RenderedPrompt,
                            options: Sequence[str] | None = None) -> tuple[dict[str, float], CallStats]:
        return self._one(Ask.choice(prompt, options))

    def _one(self, ask: Ask) -> tuple[Any, CallStats]:
        answer = self.ask([ask])[0]
        return answer.unwrap(), answer.stats

    # ---- many questions at once ------------------------------------------------------------------

    def ask(self, asks: Sequence[Ask]) -> list[Answer]:
        """Answers in order. Cached questions cost a lookup; the rest go to the backend in one list, each
        distinct question once (a repeat within the list is answered as a cache hit), and each answer is
        cached the moment the backend has it."""
        answers: list[Answer | None] = [None] * len(asks)
        texts = [self.render(a.prompt) for a in asks]
        keys = [self._key(a, t) for a, t in zip(asks, texts)]
        pending: dict[str, list[int]] = {}
        for i, key in enumerate(keys):
            if key in pending:
                pending[key].append(i)
                continue
            started = time.perf_counter()
            found = self.cache.get(key)
            if found is None:
                pending[key] = [i]
            else:
                answers[i] = self._from_cache(asks[i], found[0], time.perf_counter() - started)
        firsts = [indices[0] for indices in pending.values()]

        def finish(j: int, reply: Reply) -> None:  # cached now: a kill later in the round does not lose it
            i = firsts[j]
            if answers[i] is None:
                answers[i] = self._finish(asks[i], keys[i], reply)

        replies = self.backend.run([self._call(asks[i], texts[i]) for i in firsts], finish) if firsts else []
        for j, reply in enumerate(replies):
            finish(j, reply)  # a backend that did not hand this reply over as it came
            first = answers[firsts[j]]
            for repeat in pending[keys[firsts[j]]][1:]:
                answers[repeat] = self._repeat(first)  # type: ignore[arg-type]
        return answers  # type: ignore[return-value]

    # ---- internals -------------------------------------------------------------------------------

    def _call(self, ask: Ask, text: str) -> Call:
        if ask.kind == "json":
            return JsonCall(text, ask.schema or {}, ask.max_tokens or ask.prompt.max_tokens, ask.prompt.name)
        if ask.kind == "continuation":
            return ContinuationCall(text, ask.continuation or "", ask.prompt.name)
        return DistributionCall(text, ask.groups or {}, ask.prompt.name)

    def _finish(self, ask: Ask, key: str, reply: Reply) -> Answer:
        if isinstance(reply, JudgeError):
            return Answer(None, CallStats(), reply)
        self.totals = self.totals + reply.stats
        if isinstance(reply, JsonReply):
            if not reply.done:
                cut = reply.stats.generated_tokens >= (ask.max_tokens or 0)
                why = f"was cut off at max_tokens={ask.max_tokens}" if cut else "stopped early"
                return Answer(None, reply.stats, JudgeError(
                    f"judge output for prompt '{ask.prompt.name}' {why} before the JSON closed; raise max_tokens "
                    f"or lower maxItems/maxLength in the schema", raw=reply.raw))
            try:
                validate(reply.value, ask.schema or {}, reply.raw)
                # the grammar allows "\ud83d" and 1e400: JSON that parses, but that no UTF-8 file or JSON
                # writer (the cache, samples.jsonl) can hold
                check_json_value(reply.value, lambda field, message: JudgeError(
                    f"judge output for prompt '{ask.prompt.name}'{f' at {field}' if field else ''} {message}",
                    raw=reply.raw))
            except JudgeError as exc:
                return Answer(None, reply.stats, exc)
            self._store(ask, key, reply.value, reply.stats)
            return Answer(reply.value, reply.stats)
        if isinstance(reply, ContinuationReply):
            value = list(reply.token_logprobs)
            self._store(ask, key, value, reply.stats)
            return Answer(value, reply.stats)
        dist, mass = _normalise(reply)
        self._store(ask, key, [dist, mass], reply.stats)
        return self._distribution_answer(ask, dist, mass, reply.stats)

    def _from_cache(self, ask: Ask, value: Any, seconds: float) -> Answer:
        stats = CallStats(seconds=seconds, cache_hits=1)
        self.totals = self.totals + stats
        if ask.kind in ("json", "continuation"):
            return Answer(value, stats)
        dist, mass = value
        return self._distribution_answer(ask, dist, mass, stats)

    def _repeat(self, first: Answer) -> Answer:
        stats = CallStats(cache_hits=1)
        self.totals = self.totals + stats
        return Answer(first.value, stats, first.error, first.mass)

    def _distribution_answer(self, ask: Ask, dist: dict[str, float], mass: float, stats: CallStats) -> Answer:
        self.last_answer_mass = mass
        return Answer(dist["yes"] if ask.kind == "yes_no" else dist, stats, mass=mass)

    def _key(self, ask: Ask, text: str) -> str:
        prompt = ask.prompt
        return make_key(model_sha256=self._identity["model_sha256"], prompt_name=prompt.name,
                        prompt_version=prompt.version, prompt_sha256=prompt.sha256, text=text,
                        settings=ask.settings(), decoding=self._identity["decoding"])

    def _store(self, ask: Ask, key: str, value: Any, stats: CallStats) -> None:
        self.cache.put(key, kind=ask.settings()["kind"], model_sha256=self.model_sha256,
                       prompt=f"{ask.prompt.name}@{ask.prompt.version}", value=value, stats=stats.as_dict())

    def close(self) -> None:
        self.backend.close()
        self.cache.close()


def _normalise(reply: DistributionReply) -> tuple[dict[str, float], float]:
    """Renormalise over the answers (a verdict is P(yes) among the answer words) and keep their mass."""
    import numpy as np

    log_answers = logsumexp(list(reply.log_groups.values()))
    dist = {k: float(np.exp(v - log_answers)) for k, v in reply.log_groups.items()}
    return dist, float(np.exp(log_answers - reply.log_total))
