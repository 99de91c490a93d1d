"""Your own criteria as metrics: a small TOML file a user writes without Python, scored by the local judge
as a probability read from one forward pass (DeepEval's G-Eval and Ragas' AspectCritic / rubric scores,
without parsing a rating the judge writes as text).

A criterion file:

    name = "conciseness"                 # the metric is criteria.conciseness
    criterion = "The answer gives what the question asks for in as few words as it needs."
    reads = ["question", "answer"]       # any of question, answer, contexts, reference
    scale = "yes/no"                     # or "levels", with a [levels] table
    steps = ["Find what the question asks for.", "..."]   # optional evaluation steps, shown to the judge

    [levels]                             # scale = "levels": a description per integer level
    1 = "rambles: ..."
    5 = "..."

    [zh]                                 # optional Chinese wording: criterion, steps, levels
    criterion = "..."

The top-level wording is English; a sample in Chinese needs a [zh] table. A yes/no criterion scores
P(yes); a levels criterion the expected level under the judge's distribution over the level tokens,
mapped onto [0, 1] ((E − lowest) / (highest − lowest)), the distribution in the details. Everything in a
file is checked before any model loads (`CriterionError`: one line naming the file and the field), and
the levels are checked against the judge's own vocabulary: each must be one token of its own, or the
distribution would be read over the first digit of "10" and "1" alike.

Criteria register as metrics (registry.py) when their files are loaded (`load_criteria`, `--criteria`),
so `metrics`, the report, `check`, `calibrate`, `compare` and Ray treat them like any other metric; the
examples shipped in localeval/resources/criteria and the files of plugin packages (entry-point group
`localeval.criteria`, naming a module whose folder holds *.toml files) register on first use of the
registry. A criterion's metric name and its full text go into summary.json's settings, and the text is
part of every judge call's cache key, so an edited criterion is never answered from the old cache.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..data.records import Sample
from ..errors import LocalevalError
from ..judge.facade import Ask
from ..judge.injection import screen_rated_whole
from .base import Measurement, Outcome
from .judged import Flow, JudgeMetric
from .registry import after_loading, register_metric, spec_of
from .steps import nothing_left

PREFIX = "criteria."
ENTRY_POINT_GROUP = "localeval.criteria"
FIELDS = ("question", "answer", "contexts", "reference")
SCALES = ("yes/no", "levels")
KEYS = ("name", "criterion", "reads", "scale", "steps", "levels", "zh", "en")
WORDING = ("criterion", "steps", "levels")
LANGS = ("en", "zh")
_NAME = re.compile(r"[a-z][a-z0-9_]*")


class CriterionError(LocalevalError):
    """A criterion file that cannot be used, named with the field that is wrong."""


@dataclass(frozen=True)
class Wording:
    """A criterion in one language."""

    criterion: str
    steps: tuple[str, ...] = ()
    levels: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True)
class Criterion:
    name: str
    reads: tuple[str, ...]
    scale: str
    wording: Mapping[str, Wording]
    source: str
    sha256: str

    @property
    def metric(self) -> str:
        return PREFIX + self.name

    @property
    def levels(self) -> tuple[int, ...]:
        return tuple(level for level, _ in next(iter(self.wording.values())).levels)

    def settings(self) -> dict[str, Any]:
        return {"criterion": {lang: {"criterion": w.criterion, "steps": list(w.steps),
                                     "levels": {str(k): v for k, v in w.levels}}
                              for lang, w in self.wording.items()},
                "reads": list(self.reads), "scale": self.scale, "file_sha256": self.sha256}


def parse_criterion(text: str, source: str) -> Criterion:
    """A criterion file's text, checked field by field (CriterionError naming `source` and the field)."""
    def fail(field: str | None, message: str) -> CriterionError:
        return CriterionError(f"{source}: {f'field {field!r}: ' if field else ''}{message}")

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise fail(None, f"not valid TOML ({exc})") from None
    unknown = [key for key in data if key not in KEYS]
    if unknown:
        raise fail(unknown[0], f"is not a criterion field; the fields are {', '.join(KEYS)}")
    name = data.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise fail("name", "must be lower-case letters, digits and _, starting with a letter (it becomes "
                           f"the metric {PREFIX}NAME), got {name!r}")
    reads = data.get("reads")
    if not isinstance(reads, list) or not reads or not all(isinstance(r, str) for r in reads):
        raise fail("reads", f"must be a list of the fields the judge is shown, from {', '.join(FIELDS)}")
    for field in reads:
        if field not in FIELDS:
            raise fail("reads", f"{field!r} is not one of {', '.join(FIELDS)}")
    if "answer" not in reads and "contexts" not in reads:
        raise fail("reads", "must include answer or contexts: a criterion judges what the system wrote or retrieved")
    scale = data.get("scale", "yes/no")
    if scale not in SCALES:
        raise fail("scale", f"must be one of {', '.join(repr(s) for s in SCALES)}, got {scale!r}")
    wording = {"en": _wording({k: data[k] for k in WORDING if k in data}, scale, fail, "")}
    for lang in LANGS:
        table = data.get(lang)
        if table is None:
            continue
        if not isinstance(table, dict):
            raise fail(lang, "must be a table of criterion, steps and levels in that language")
        for key in table:
            if key not in WORDING:
                raise fail(f"{lang}.{key}", f"is not a wording field; a [{lang}] table holds {', '.join(WORDING)}")
        if "criterion" not in table:
            raise fail(f"{lang}.criterion", f"a [{lang}] table must word the criterion in that language")
        merged = {**{k: data[k] for k in WORDING if k in data}, **table}  # steps, levels: the top level's if not given
        wording[lang] = _wording(merged, scale, fail, f"{lang}.")
    levels = {lang: [level for level, _ in w.levels] for lang, w in wording.items()}
    if len({tuple(v) for v in levels.values()}) > 1:
        raise fail("levels", f"every language must have the same levels; found {levels}")
    return Criterion(name, tuple(reads), scale, wording, source, hashlib.sha256(text.encode("utf-8")).hexdigest())


