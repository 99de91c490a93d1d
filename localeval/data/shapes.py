"""Test sets in the shapes other tools write, read into localeval's field names.

People arrive with a test set written for Ragas (`user_input`, `retrieved_contexts`, `response`,
`reference`; before Ragas 0.2, `question`, `answer`, `contexts` and `ground_truth(s)`) or DeepEval (`input`, `actual_output`, `expected_output`, `retrieval_context`), and often with no
`id`. A file's shape is recognised from its first record's field names and every later record must have the
same one: a file that mixes shapes, or a record holding fields of two shapes, is an error naming the line,
because guessing would score the wrong field. Fields a shape does not name pass through as they are.

When no record has an `id`, a record's id is its row number (1-based, blank lines not counted); a file where
some records have one and others not is an error. Row-number ids change when the file is reordered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from ..errors import InputError

#: localeval's own fields (records.py) besides `id`, which every shape calls `id`; every shape maps onto these.
FIELDS = ("question", "answer", "contexts", "reference", "reference_doc_ids", "reference_docs")


@dataclass(frozen=True)
class Shape:
    """A tool's field names for localeval's fields."""

    name: str
    title: str  # how the run's first line names it: "read as a Ragas dataset"
    fields: Mapping[str, str]  # their field -> localeval's
    #: Their field of ids that go with a list field of texts (Ragas' retrieved_context_ids): (ids, texts).
    ids_of: tuple[tuple[str, str], ...] = ()
    #: The shape whose names its records use besides its own (Ragas 0.1 is localeval's names and ground_truth).
    extends: str = ""


SHAPES = (
    Shape("localeval", "localeval's format", {name: name for name in FIELDS}),
    Shape("ragas", "a Ragas dataset", {"user_input": "question", "response": "answer",
                                       "retrieved_contexts": "contexts", "reference": "reference",
                                       "reference_contexts": "reference_docs",
                                       "reference_context_ids": "reference_doc_ids"},
          ids_of=(("retrieved_context_ids", "retrieved_contexts"),)),
    Shape("deepeval", "DeepEval test cases", {"input": "question", "actual_output": "answer",
                                              "retrieval_context": "contexts", "expected_output": "reference",
                                              "context": "reference_docs"}),
    # Ragas before 0.2: localeval's own names but for the reference, a string or a list of one.
    Shape("ragas-v0.1", "a Ragas 0.1 dataset", {"ground_truth": "reference", "ground_truths": "reference"},
          extends="localeval"),
)
#: Field names that hold a list in some shape: a CSV cell of one of them holds JSON.
LIST_FIELDS = frozenset({"contexts", "reference_doc_ids", "reference_docs", "retrieved_contexts",
                         "reference_contexts", "reference_context_ids", "retrieved_context_ids",
                         "retrieval_context", "context", "ground_truths"})


#: Shape name -> the field names that mark a record as of that shape: those no other shape uses, and its
#: ids fields. Worked out once here, not for every record.
MARKS = {shape.name: frozenset({name for name in shape.fields
                                if not any(name in other.fields for other in SHAPES if other is not shape)}
                               | {ids for ids, _ in shape.ids_of})
         for shape in SHAPES}


def shapes_of(record: Mapping[str, Any]) -> list[Shape]:
    """The shapes whose own field names the record uses (a shape another one extends is part of it)."""
    found = [shape for shape in SHAPES if not MARKS[shape.name].isdisjoint(record)]
    extended = {shape.extends for shape in found}
    return [shape for shape in found if shape.name not in extended]


def _compatible(first: Shape, later: Shape) -> bool:
    return later is first or later.extends == first.name or first.extends == later.name


class RecordReader:
    """Reads the records of one file, in order, into localeval's field names (see the module docstring)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.shape: Shape | None = None
        self.numbered: bool | None = None  # True when ids are row numbers
        self.first_line: int | None = None
        self.rows = 0
        self._keys: frozenset[str] = frozenset()

    def __call__(self, record: Any, line: int) -> Any:
        if not isinstance(record, dict):  # records.py says what was expected
            return record
        self.rows += 1
        found = shapes_of(record)
        if len(found) > 1:
            fields = "; ".join(f"{', '.join(sorted(MARKS[s.name] & set(record)))} ({s.title})" for s in found)
            raise InputError(self.source, line, None, f"holds fields of two shapes at once: {fields}; "
                                                      "use one tool's field names")
        shape = found[0] if found else SHAPES[0]
        has_id = record.get("id") is not None  # a null id (an empty CSV cell, a Parquet null) is no id
        if self.shape is None:
            self.shape, self.first_line = shape, line
            self.numbered = not has_id
        elif _compatible(self.shape, shape):
            shape = self.shape = shape if shape.extends == self.shape.name else self.shape  # the fuller one
        elif shape is not self.shape:
            raise InputError(self.source, line, None, f"is a record of {shape.title} but line {self.first_line} is "
                                                      f"of {self.shape.title}; a file holds one shape")
        if self.numbered and has_id:
            raise InputError(self.source, line, "id", f"is given here but not on line {self.first_line}; give every "
                                                      "record an id, or none (then ids are row numbers)")
        if not self.numbered and not has_id:
            raise InputError(self.source, line, "id", "is required: the first record has one, so every record "
                                                      "needs one (with none at all, ids are row numbers)")
        self._keys = frozenset(record)  # their_field names the key this record used, where two fill one field
        out = _renamed(record, shape, self.source, line)
        if self.numbered:
            out = {"id": str(self.rows), **{k: v for k, v in out.items() if k != "id"}}
        return out

    def their_field(self, field: str | None) -> str | None:
        """A localeval field name in an error message as the file names it (`question` → `user_input`)."""
        if field is None or self.shape is None or self.shape is SHAPES[0]:
            return field
        for ids_field, texts_field in self.shape.ids_of:  # contexts[1].id came from retrieved_context_ids[1]
            paired = re.fullmatch(re.escape(self.shape.fields[texts_field]) + r"(\[\d+\])\.(id|text)", field)
            if paired and ids_field in self._keys:
                return (ids_field if paired.group(2) == "id" else texts_field) + paired.group(1)
        cut = min((i for i in (field.find("["), field.find(".")) if i >= 0), default=len(field))
        theirs: dict[str, str] = {}
        for their, ours in self.shape.fields.items():  # of two names for one field, the one this record used
            if ours not in theirs or their in self._keys:
                theirs[ours] = their
        return theirs.get(field[:cut], field[:cut]) + field[cut:]

    def describe(self) -> str:
        """The run's first line about its input: which shape, which names became which; empty for a file in
        localeval's own format with ids, where nothing was read differently from how it is written."""
        shape = self.shape or SHAPES[0]
        if shape is SHAPES[0] and not self.numbered:
            return ""
        renamed = ", ".join(f"{theirs} → {ours}" for theirs, ours in shape.fields.items() if theirs != ours)
        ids = "; no record has an id: ids are row numbers (1-based)" if self.numbered else ""
        return f"read as {shape.title}" + (f": {renamed}" if renamed else "") + ids


