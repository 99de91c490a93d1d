"""What the judge metrics share: flows driven in lockstep over a window of samples, the language choice,
per-sample accounting and judge-error handling. The models come from the run's ModelKit (model_kit.py);
the steps several metrics are built from (statements, support) are in steps.py.

A judge metric writes its per-sample logic as a *flow*: a generator that yields the list of questions
(`Ask`s) it needs next and receives their answers, then returns the sample's outcome:

    def flow(self, sample, lang):
        statements = yield from statements_of(self.kit, lang, sample.question, sample.answer)
        answers = yield [Ask.yes_no(...) for statement in statements]
        return Measurement(...)

`drive` runs the flows of every sample in the window together: each round gathers the questions of all
flows that are waiting and hands them to the judge in one `ask`, so a backend that runs many sequences
at once (the batched engine, an inference server) gets a full batch, stage by stage. With one sample
per window the calls are exactly those of a sample-by-sample loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Mapping, Sequence, TypeVar

from ..data.records import Sample
from ..errors import JudgeError, OptionError
from ..judge.backend import CallStats
from ..judge.facade import Answer, Ask, Judge
from ..model_kit import ModelKit
from .base import Measurement, Metric, MetricContext, MetricOption, Outcome, Skipped

#: A statement counts as supported, a chunk as useful, when the judge's probability is at least this,
#: unless --verdict-threshold says otherwise.
THRESHOLD = 0.5


@dataclass(frozen=True)
class VerdictThresholds:
    """--verdict-threshold read: one threshold for every metric that counts verdicts, and others for some.

    0.5 is where a yes becomes likelier than a no, but a small judge is lenient with text on the question's
    topic, by how much depends on the language and the rubric (docs/pages/benchmarks/accuracy.md: Chinese
    context_precision passes 27 of 30 near-topic articles at 0.5, and is right in 0.867 at a threshold
    fitted on labelled chunks). A threshold changes no judge call, so a run re-scored with another is all
    cache hits."""

    default: float = THRESHOLD
    by_metric: Mapping[str, float] = field(default_factory=dict)

    def of(self, metric: str) -> float:
        return self.by_metric.get(metric, self.default)


def parse_verdict_thresholds(value: Any) -> VerdictThresholds:
    """'0.7', 'context_precision=0.9' or '0.6,context_precision=0.9' (from Python also a number, a
    VerdictThresholds, or a dict of metric → threshold with '*' for the rest)."""
    if isinstance(value, VerdictThresholds):
        return value
    flag = VERDICT_THRESHOLD_FLAG
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return VerdictThresholds(_probability(str(value), value, flag))
    if isinstance(value, Mapping):
        items = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, str):
        items = []
        for part in value.split(","):
            name, eq, number = part.strip().rpartition("=")
            if not number.strip():
                raise OptionError(f"{flag} '{value}': expected P or METRIC=P separated by commas, "
                                  "e.g. 0.6,context_precision=0.85")
            items.append((name.strip() if eq else "*", number.strip()))
    else:
        raise OptionError(f"{flag} must be a number between 0 and 1 or METRIC=P pairs, got {value!r}")
    known = verdict_metrics()
    default, by_metric = THRESHOLD, {}
    seen: set[str] = set()
    for name, number in items:
        if name in seen:
            raise OptionError(f"{flag} '{value}': {'a bare threshold' if name == '*' else name} is given twice")
        seen.add(name)
        if name != "*" and name not in known:
            raise OptionError(f"{flag} '{value}': '{name}' counts no verdicts at a threshold; "
                              f"the metrics that do: {', '.join(known)}")
        threshold = _probability(f"{name}={number}" if name != "*" else str(number), number, flag)
        if name == "*":
            default = threshold
        else:
            by_metric[name] = threshold
    return VerdictThresholds(default, by_metric)


def _probability(shown: str, number: Any, flag: str) -> float:
    try:
        threshold = float(number)
    except (TypeError, ValueError):
        raise OptionError(f"{flag} '{shown}': {number!r} is not a number") from None
    if isinstance(number, bool) or not 0 < threshold < 1:  # NaN fails too
        raise OptionError(f"{flag} '{shown}': a threshold is a probability strictly between 0 and 1")
    return threshold


def verdict_metrics() -> list[str]:
    """The registered metrics that count verdicts at a threshold (they list VERDICT_THRESHOLD)."""
    from .registry import specs

    return [spec.name for spec in specs() if VERDICT_THRESHOLD in spec.options]


VERDICT_THRESHOLD_FLAG = "--verdict-threshold"
VERDICT_THRESHOLD = MetricOption(
    "verdict_threshold", "0.5",
    "P at which a judge verdict counts as yes (a statement supported, a chunk useful, a sentence needed): one "
    "for every metric, METRIC=P for one (comma-separated, e.g. 0.5,context_precision=0.85). Set it from labels; "
    "the judge is not re-run.", parse=parse_verdict_thresholds, metavar="P|METRIC=P,...")


def mean_and_share(probs: Sequence[float], threshold: float = THRESHOLD) -> tuple[float, float]:
    """The two readings of a list of statement verdicts (faithfulness, context_recall): the mean P, which is
    the expected share of supported statements and the headline, and the share with P ≥ threshold (Ragas'
    count at 0.5, the `.share` column)."""
    return sum(probs) / len(probs), sum(p >= threshold for p in probs) / len(probs)

T = TypeVar("T")
#: A flow: yields the questions it needs next, is sent their answers, returns its result.
Flow = Generator[list[Ask], list[Answer], T]


def gather(flows: Sequence[Flow[T]]) -> Flow[list[T]]:
    """Several flows of one sample as one: each round asks the questions of every sub-flow still waiting
    together, so a metric that needs independent sets of verdicts (claims against the reference and against
    each chunk) gets them in one batch rather than one after the other."""
    results: list[Any] = [None] * len(flows)
    waiting: dict[int, list[Ask]] = {}

    def advance(i: int, answers: list[Answer] | None) -> None:
        try:
            while True:
                asks = next(flows[i]) if answers is None else flows[i].send(answers)
                if asks:
                    waiting[i] = list(asks)
                    return
                answers = []
        except StopIteration as done:
            results[i] = done.value
            waiting.pop(i, None)

    for i in range(len(flows)):
        advance(i, None)
    while waiting:
        order = list(waiting)
        replies = yield [ask for i in order for ask in waiting[i]]
        start = 0
        for i in order:
            mine, start = replies[start: start + len(waiting[i])], start + len(waiting[i])
            advance(i, mine)
    return results


def drive(judge: Judge | Callable[[], Judge], flows: Sequence[Flow[Outcome]]) -> list[tuple[Outcome, CallStats]]:
    """Run flows in lockstep; each flow's outcome and the judge work spent on it.

    `judge` may be a function that loads it, called only when some flow asks a question. A question the
    judge could not answer (output cut off, prompt too long) is thrown into its flow as a
    JudgeError; a flow that does not catch it ends as Skipped("judge error: ...") — one odd sample never
    stops a long run, and never becomes a NaN.
    """
    outcomes: list[Outcome | None] = [None] * len(flows)
    spent = [CallStats() for _ in flows]
    waiting: dict[int, list[Ask]] = {}

    def advance(i: int, answers: list[Answer] | None, error: JudgeError | None = None) -> None:
        flow = flows[i]
        try:
            while True:
                asks = flow.throw(error) if error is not None else (next(flow) if answers is None else flow.send(answers))
                error = None
                if asks:
                    waiting[i] = list(asks)
                    return
                answers = []  # nothing asked: answer at once
        except StopIteration as done:
            outcomes[i] = done.value
        except JudgeError as exc:
            outcomes[i] = Skipped(f"judge error: {exc}")
        waiting.pop(i, None)

    for i in range(len(flows)):
        advance(i, None)
    while waiting:
        if callable(judge):  # loaded only once a flow asks something
            judge = judge()
        order = list(waiting)
        replies = judge.ask([ask for i in order for ask in waiting[i]])
        start = 0
        for i in order:
            mine, start = replies[start: start + len(waiting[i])], start + len(waiting[i])
            for answer in mine:
                spent[i] = spent[i] + answer.stats
            failed = next((a.error for a in mine if a.error is not None), None)
            advance(i, mine, failed)
    return [(outcome, stats) for outcome, stats in zip(outcomes, spent)]  # type: ignore[misc]


class JudgeMetric(Metric):
    """The base of judge metrics: a subclass writes `flow(sample, lang)`, and the pipeline drives the flows
    of every judge metric of a run together (measure_together)."""

    groups: tuple[str, ...] = ("judge",)
    models: tuple[str, ...] = ("judge",)
    kit: ModelKit

    @classmethod
    def create(cls, context: MetricContext, k: int | None) -> JudgeMetric:
        return cls(context.kit)

    def __init__(self, kit: ModelKit) -> None:
        self.kit = kit
        self.columns = self.columns or (self.name,)
        self._total: CallStats | None = None

    def flow(self, sample: Sample, lang: str) -> Flow[Outcome]:
        """One sample's questions to the judge, stage by stage, and its outcome (see the module's docstring)."""
        raise NotImplementedError

    def settings(self) -> dict[str, Any]:
        return dict(self.kit.options.settings())

    def usage(self) -> dict[str, Any]:
        """Judge work of this metric over the whole run (for the summary)."""
        return rounded(self._total.as_dict()) if self._total is not None else {}

    def used(self) -> CallStats:
        """The running total behind `usage`, unrounded (a Ray actor reports its growth per batch)."""
        return self._total if self._total is not None else CallStats()

    def add_usage(self, stats: CallStats) -> None:
        """Count judge work done elsewhere (by Ray actors) as this metric's, so the summary holds the run's."""
        self._total = stats if self._total is None else self._total + stats

    def measure(self, samples: Sequence[Sample]) -> list[Outcome]:
        (outcomes,) = measure_together([(self, samples)])
        return outcomes


class VerdictMetric(JudgeMetric):
    """A judge metric that counts verdicts as yes at P ≥ `threshold` (--verdict-threshold, default 0.5)."""

    options: tuple[MetricOption, ...] = (VERDICT_THRESHOLD,)

    @classmethod
    def create(cls, context: MetricContext, k: int | None) -> JudgeMetric:
        return cls(context.kit, threshold=threshold_of(context, cls.name))

    def __init__(self, kit: ModelKit, threshold: float = THRESHOLD) -> None:
        super().__init__(kit)
        self.threshold = _probability(str(threshold), threshold, "threshold")

    def settings(self) -> dict[str, Any]:
        return {"threshold": self.threshold, **super().settings()}


def threshold_of(context: MetricContext, metric: str) -> float:
    """The verdict threshold the run's options give `metric`."""
    return parse_verdict_thresholds(context.options.get("verdict_threshold", THRESHOLD)).of(metric)


