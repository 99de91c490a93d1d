"""Every metric registers itself here: its name, cutoff, columns, required fields, groups and options.

Everything else is derived from the registry: the groups accepted in --metrics, "did you mean"
suggestions, the `localeval metrics` listing, the CLI flags of metric options, and the docs' metric reference (localeval/reference.py).
Adding a metric is one class with `@register_metric`; a third-party package adds one through the
entry-point group `localeval.metrics` (docs/pages/extending/metrics.md).

Names: one canonical string per metric, `name` or `name@K`, parsed by `parse_name` and nowhere else.
"""

from __future__ import annotations

import difflib
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from ..errors import MetricNameError, OptionError
from .base import Metric, MetricOption, check_choices

__all__ = ["MetricOption", "MetricSpec", "check_choices", "register_metric", "specs"]

ENTRY_POINT_GROUP = "localeval.metrics"
#: Imported in this order, which is the order of `localeval metrics`, of the groups and of the columns.
BUILTIN_MODULES = ("retrieval", "rouge", "answer_match", "faithfulness", "grounding", "answer_relevance",
                   "context_relevance", "context_precision_recall", "correctness", "diagnostics", "criteria")
CUTOFFS = ("none", "optional", "required")
_CUTOFF = re.compile(r"[1-9][0-9]*")


@dataclass(frozen=True)
class MetricSpec:
    """What the registry knows of one metric class (or family, for metrics with a cutoff)."""

    cls: type
    name: str
    cutoff: str
    default_k: int | None
    groups: tuple[str, ...]
    requires: tuple[str, ...]
    options: tuple[MetricOption, ...]
    aliases: tuple[str, ...]
    summary: str
    plugin: str | None = None

    @property
    def forms(self) -> tuple[str, ...]:
        """The name patterns users can write: 'ndcg@K', or 'mrr' and 'mrr@K', or 'faithfulness'."""
        return {"none": (self.name,), "optional": (self.name, f"{self.name}@K"), "required": (f"{self.name}@K",)}[self.cutoff]

    @property
    def member(self) -> str:
        """The concrete name this metric has in its groups (e.g. ndcg@5)."""
        return f"{self.name}@{self.default_k}" if self.cutoff == "required" else self.name


@dataclass
class _Registry:
    specs: dict[str, MetricSpec] = field(default_factory=dict)
    hooks: list[Callable[[], None]] = field(default_factory=list)
    loaded: bool = False


_REGISTRY = _Registry()


def register_metric(cls: type[Metric]) -> type[Metric]:
    """Class decorator: register a `Metric` subclass under its class attributes (base.Metric lists them)."""
    if not (isinstance(cls, type) and issubclass(cls, Metric)):
        raise ValueError(f"{getattr(cls, '__name__', cls)!r} is not a metric: subclass localeval.metrics.Metric "
                         "(or JudgeMetric) and declare its name, requires and columns")
    name = cls.name
    if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_.]*", name):
        raise ValueError(f"metric class {cls.__name__} needs a lower-case `name` (letters, digits, _ and .)")
    if cls.cutoff not in CUTOFFS:
        raise ValueError(f"metric {name}: cutoff must be one of {', '.join(CUTOFFS)}")
    if cls.cutoff == "required" and cls.groups and cls.default_k is None:
        raise ValueError(f"metric {name}: a metric that needs a cutoff and joins groups needs `default_k`")
    if not cls.columns and cls.cutoff == "none":
        cls.columns = (name,)  # the contract's default: one column named like the metric
    existing = _REGISTRY.specs.get(name)
    if existing is not None and existing.cls is not cls:
        raise ValueError(f"metric name '{name}' is already registered by {existing.cls.__module__}.{existing.cls.__name__}")
    doc = (cls.__doc__ or "").strip().splitlines()
    _REGISTRY.specs[name] = MetricSpec(
        cls=cls, name=name, cutoff=cls.cutoff, default_k=cls.default_k, groups=cls.groups, requires=cls.requires,
        options=cls.options, aliases=cls.aliases, summary=doc[0] if doc else "",
        plugin=None if cls.__module__.startswith("localeval.") else cls.__module__)
    return cls


def after_loading(load: Callable[[], None]) -> Callable[[], None]:
    """Run `load` once the built-in metric modules and the metric plugins are registered: criteria.py adds
    the packaged criteria this way, which the registry itself need not know about."""
    _REGISTRY.hooks.append(load)
    return load


def specs() -> list[MetricSpec]:
    """Every registered metric: built-ins in BUILTIN_MODULES order (whoever imported them first), then
    plugins in registration order."""
    _load()
    order = {f"{__package__}.{module}": i for i, module in enumerate(BUILTIN_MODULES)}
    ranked = sorted(enumerate(_REGISTRY.specs.values()),
                    key=lambda item: (order.get(item[1].cls.__module__, len(order)), item[0]))
    return [spec for _, spec in ranked]