def _wording(data: Mapping[str, Any], scale: str, fail: Any, at: str) -> Wording:
    criterion = data.get("criterion")
    if not isinstance(criterion, str) or not criterion.strip():
        raise fail(f"{at}criterion", "must be a non-empty string saying what is judged")
    steps = data.get("steps", [])
    if not isinstance(steps, list) or not all(isinstance(s, str) and s.strip() for s in steps):
        raise fail(f"{at}steps", "must be a list of non-empty strings")
    levels: list[tuple[int, str]] = []
    table = data.get("levels")
    if scale == "levels":
        if not isinstance(table, dict) or len(table) < 2:
            raise fail(f"{at}levels", 'scale = "levels" needs a [levels] table of at least two levels, e.g. 1 = "..."')
        for key, description in table.items():
            if not re.fullmatch(r"-?[0-9]+", key):
                raise fail(f"{at}levels.{key}", "a level must be an integer")
            if not isinstance(description, str) or not description.strip():
                raise fail(f"{at}levels.{key}", "must describe the level in words")
            levels.append((int(key), description.strip()))
        levels.sort()
        if len({level for level, _ in levels}) < len(levels):
            raise fail(f"{at}levels", "two levels have the same number")
    elif table is not None:
        raise fail(f"{at}levels", 'a yes/no criterion has no levels; set scale = "levels" to rate on levels')
    return Wording(criterion.strip(), tuple(s.strip() for s in steps), tuple(levels))


def read_criteria(paths: Iterable[str | Path]) -> list[Criterion]:
    """The criteria of files and folders (a folder: every *.toml in it, in name order)."""
    found: list[Criterion] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            files = sorted(path.glob("*.toml"))
            if not files:
                raise CriterionError(f"--criteria {path}: the folder holds no *.toml criterion file")
        elif path.is_file():
            files = [path]
        else:
            raise CriterionError(f"--criteria {path}: no such file or folder")
        for file in files:
            try:
                text = file.read_text(encoding="utf-8-sig")  # an editor's byte-order mark is no TOML error
            except (OSError, UnicodeDecodeError) as exc:
                raise CriterionError(f"{file}: cannot be read as UTF-8 text ({exc})") from None
            found.append(parse_criterion(text, str(file)))
    return found


def load_criteria(paths: Iterable[str | Path]) -> list[str]:
    """Register the criteria of files and folders as metrics; their metric names, in order. Loading a
    file again is harmless (its name comes once); two different criteria of one name are an error."""
    return list(dict.fromkeys(register_criterion(criterion) for criterion in read_criteria(paths)))


def register_criterion(criterion: Criterion) -> str:
    """Register one criterion as the metric criteria.NAME (after the built-ins and the shipped examples, so a
    file that reuses one of their names is refused, whichever is loaded first)."""
    existing = spec_of(criterion.metric)
    if existing is not None:
        known = existing.cls.criterion if issubclass(existing.cls, CriterionMetric) else None
        if known is not None and known.sha256 == criterion.sha256:
            return criterion.metric
        where = known.source if known is not None else existing.cls.__module__
        raise CriterionError(f"{criterion.source}: field 'name': {criterion.metric} is already defined by {where}")
    first = next(iter(criterion.wording.values())).criterion
    cls = type(f"Criterion_{criterion.name}", (CriterionMetric,), {
        "name": criterion.metric, "criterion": criterion, "__module__": __name__,
        "requires": tuple(f for f in criterion.reads if f != "question"),
        "__doc__": f"{first}{'' if first.endswith('.') else '.'} ({criterion.scale}; {Path(criterion.source).name})"})
    register_metric(cls)
    return criterion.metric


