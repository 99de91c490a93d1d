"""The metric contract: what every metric declares, and what the pipeline, the registry, Ray, the report
and the docs read from it. Nothing outside this module probes a metric for an attribute it did not declare.

A metric is a subclass of `Metric` decorated with `@register_metric` (registry.py). It works on batches, so
that cheap metrics can vectorise (the retrieval kernels run on numpy arrays) and judge metrics can share
calls; the pipeline checks `requires` before calling `measure`, so a metric only sees samples that carry its
fields. A judge metric subclasses `metrics.judged.JudgeMetric` instead and writes one `flow` per sample.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping, Sequence

from ..data.records import Sample
from ..errors import OptionError

if TYPE_CHECKING:
    from ..model_kit import ModelKit


@dataclass(frozen=True, slots=True)
class Measurement:
    """A metric's result for one sample: one value per column, plus details worth keeping per sample."""

    values: dict[str, float]
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Skipped:
    """A sample the metric cannot score, and why (counted per reason in the summary)."""

    reason: str


Outcome = Measurement | Skipped


@dataclass(frozen=True)
class MetricOption:
    """A setting that changes a metric's values. It becomes the CLI flag --NAME (with dashes) and a
    keyword of MetricOptions, and its value is recorded in the summary through the metric's settings."""

    name: str
    default: Any
    help: str
    choices: tuple[str, ...] | None = None
    minimum: int | None = None
    maximum: int | None = None
    #: For a value with a grammar of its own (--verdict-threshold): reads the given value into what metrics
    #: receive, raising OptionError on a bad one. The flag then takes text.
    parse: Callable[[Any], Any] | None = None
    metavar: str | None = None  # how --help names a `parse` option's value

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def check(self, value: Any) -> Any:
        """The value if it is allowed (as `parse` reads it, when there is one); OptionError naming the flag
        otherwise."""
        if self.parse is not None:
            return self.parse(value)
        if self.choices is not None and value not in self.choices:
            raise OptionError(f"{self.flag} '{value}' is not one of {', '.join(self.choices)}")
        if isinstance(self.default, bool):
            if not isinstance(value, bool):
                raise OptionError(f"{self.flag} must be true or false, got {value!r}")
        elif isinstance(self.default, int):
            if isinstance(value, bool) or not isinstance(value, int):
                raise OptionError(f"{self.flag} must be an integer, got {value!r}")
            if (self.minimum is not None and value < self.minimum) or (self.maximum is not None and value > self.maximum):
                raise OptionError(f"{self.flag} {value} is outside {self.minimum}..{self.maximum}")
        return value


def check_choices(metric: str, *values: tuple[str, Sequence[str]]) -> None:
    """ValueError for a (value, allowed) pair whose value is not allowed: a metric built in Python gets the
    check that MetricOption.check gives the CLI and MetricOptions."""
    for value, allowed in values:
        if value not in allowed:
            raise ValueError(f"{metric} option {value!r} is not one of {', '.join(allowed)}")


@dataclass(frozen=True)
class ChunkDetails:
    """Where a metric keeps one judge probability per retrieved chunk in a sample's details, so that
    `calibrate` can fit its threshold on the chunks' relevance and the report can show it beside each chunk
    (as P(`label`)): `details[metric][key]` is a list of {"p": ...} entries, one per context in order
    (`in_order`), or only for some contexts, each then naming its 1-based "rank"."""

    key: str
    label: str
    in_order: bool = True


@dataclass(frozen=True)
class MetricContext:
    """What a metric's `create(context, k)` receives: every metric option's value (by name) and the models
    the run shares (the judge and embedder load on first use)."""

    options: Mapping[str, Any]
    kit: ModelKit


class Metric:
    """The base of every metric. Subclasses set the class attributes that apply and implement `measure`.

    The class attributes are read by the registry when the class registers (its name forms, groups, CLI
    flags) and by the pipeline per run; an instance may narrow `name` and `columns` (a metric with a cutoff
    is `ndcg` on the class and `ndcg@10` on the instance)."""

    #: Canonical name: the base name on the class ("ndcg", "faithfulness"), the full name on an instance.
    name: str = ""
    #: Sample fields checked before `measure` (see records.REQUIREMENTS); a sample without one is skipped.
    requires: tuple[str, ...] = ()
    #: Output columns in order; empty means one column named like the metric.
    columns: tuple[str, ...] = ()
    #: Whether `name@K` is accepted: "none", "optional" or "required"; `default_k` is the K its groups use.
    cutoff: ClassVar[str] = "none"
    default_k: ClassVar[int | None] = None
    groups: ClassVar[tuple[str, ...]] = ()
    #: Settings that change the values: each becomes a CLI flag and a MetricOptions keyword.
    options: ClassVar[tuple[MetricOption, ...]] = ()
    #: Other tools' names for it, for "did you mean" (Ragas' factual_correctness → answer_correctness).
    aliases: ClassVar[tuple[str, ...]] = ()
    #: The models it takes from the run's ModelKit ("judge", "embedder"): checked before the input is read,
    #: loaded once per Ray actor, and a metric using the judge is scored in the judge's small windows.
    models: ClassVar[tuple[str, ...]] = ()
    #: hallucination, noise_sensitivity: compare and the report count a drop as a win.
    lower_is_better: ClassVar[bool] = False
    #: "relative" when values only rank samples (grounding's likelihood): the report does not colour them.
    scale: ClassVar[str] = "absolute"
    #: Per-chunk judge probabilities in the details (context_precision, passage_relevance).
    chunk_details: ClassVar[ChunkDetails | None] = None
    #: The run's models, for a metric that declares `models`.
    kit: ModelKit | None = None

    @classmethod
    def create(cls, context: MetricContext, k: int | None) -> Metric:
        """The metric for one run, from its options; a metric that needs neither options nor models keeps
        this default."""
        return cls() if k is None else cls(k)  # type: ignore[call-arg]

    @classmethod
    def output_columns(cls) -> tuple[str, ...]:
        """The columns a default instance writes (a cutoff metric's are per instance: see `columns`)."""
        return cls.columns or (cls.name,)

    @property
    def uses_judge(self) -> bool:
        return "judge" in self.models

    def settings(self) -> dict[str, Any]:
        """Options that change the numbers, recorded in the summary for reproducibility."""
        return {}

    def measure(self, samples: Sequence[Sample]) -> list[Outcome]:
        """One outcome per sample, in order."""
        raise NotImplementedError
