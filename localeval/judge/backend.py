"""The seam between the judge facade and whatever runs the model.

A backend knows one model and one way of running it (llama.cpp in-process, llama.cpp batched, an
inference server). It does five things and nothing else: render chat turns with the model's template,
count tokens, generate JSON under a schema, give the next-token distribution over groups of answer
words, and read the log-probability of each token of a given text written after a prompt. Everything
every backend would otherwise repeat — the cache, accounting, windowing, schema validation, the
arithmetic that turns log-probabilities into a verdict — lives in the facade (`facade.Judge`), so a
metric is written once and runs on every backend.

Calls come in lists so that a backend that can run many sequences at once (a batched engine, a server
with slots) sees them together; a sequential backend just loops. A call that fails returns a
`JudgeError` in its place, so one bad sample never sinks the others in its batch. Each reply is also
handed over as soon as it is final (`on_reply`), so it is cached before the rest of its list is done.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Callable, Mapping, Protocol, Sequence, Union

from ..errors import JudgeError


@dataclass(frozen=True)
class CallStats:
    """Model work for one call or a sum of calls; `cached_tokens` are prompt tokens not re-evaluated."""

    calls: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    generated_tokens: int = 0
    seconds: float = 0.0
    cache_hits: int = 0
    classified: int = 0  # verdicts a trained classifier gave instead of the judge (judge/classified.py)

    def __add__(self, other: CallStats) -> CallStats:
        return CallStats(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def __sub__(self, other: CallStats) -> CallStats:
        """The work done between two readings of a running total."""
        return CallStats(*(getattr(self, f.name) - getattr(other, f.name) for f in fields(self)))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class JsonCall:
    """Greedy generation of one JSON value under `schema`, from a rendered prompt."""

    text: str
    schema: Mapping[str, Any]
    max_tokens: int
    name: str = ""  # the prompt's name, for messages


@dataclass(frozen=True)
class DistributionCall:
    """The next token after a rendered prompt, summed per group of answer words.

    `groups` maps an answer ("yes", "3") to the words that spell it; the backend expands spellings
    (case, a leading space) the way its tokenizer needs."""

    text: str
    groups: Mapping[str, tuple[str, ...]]
    name: str = ""


@dataclass(frozen=True)
class ContinuationCall:
    """Each token of `continuation`, written after a rendered prompt, read as the model's log-probability of
    it there (teacher forcing: nothing is generated). The continuation is tokenized as plain text."""

    text: str
    continuation: str
    name: str = ""


@dataclass(frozen=True)
class JsonReply:
    """What the model wrote; `value` is set only when the JSON closed before max_tokens."""

    raw: str
    value: Any
    done: bool
    stats: CallStats


@dataclass(frozen=True)
class DistributionReply:
    """Log-probability mass of each group as the next token, and of the whole vocabulary (`log_total`: 0
    when the backend already gives normalised log-probabilities), so the facade can renormalise over the
    answers and report how much of the distribution they hold."""

    log_groups: Mapping[str, float]
    log_total: float
    stats: CallStats


@dataclass(frozen=True)
class ContinuationReply:
    """log p(token | prompt, the tokens before it) for each token of the continuation, in order."""

    token_logprobs: tuple[float, ...]
    stats: CallStats


Call = Union[JsonCall, DistributionCall, ContinuationCall]
Reply = Union[JsonReply, DistributionReply, ContinuationReply, JudgeError]
#: Told each reply as soon as it is final: (index of the call, reply).
OnReply = Callable[[int, Reply], None]


def answer_each(calls: Sequence[Call], answer: Callable[[Call], Reply], on_reply: OnReply | None = None) -> list[Reply]:
    """`run` for a backend that answers one call after another: a call that fails gets its JudgeError in its
    place, and each reply is handed to `on_reply` as soon as it is final."""
    replies: list[Reply] = []
    for i, call in enumerate(calls):
        try:
            reply = answer(call)
        except JudgeError as exc:
            reply = exc
        replies.append(reply)
        if on_reply is not None:
            on_reply(i, reply)
    return replies


def spellings(words: Sequence[str]) -> list[str]:
    """The ways a model may write an answer word as its first token: as given, lower, capitalised, upper
    case, each with and without a leading space (a tokenizer may glue the space to the word)."""
    variants = {v for w in words for c in (w, w.lower(), w.capitalize(), w.upper()) for v in (c, " " + c)}
    return sorted(variants)


def own_tokens(found: Mapping[str, set[Any]]) -> dict[str, list[Any]]:
    """Each answer's first tokens (ids or texts) less those another answer also has: a token that spells two
    answers counts for neither."""
    own: dict[str, list[Any]] = {}
    for name, tokens in found.items():
        others = set().union(*(s for n, s in found.items() if n != name))
        own[name] = sorted(tokens - others)
        if not own[name]:
            raise JudgeError(f"answer '{name}' has no token of its own in this model's vocabulary; use other answer words")
    return own


def logsumexp(values: Any, shift: float | None = None) -> float:
    """log(sum(exp(values))), computed as shift + log(sum(exp(values - shift))) so nothing overflows;
    `shift` defaults to the largest value (a caller summing parts of one vector passes that vector's
    maximum, so every part is shifted alike). No values: -inf, no probability mass."""
    import numpy as np

    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return float("-inf")
    top = values.max() if shift is None else shift
    if top == -np.inf:  # every value a probability of 0 (a server's -Infinity): -inf - -inf would be NaN
        return float("-inf")
    return float(top + np.log(np.exp(values - top).sum()))


def finite_logits(logits: Any, name: str) -> Any:
    """One row of raw logits as float64; JudgeError naming prompt `name` when any is not finite."""
    import numpy as np

    values = np.asarray(logits, dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise JudgeError(f"judge returned non-finite logits for prompt '{name}'; the model file may be broken")
    return values


def log_softmax_at(logits: Any, token: int, name: str) -> float:
    """log p(token) from one row of raw logits (of prompt `name`, for the error message)."""
    values = finite_logits(logits, name)
    return float(values[token] - logsumexp(values))


def prompt_too_long(name: str, n_prompt: int, n_ctx: int, max_tokens: int) -> JudgeError:
    return JudgeError(
        f"prompt '{name}' has {n_prompt} tokens but n_ctx={n_ctx} leaves room for {n_ctx - max_tokens} "
        f"(max_tokens={max_tokens}); window the context with split_to_fit or raise n_ctx")


class JudgeBackend(Protocol):
    """One model behind one way of running it."""

    #: Context window in tokens (prompt + generated).
    n_ctx: int

    def identity(self) -> Mapping[str, Any]:
        """What names the model's answers in the cache key: {"model_sha256": ..., "decoding": {...}}.

        Two backends that would give the same answers for the same prompt may share an identity (and so
        cache entries); anything that can change an answer must be part of it."""
        ...

    def describe(self) -> Mapping[str, Any]:
        """What the summary records about the judge (model file or server, engine)."""
        ...

    def render(self, messages: Sequence[Mapping[str, str]]) -> str:
        """The chat turns as the single string the model sees, ending where the assistant's turn starts."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens of plain text as it sits inside a prompt (no BOS, special tokens not parsed)."""
        ...

    def prompt_tokens(self, text: str) -> int:
        """Tokens of a rendered prompt as it is sent (BOS and special tokens included)."""
        ...

    def token_texts(self, text: str) -> list[str] | None:
        """The text each token of `text` adds when read as a continuation (joined, they are `text`), one per
        continuation log-probability, so a metric can say which words were unexpected; a token that holds
        only part of a character adds ''. None where the backend cannot tell."""
        ...

    def run(self, calls: Sequence[Call], on_reply: OnReply | None = None) -> list[Reply]:
        """One reply per call, in order; a failed call's reply is the JudgeError that says why.

        `on_reply(i, reply)` is told each reply the moment it is final, in the caller's thread, so the
        facade caches it at once and a run killed mid-round loses only the calls still in flight."""
        ...

    def close(self) -> None:
        ...