def packaged_criteria() -> list[Path]:
    """The example criteria shipped with localeval, then those of plugin packages."""
    from importlib import resources
    from importlib.metadata import entry_points

    folders = [Path(str(resources.files("localeval.resources") / "criteria"))]
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            module = entry.load()
            folders.append(Path(module.__file__).parent)
        except Exception as exc:  # a broken plugin must not break localeval
            import warnings

            warnings.warn(f"criteria plugin '{entry.name}' ({entry.value}) failed to load and is left out: {exc}",
                          stacklevel=2)
    return [file for folder in folders if folder.is_dir() for file in sorted(folder.glob("*.toml"))]


@after_loading
def _register_packaged() -> None:
    """The shipped examples and plugins' criteria join the registry with the built-in metrics; a broken
    file is reported and left out."""
    import warnings

    for file in packaged_criteria():
        try:
            load_criteria([file])
        except LocalevalError as exc:
            warnings.warn(f"criteria file {file} is left out: {exc}", stacklevel=2)


def check_levels(criteria: Sequence[Criterion], vocabulary: set[str] | None, judge: str) -> None:
    """Each level of a levels criterion must be one token of the judge's vocabulary, distinct from the
    others (CriterionError naming the criterion and the level). Without a vocabulary to read (a judge on a
    server) only single digits pass: they are one token in every tokenizer, and a longer number's first
    token would be read as a level of its own."""
    for criterion in criteria:
        for level in criterion.levels:
            if vocabulary is None and not 0 <= level <= 9:
                raise CriterionError(f"{criterion.source}: field 'levels.{level}': the judge {judge} runs on a server "
                                     f"whose tokens localeval cannot read, so '{level}' may not be one token; number "
                                     "the levels with single digits (0-9)")
            if vocabulary is not None and str(level) not in vocabulary:
                raise CriterionError(f"{criterion.source}: field 'levels.{level}': '{level}' is not a single token "
                                     f"of the judge {judge}; number the levels with single digits (0-9)")


class CriterionMetric(JudgeMetric):
    """A user's criterion, scored by the judge (subclassed once per criterion by register_criterion)."""

    criterion: Criterion
    groups: tuple[str, ...] = ("criteria",)

    def settings(self) -> dict[str, Any]:
        return {**self.criterion.settings(), **super().settings()}

    def flow(self, sample: Sample, lang: str) -> Flow[Outcome]:
        criterion = self.criterion
        wording = criterion.wording.get(lang)
        if wording is None:  # the pipeline refuses such input up front (language_check); a sample given
            raise CriterionError(f"{criterion.source}: no [{lang}] wording for sample {sample.id!r}")  # by hand
        shown: dict[str, Any] = {}
        aimed: tuple[str, ...] = ()
        for field in criterion.reads:
            if field == "contexts":
                shown["passages"] = [c.text for c in sample.contexts or ()]
            elif field == "answer":
                # screened as a passage when the prompt is rendered, a sentence with aimed words in it would go
                # whole, claim and all, and an answer emptied so would pass a criterion that an empty answer
                # meets ("gives no medical advice"); an answer given empty is rated as it is
                screened = screen_rated_whole(sample.answer or "")
                if screened.removed and not screened.text.strip():
                    return nothing_left(screened, "the answer is empty")
                shown["answer"], aimed = screened.text, screened.removed
            else:
                shown[field] = getattr(sample, field) or ""
        noted = {"aimed_at_judge": {"answer": list(aimed)}} if aimed else {}  # faithfulness' shape
        variables = {"criterion": wording.criterion, "steps": list(wording.steps), "levels": list(wording.levels),
                     **shown}
        if criterion.scale == "yes/no":
            (answer,) = yield [Ask.yes_no(self.kit.prompt("criterion", lang, **variables))]
            return Measurement({self.name: float(answer.value)}, {"p_yes": round(float(answer.value), 6), **noted})
        options = [str(level) for level in criterion.levels]
        (answer,) = yield [Ask.choice(self.kit.prompt("criterion_levels", lang, **variables), options)]
        low, high = criterion.levels[0], criterion.levels[-1]
        expected = sum(int(k) * p for k, p in answer.value.items())
        return Measurement({self.name: (expected - low) / (high - low)},
                           {"distribution": {k: round(p, 6) for k, p in answer.value.items()},
                            "expected_level": round(expected, 6), **noted})


def criteria_of(metrics: Iterable[Any]) -> list[Criterion]:
    return [m.criterion for m in metrics if isinstance(m, CriterionMetric)]


def language_check(criteria: Sequence[Criterion], lang_of: Any, source: str) -> Callable[[Sample], None] | None:
    """A check for each sample that its language has wording in every criterion (CriterionError naming the
    sample by file and line), for the input's validation pass, before the judge loads; None when every
    criterion is worded in every language."""
    if all(set(LANGS) <= set(c.wording) for c in criteria):
        return None

    def check(sample: Sample) -> None:
        lang = lang_of(sample)
        for criterion in criteria:
            if lang not in criterion.wording:
                raise CriterionError(f"{source}:{sample.line}: the sample {sample.id!r} is in {lang!r} and criterion "
                                     f"{criterion.metric} ({criterion.source}) has no [{lang}] wording; add a [{lang}] "
                                     "table with its criterion (and steps, levels), or score with --lang en")

    return check
