"""The data contract: one RAG output per record, validated into an immutable `Sample`.

Only `id` and `question` are required. Every other field is optional because each metric states the
fields it needs and a sample without them is skipped for that metric (with the reason counted), rather
than the whole run failing. Fields that are present must have the documented type: a wrong type is an
input error, never a silent NaN further down.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..errors import InputError
from ..limits import MAX_GRADE, MAX_ID_LENGTH
from ..strict_json import finite_number

#: Keys localeval adds to each output row; an input record may not use them.
OUTPUT_KEYS = ("metrics", "details", "skipped")

#: Field names a metric may list in `requires`; `context_ids` means "contexts, each with an id".
REQUIREMENTS = ("answer", "contexts", "context_ids", "reference", "reference_doc_ids", "reference_docs")


@dataclass(frozen=True, slots=True)
class Context:
    """One retrieved (or reference) passage; `id` is None when the input gave plain strings."""

    text: str
    id: str | None = None


@dataclass(frozen=True, slots=True)
class Sample:
    """One validated record. `relevance` holds `reference_doc_ids` as {doc_id: grade}; grade > 0 is relevant."""

    id: str
    question: str
    answer: str | None = None
    contexts: tuple[Context, ...] | None = None
    reference: str | None = None
    relevance: Mapping[str, float] | None = None
    reference_docs: tuple[Context, ...] | None = None
    record: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    line: int | None = field(default=None, compare=False)

    @property
    def context_ids(self) -> tuple[str, ...] | None:
        """Retrieved ids in rank order, or None when any context lacks an id."""
        if self.contexts is None or any(c.id is None for c in self.contexts):
            return None
        return tuple(c.id for c in self.contexts)  # type: ignore[misc]

    def missing(self, requirement: str) -> str | None:
        """Why this sample cannot serve a metric needing `requirement`, or None if it can."""
        if requirement == "context_ids":
            if self.contexts is None:
                return "missing field 'contexts'"
            return None if self.context_ids is not None else "contexts have no ids"
        if requirement == "reference_doc_ids":
            value = self.relevance
        else:
            value = getattr(self, requirement)
        return f"missing field '{requirement}'" if value is None else None


def sample_from_record(record: Any, source: str = "<input>", line: int | None = None) -> Sample:
    """Validate one decoded record against the data contract; raise InputError naming the bad field."""

    def fail(field_name: str | None, message: str) -> InputError:
        return InputError(source, line, field_name, message)

    if not isinstance(record, dict):
        raise fail(None, f"expected a JSON object, got {_type_name(record)}")
    for key in OUTPUT_KEYS:
        if key in record:
            raise fail(key, "is reserved for localeval's output; rename it in the input")

    if "id" not in record or record["id"] is None:
        raise fail("id", "is required")
    sample_id = identifier(record["id"], lambda m: fail("id", m))

    question = record.get("question")
    if not isinstance(question, str) or not question.strip():
        got = "missing" if question is None else (f"got {_type_name(question)}" if not isinstance(question, str) else "empty")
        raise fail("question", f"must be a non-empty string ({got})")

    answer = record.get("answer")
    if answer is not None and not isinstance(answer, str):
        raise fail("answer", f"must be a string, got {_type_name(answer)}")

    reference = record.get("reference")
    if reference is not None and (not isinstance(reference, str) or not reference.strip()):
        raise fail("reference", "must be a non-empty string when present (omit it or use null)")

    return Sample(
        id=sample_id,
        question=question,
        answer=answer,
        contexts=_passages(record.get("contexts"), "contexts", fail),
        reference=reference,
        relevance=_relevance(record.get("reference_doc_ids"), fail),
        reference_docs=_passages(record.get("reference_docs"), "reference_docs", fail),
        record=record,
        line=line,
    )


def _passages(value: Any, name: str, fail) -> tuple[Context, ...] | None:
    """A list of strings, or of {id, text} objects; mixing the two is an error (ranks would be ambiguous)."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise fail(name, f"must be a list of strings or of {{id, text}} objects, got {_type_name(value)}")
    passages = []
    kinds = set()
    for i, item in enumerate(value):
        where = f"{name}[{i}]"
        if isinstance(item, str):
            kinds.add("string")
            passages.append(Context(text=item))
        elif isinstance(item, dict):
            kinds.add("object")
            text = item.get("text")
            if not isinstance(text, str):
                raise fail(f"{where}.text", f"must be a string, got {_type_name(text) if 'text' in item else 'nothing'}")
            if item.get("id") is None:
                raise fail(f"{where}.id", "is required in a context object")
            passages.append(Context(text=text, id=identifier(item["id"], lambda m: fail(f"{where}.id", m))))
        else:
            raise fail(where, f"must be a string or an {{id, text}} object, got {_type_name(item)}")
    if len(kinds) > 1:
        raise fail(name, "mixes plain strings and {id, text} objects; use one form for the whole list")
    return tuple(passages)


def grade_too_large(grade: float) -> str:
    """The message for a relevance grade beyond MAX_GRADE, in a test set or a qrels file alike."""
    return f"grade {grade:g} is beyond ±{MAX_GRADE:,} (relevance grades are small: 0-3, 0-4)"


def _relevance(value: Any, fail) -> dict[str, float] | None:
    """`reference_doc_ids` as {doc_id: grade}: a list means grade 1 for each id; a dict gives graded relevance."""
    name = "reference_doc_ids"
    if value is None:
        return None
    if isinstance(value, list):
        grades: dict[str, float] = {}
        for i, doc_id in enumerate(value):
            grades[identifier(doc_id, lambda m: fail(f"{name}[{i}]", m))] = 1.0
        return grades
    if isinstance(value, dict):
        grades = {}
        for doc_id, grade in value.items():
            shown = str(doc_id) if not isinstance(doc_id, int) or doc_id.bit_length() < 200 else "<long integer>"
            where = f"{name}.{shown if len(shown) <= 60 else shown[:57] + '...'}"
            if not finite_number(grade):
                raise fail(where, f"grade must be a finite number, got {grade!r}")
            if abs(grade) > MAX_GRADE:
                raise fail(where, grade_too_large(grade))
            grades[identifier(doc_id, lambda m: fail(where, m))] = float(grade)
        return grades
    raise fail(name, f"must be a list of ids or an object {{doc_id: grade}}, got {_type_name(value)}")


def identifier(value: Any, fail: Callable[[str], Exception]) -> str:
    """Ids may be strings or integers (both are common); either way they compare as strings. Every reader
    of ids (records, TREC files, labels, scored runs, corpora) checks them here."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise fail(f"must be a string or an integer, got {_type_name(value)}")
    if isinstance(value, int) and value.bit_length() > 4 * MAX_ID_LENGTH:  # str() of a huge int is refused
        raise fail(f"is longer than {MAX_ID_LENGTH} characters")
    text = str(value)
    if not text.strip():
        raise fail("must not be empty")
    if len(text) > MAX_ID_LENGTH:
        raise fail(f"is {len(text)} characters long; ids may have at most {MAX_ID_LENGTH} (is a text in the id field?)")
    return text


def _type_name(value: Any) -> str:
    """JSON's names for types, which is what the user wrote."""
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list", dict: "an object"}.get(
        type(value), type(value).__name__
    )