def spec_of(name: str) -> MetricSpec | None:
    """The registered metric of a base name, if any."""
    _load()
    return _REGISTRY.specs.get(name)


def groups() -> dict[str, tuple[str, ...]]:
    """Group name → concrete metric names, from the specs' `groups`; `all` is every registered metric."""
    out: dict[str, list[str]] = {}
    for spec in specs():
        for group in spec.groups:
            out.setdefault(group, []).append(spec.member)
    out["all"] = [spec.member for spec in specs()]
    return {group: tuple(names) for group, names in out.items()}


def lower_is_better() -> tuple[str, ...]:
    """The columns of metrics that declare `lower_is_better = True` (hallucination, noise_sensitivity):
    compare and the report read them that way without --lower-is-better."""
    return tuple(column for spec in specs() if spec.cls.lower_is_better for column in spec.cls.output_columns())


def name_forms() -> tuple[str, ...]:
    return tuple(form for spec in specs() for form in spec.forms)


def options() -> dict[str, MetricOption]:
    """Every metric option by name (a family's metrics share theirs)."""
    found: dict[str, MetricOption] = {}
    for spec in specs():
        for option in spec.options:
            found.setdefault(option.name, option)
    return found


def parse_name(name: str) -> tuple[MetricSpec, int | None]:
    """'ndcg@10' → (the ndcg spec, 10); malformed or unknown names raise MetricNameError saying what fits."""
    base, at, cutoff = name.partition("@")
    spec = _REGISTRY.specs.get(base) if _load() else None
    if spec is None:
        raise MetricNameError(_unknown(name, base, at + cutoff))
    forms = " or ".join(f"'{f}'" for f in spec.forms)
    expected = f"expected {forms} where K is a positive integer, e.g. '{base}@10'"
    if not at:
        if spec.cutoff == "required":
            raise MetricNameError(f"'{name}' needs a cutoff: {expected}")
        return spec, None
    if spec.cutoff == "none":
        raise MetricNameError(f"'{name}' takes no cutoff; write '{base}'")
    if not _CUTOFF.fullmatch(cutoff):
        note = " (0 does not mean 'all')" if cutoff.strip("0") == "" and cutoff else ""
        raise MetricNameError(f"'{name}' has an invalid cutoff {cutoff!r}: {expected}{note}")
    return spec, int(cutoff)


def _unknown(name: str, base: str, suffix: str) -> str:
    """'map' → did you mean 'ap'; 'P@5' → 'precision@5'; 'faithfullness' → 'faithfulness'."""
    lowered = base.lower()
    for spec in specs():
        if lowered == spec.name or lowered in spec.aliases:
            return f"'{name}' is not a localeval metric name; did you mean '{spec.name}{suffix}'?"
    close = difflib.get_close_matches(lowered, list(_REGISTRY.specs), n=1, cutoff=0.75)
    hint = f" (did you mean '{close[0]}{suffix}'?)" if close else ""
    listed = ", ".join(name_forms())
    return f"'{name}' is not a known metric{hint}; use one of {listed} or a group ({', '.join(groups())})"


def expand_names(spec: str | Iterable[str]) -> list[str]:
    """Split a comma list, expand groups, drop repeats while keeping the user's order."""
    parts = spec.split(",") if isinstance(spec, str) else list(spec)
    known = groups()
    names: list[str] = []
    for part in (p.strip() for p in parts):
        if not part:
            continue
        for name in known.get(part.lower(), (part,)):
            if name not in names:
                names.append(name)
    if not names:
        raise MetricNameError("no metrics given; name at least one, e.g. --metrics classical")
    return names


def check_options(values: dict[str, Any], metric_names: Sequence[str] | None = None) -> dict[str, Any]:
    """Every option with its value (given or default), each checked; an unknown option name is an error."""
    known = options()
    for name in values:
        if name not in known:
            raise OptionError(f"'{name}' is not a metric option; known: {', '.join(sorted(known)) or 'none'}")
    return {name: option.check(values.get(name, option.default)) for name, option in known.items()}


def _load() -> bool:
    """Import the built-in metric modules, then plugins, once. Built-ins register in a fixed order, so
    groups and listings are stable; a plugin that fails to load is reported and left out."""
    if _REGISTRY.loaded:
        return True
    _REGISTRY.loaded = True
    from importlib import import_module
    from importlib.metadata import entry_points

    for module in BUILTIN_MODULES:
        import_module(f"{__package__}.{module}")

    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = entry.load()
        except Exception as exc:  # a broken third-party plugin must not break localeval
            warnings.warn(f"metric plugin '{entry.name}' ({entry.value}) failed to load and is left out: {exc}",
                          stacklevel=2)
            continue
        if loaded not in [s.cls for s in _REGISTRY.specs.values()]:
            try:
                register_metric(loaded)
            except ValueError as exc:
                warnings.warn(f"metric plugin '{entry.name}' ({entry.value}) is left out: {exc}", stacklevel=2)
    for hook in _REGISTRY.hooks:
        hook()
    return True
