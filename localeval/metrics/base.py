"""What every metric is: a name, the fields it needs, the columns it writes, and a batch `measure`.

Metrics work on batches so that cheap metrics can vectorise (the retrieval kernels run on numpy arrays)
and judge metrics can share calls; the pipeline checks `requires` before calling `measure`, so a metric
only sees samples that carry its fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence

from ..data.records import Sample

if TYPE_CHECKING:
    from ..judge.kit import JudgeKit


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
class MetricContext:
    """What a metric's `create(context, k)` receives: every metric option's value (by name) and the models
    the run shares (the judge and embedder load on first use)."""

    options: Mapping[str, Any]
    kit: JudgeKit


class Metric(Protocol):
    """The interface the pipeline relies on."""

    #: Canonical name, as used in --metrics (e.g. "ndcg@10", "rouge_l").
    name: str
    #: Sample requirements (see records.REQUIREMENTS) checked before `measure`.
    requires: tuple[str, ...]
    #: Output columns, in order (e.g. ("ndcg@10",) or ("rouge_l.precision", "rouge_l.recall", "rouge_l.f")).
    columns: tuple[str, ...]

    def settings(self) -> dict[str, Any]:
        """Options that change the numbers, recorded in the summary for reproducibility."""
        ...

    def measure(self, samples: Sequence[Sample]) -> list[Outcome]:
        """One outcome per sample, in order."""
        ...