def measure_together(work: Sequence[tuple[JudgeMetric, Sequence[Sample]]]) -> list[list[Outcome]]:
    """Several judge metrics of one kit over their samples, their flows driven in one lockstep: each round
    hands the judge the questions of every metric at once, sample by sample. A backend with many sequences
    in flight then gets calls of several prompts side by side (the batched engine keeps each prompt's
    instructions in a slot of its own), and one sample's verdicts from different metrics against the same
    contexts (faithfulness, context_recall) come one after the other, so the slot holding those contexts
    serves both. The calls are those of metric after metric; only their order changes."""
    if not work:
        return []
    kit = work[0][0].kit
    if any(metric.kit is not kit for metric, _ in work):
        raise ValueError("metrics measured together must share one judge kit")
    rank: dict[str, int] = {}
    for _, samples in work:
        for sample in samples:
            rank.setdefault(sample.id, len(rank))
    order = sorted(((k, j) for k, (_, samples) in enumerate(work) for j in range(len(samples))),
                   key=lambda kj: (rank[work[kj[0]][1][kj[1]].id], kj[0]))
    langs = {(k, j): kit.lang(work[k][1][j]) for k, j in order}
    results = drive(lambda: kit.judge, [work[k][0].flow(work[k][1][j], langs[k, j]) for k, j in order])
    measured: list[list[Outcome | None]] = [[None] * len(samples) for _, samples in work]
    for (k, j), (outcome, used) in zip(order, results):
        work[k][0].add_usage(used)
        if isinstance(outcome, Measurement):
            outcome.details.update(lang=langs[k, j], judge=rounded(used.as_dict()))
        measured[k][j] = outcome
    return measured  # type: ignore[return-value]


def rounded(stats: dict[str, Any]) -> dict[str, Any]:
    """Seconds vary run to run; round them so details stay readable (the values are never compared)."""
    return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in stats.items()}