def _renamed(record: dict[str, Any], shape: Shape, source: str, line: int) -> dict[str, Any]:
    if shape is SHAPES[0]:
        return record
    into: dict[str, str] = {}  # localeval's field -> the record's key that fills it
    for key in record:
        ours = shape.fields.get(key, key)
        if ours in into and key not in {ids for ids, _ in shape.ids_of}:
            # expected_output beside reference, ground_truth beside ground_truths: one would silently win
            raise InputError(source, line, key, f"and '{into[ours]}' both give the {ours}; keep one")
        into[ours] = key
    out = {shape.fields.get(key, key): value for key, value in record.items()
           if key not in {ids for ids, _ in shape.ids_of}}
    if record.get("ground_truths") is not None and shape.name == "ragas-v0.1":  # null: no reference, as ever
        truths = record["ground_truths"]
        if not (isinstance(truths, list) and len(truths) == 1):
            raise InputError(source, line, "ground_truths", "must be a list of one answer: localeval scores against "
                             "one reference (give it as ground_truth, or keep one)")
        out["reference"] = truths[0]
    for ids_field, texts_field in shape.ids_of:
        ids, texts = record.get(ids_field), record.get(texts_field)
        if ids is None:
            continue
        if not isinstance(ids, list) or not isinstance(texts, list) or len(ids) != len(texts):
            raise InputError(source, line, ids_field, f"must be a list as long as '{texts_field}' (one id per text)")
        out[shape.fields[texts_field]] = [{"id": i, "text": t} for i, t in zip(ids, texts)]
    return out
