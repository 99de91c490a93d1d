"""Property-based fuzzing of every reader of user files: test sets in each container (JSONL, a JSON array,
CSV, Parquet) and each record shape (localeval's, Ragas', DeepEval's), TREC runs and qrels, labels, scored
runs and corpora. Arbitrary bytes, and arbitrary JSON-ish text (NaN, 1e999, integers of thousands of
digits, lone surrogates, repeated keys, nesting thousands deep, broken quoting), or Parquet columns of any
Arrow type, may only end in success or in one InputError whose message is one line. A test set that
passes validation must also be writable: every accepted record is dumped as the result writer dumps it.

Budget: the `ci` profile (default) runs ~150 examples per test, and a fifth of that for the tests that
write a JSON array or a Parquet file per example (`FEW`), a few seconds in all; the `long` profile
explores far more: `LOCALEVAL_FUZZ=long python -m pytest tests/test_fuzz.py` (`make fuzz`).
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from localeval.data.labels import read_labels
from localeval.data.loading import read_samples, validate_file
from localeval.data.trec import read_qrels, read_run, samples_from_trec, trec_ranking
from localeval.errors import InputError
from localeval.files import dumps
from localeval.results.runs import load_run
from localeval.testset.corpus import read_corpus

settings.register_profile("ci", max_examples=150, deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("long", max_examples=5000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("LOCALEVAL_FUZZ", "ci"))
#: Examples for the tests that write a JSON array or a Parquet file each time: a fifth of the profile's.
FEW = settings(max_examples=max(10, settings().max_examples // 5))


# ---- JSON-ish text, written by hand so that it can hold what json.dumps refuses ----------------------

@dataclass(frozen=True)
class Raw:
    """JSON text inserted as it is (a 5,000-digit integer, NaN, nesting 3,000 deep)."""

    text: str


@dataclass(frozen=True)
class Obj:
    """An object as a list of pairs, so that a key can repeat."""

    pairs: tuple[tuple[str, Any], ...]


surrogate = st.integers(0xD800, 0xDFFF).map(chr)
text = st.lists(st.one_of(st.characters(), st.characters(), surrogate, st.sampled_from('"\\\n\r\t,{}[]\x00\ufeff')), max_size=12).map("".join)
depth = st.one_of(st.integers(1, 3000), st.sampled_from([100, 101, 999, 1001, 20000]))
# What json.dumps refuses to write, or Python's json cannot read back: drawn often, on purpose.
hostile = st.one_of(
    st.sampled_from([Raw("NaN"), Raw("Infinity"), Raw("-Infinity"), Raw("1e999"), Raw("-1E400"), "\ud800", "a\udfff",
                     "\ud83d\ude00"]),
    st.sampled_from([99, 100, 101, 4300, 4301, 5000]).map(lambda n: Raw("9" * n)),
    st.integers(90, 6000).map(lambda n: Raw("9" * n)),  # beyond Python's 4300-digit int-string limit, and below
    st.one_of(depth.map(lambda n: Raw("[" * n + "]" * n)), depth.map(lambda n: Raw('{"a":' * n + "1" + "}" * n))),
)
ordinary = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), text)
leaves = st.one_of(ordinary, ordinary, ordinary, hostile)  # nested values: mostly ordinary leaves
values = st.recursive(leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.lists(st.tuples(st.one_of(text, st.sampled_from(["id", "text", "question"])), inner), max_size=4)
    .map(lambda pairs: Obj(tuple(pairs)))), max_leaves=12)
FIELDS = ["id", "question", "answer", "contexts", "reference", "reference_doc_ids", "reference_docs", "extra",
          "metrics", "mrr", "faithfulness", "text", "_id", "title"]
ids = st.one_of(st.sampled_from(["q0", "q1", "q2", 0, 1, "d1"]), text, hostile, st.integers())


@st.composite
def records(draw: Callable[..., Any]) -> Any:
    """Mostly a valid record with one field drawn from anywhere (so the hostile value is what decides),
    sometimes a bad id or question, sometimes any value at all."""
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(values)
    sample_id = draw(ids) if kind == 1 else draw(st.sampled_from(["q0", "q1", 7, "d1"]))
    question = draw(text) if kind == 2 else "What?"
    pairs = [("id", sample_id), ("question", question)]
    for _ in range(draw(st.integers(1, 2))):
        name = draw(st.one_of(st.sampled_from(FIELDS), st.just("extra")))  # "extra" is copied to the output as is
        pairs.append((name, draw(st.one_of(values, hostile, st.just([{"id": "d1", "text": "t"}])))))
    return Obj(tuple(pairs))


def encode(value: Any, ascii_only: bool) -> str:
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, Obj):
        return "{" + ",".join(f"{encode(k, ascii_only)}:{encode(v, ascii_only)}" for k, v in value.pairs) + "}"
    if isinstance(value, list):
        return "[" + ",".join(encode(v, ascii_only) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=ascii_only)  # a raw surrogate stays raw without ensure_ascii
    return json.dumps(value)  # NaN / Infinity as Python writes them


def to_bytes(lines: list[str]) -> bytes:
    """UTF-8, but surrogates pass through as the invalid bytes an encoder bug would write."""
    return "\n".join(lines).encode("utf-8", "surrogatepass")


jsonl_files = st.one_of(
    st.binary(max_size=400),
    st.tuples(st.lists(records(), min_size=0, max_size=3), st.booleans())
    .map(lambda t: to_bytes([encode(r, t[1]) for r in t[0]])),
)


# ---- the property -----------------------------------------------------------------------------------

def only_input_errors(read: Callable[[], Any]) -> Any:
    """Run a reader: success, or an InputError with a one-line message; anything else fails the test."""
    return outcome(read)[0]


def outcome(read: Callable[[], Any]) -> tuple[Any, InputError | None]:
    """(what the reader returned, None) or (None, the InputError it raised, checked to be one line)."""
    try:
        return read(), None
    except InputError as exc:
        message = str(exc)
        assert message and "\n" not in message and "\r" not in message, message
        return None, exc


def read_test_set(path: Path, fmt: str | None = None) -> list[Any]:
    """A test set as the CLI reads it: `validate_file`'s full pass first (ids checked for repeats, an empty
    file refused), then the samples."""
    validate_file(path, fmt)
    return list(read_samples(path, fmt))


def writable(samples: Any) -> None:
    """Accepted means writable, exactly as the result writer writes it; ids are unique."""
    for sample in samples or []:
        dumps({"id": sample.id, **sample.record, "metrics": {}}).encode("utf-8")
    assert len({sample.id for sample in samples or []}) == len(samples or [])


def written(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.fixture(scope="module")
def folder() -> Any:
    with tempfile.TemporaryDirectory(prefix="localeval-fuzz-") as name:
        yield Path(name)


@given(data=jsonl_files)
def test_jsonl_test_sets(folder: Path, data: bytes) -> None:
    path = written(folder / "input.jsonl", data)
    samples = only_input_errors(lambda: read_test_set(path))
    for sample in samples or []:  # accepted means writable, exactly as the result writer writes it
        dumps({"id": sample.id, **sample.record, "metrics": {}}).encode("utf-8")


@given(extra=st.lists(st.one_of(hostile, values), min_size=1, max_size=3), ascii_only=st.booleans())
def test_pass_through_fields_are_refused_or_written(folder: Path, extra: list[Any], ascii_only: bool) -> None:
    """Valid records whose only oddity is a field copied to the output: the class of input that used to pass
    validation and then crash the writer (NaN, lone surrogates, 5,000-digit integers)."""
    lines = [encode(Obj((("id", f"q{i}"), ("question", "What?"), ("extra", value))), ascii_only)
             for i, value in enumerate(extra)]
    path = written(folder / "extra.jsonl", to_bytes(lines))
    samples = only_input_errors(lambda: read_test_set(path))
    for sample in samples or []:
        dumps({"id": sample.id, **sample.record, "metrics": {}}).encode("utf-8")


cells = st.one_of(text, st.sampled_from(['"', '""', '"a"b', "a,b", "\n", "[", '[{"id": "d1", "text": "t"}]',
                                         '["d1"]', '{"d1": NaN}', "[" * 200 + "]" * 200, '{"d1": 1, "d1": 2}']),
                  values.map(lambda v: encode(v, True)))
HEADERS = ["id", "question", "answer", "contexts", "reference", "reference_doc_ids", "reference_docs", "extra", ""]


@st.composite
def csv_files(draw: Callable[..., Any]) -> bytes:
    if draw(st.integers(0, 3)) == 0:
        return draw(st.binary(max_size=400))
    header = draw(st.lists(st.sampled_from(HEADERS), min_size=1, max_size=5))
    lines = [",".join(header)]
    for _ in range(draw(st.integers(0, 4))):
        row = draw(st.lists(cells, min_size=len(header) - 1, max_size=len(header) + 1))
        quoted = draw(st.booleans())  # properly quoted cells, or raw text with stray quotes
        lines.append(",".join('"' + c.replace('"', '""') + '"' if quoted else c for c in row))
    return to_bytes(lines)


@given(data=csv_files(), tsv=st.booleans())
def test_csv_test_sets(folder: Path, data: bytes, tsv: bool) -> None:
    path = written(folder / ("input.tsv" if tsv else "input.csv"), data)
    samples = only_input_errors(lambda: read_test_set(path))
    for sample in samples or []:
        dumps({"id": sample.id, **sample.record}).encode("utf-8")


# ---- JSON arrays, and the record shapes of other tools ------------------------------------------------

#: Each shape's names for localeval's fields (as localeval/data/shapes.py is documented to read them).
SHAPE_NAMES = {
    "localeval": {name: name for name in ("question", "answer", "contexts", "reference", "reference_docs",
                                          "reference_doc_ids")},
    "ragas": {"question": "user_input", "answer": "response", "contexts": "retrieved_contexts", "reference": "reference",
              "reference_docs": "reference_contexts", "reference_doc_ids": "reference_context_ids"},
    "deepeval": {"question": "input", "answer": "actual_output", "contexts": "retrieval_context",
                 "reference": "expected_output", "reference_docs": "context"},
}
RAGAS = [*SHAPE_NAMES["ragas"].values(), "retrieved_context_ids"]
DEEPEVAL = list(SHAPE_NAMES["deepeval"].values())
#: localeval's names for the fields a shape renames: an error in a Ragas or DeepEval file must not use them.
OURS = {"question", "answer", "contexts", "reference_docs", "reference_doc_ids"}
#: What a field of each kind mostly holds (text that is valid, or hostile now and then), and sometimes not.
prose = st.integers(0, 9).flatmap(lambda n: text if n == 0 else st.text(max_size=8))  # hostile one time in ten
FITTING = {"question": st.one_of(st.just("What?"), prose),
           "answer": st.one_of(st.just("It is."), prose), "reference": st.one_of(st.just("It is."), prose),
           "contexts": st.lists(prose, max_size=3)
           | st.lists(st.builds(lambda i, t: {"id": i, "text": t}, st.sampled_from(["d1", "d2", "d3"]), prose), max_size=3),
           "reference_docs": st.lists(prose, max_size=2),
           "reference_doc_ids": st.lists(st.sampled_from(["d1", "d2", "d3"]), max_size=3)}
plausible = st.one_of(st.just("What?"), text, st.lists(st.one_of(text, st.sampled_from(["d1", "d2"])), max_size=3),
                      st.just([{"id": "d1", "text": "t"}]), st.lists(st.lists(text, max_size=2), min_size=1, max_size=2))


@st.composite
def fitting_records(draw: Callable[..., Any], shape: str, row: int, with_id: bool) -> Obj:
    """A record of one shape that may well be valid: a question, a few fields holding their kind of value,
    and the id `q{row}` or none. Ragas' retrieved_context_ids sometimes go with its retrieved_contexts."""
    names = SHAPE_NAMES[shape]
    pairs = [("id", f"q{row}")] if with_id else []
    pairs.append((names["question"], draw(FITTING["question"])))
    for field in draw(st.lists(st.sampled_from(sorted(set(names) - {"question"})), unique=True, max_size=3)):
        pairs.append((names[field], draw(FITTING[field])))
    contexts = dict(pairs).get("retrieved_contexts")
    if shape == "ragas" and isinstance(contexts, list) and draw(st.booleans()):
        pairs.append(("retrieved_context_ids", [f"d{i}" for i in range(len(contexts) + draw(st.sampled_from([0, 0, 1])))]))
    return Obj(tuple(pairs))


@st.composite
def shaped_records(draw: Callable[..., Any], names: list[str] | None = None) -> Obj:
    """A record in Ragas' or DeepEval's field names (`names`, else either), with or without an id; values are
    mostly of the right kind and sometimes anything at all."""
    names = names or draw(st.sampled_from([RAGAS, DEEPEVAL]))
    pairs = [(names[0], draw(st.one_of(st.just("What?"), st.just("What?"), text, values)))]
    if draw(st.booleans()):
        pairs.insert(0, ("id", draw(st.one_of(st.sampled_from(["q0", "q1", 0, 1]), ids))))
    for _ in range(draw(st.integers(0, 3))):
        pairs.append((draw(st.sampled_from(names)), draw(st.one_of(plausible, plausible, values, hostile))))
    return Obj(tuple(pairs))


@st.composite
def json_arrays(draw: Callable[..., Any]) -> tuple[bytes, list[int] | None]:
    """A JSON array file and the line each element starts on (None when the text is not a whole array):
    records of one shape that may well be valid, or anything; on one line or spread over several; sometimes
    cut short or followed by more text."""
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return b"[" + draw(st.binary(max_size=300)), None
    if kind <= 3:
        shape, with_id = draw(st.sampled_from(sorted(SHAPE_NAMES))), draw(st.booleans())
        elements = [draw(fitting_records(shape, row, with_id)) for row in range(draw(st.integers(1, 4)))]
    else:
        elements = draw(st.lists(st.one_of(records(), shaped_records(), values), max_size=4))
    ascii_only = draw(st.booleans())
    parts, lines, line = ["\ufeff[" if draw(st.booleans()) else "["], [], 1
    for i, element in enumerate(elements):
        gap = draw(st.sampled_from(["", " ", "\n", "\r\n", "\n\n\t"]))
        parts.append(("," if i else "") + gap)
        line += gap.count("\n")
        lines.append(line)
        parts.append(encode(element, ascii_only))
    whole_array = ["]", "\n]\n", "]\n\n"]
    end = draw(st.sampled_from(whole_array) | st.sampled_from(whole_array) | st.sampled_from(["\n", "],", "]]", "] []", "]\n[]"]))
    whole = "".join(parts) + end
    if draw(st.integers(0, 5)) == 0:
        return to_bytes([whole[: draw(st.integers(0, len(whole)))]]), None
    return to_bytes([whole]), lines if end in whole_array else None


@FEW
@given(data=json_arrays(), fmt=st.sampled_from([None, "json"]))
def test_json_array_test_sets(folder: Path, data: tuple[bytes, list[int] | None], fmt: str | None) -> None:
    text, lines = data
    path = written(folder / "input.json", text)
    samples, error = outcome(lambda: read_test_set(path, fmt))
    writable(samples)
    if lines is not None and samples:  # every element was a valid record: each names the line it starts on
        assert [sample.line for sample in samples] == lines
    if error is not None and error.line is not None:  # an error points into the file
        assert 1 <= error.line <= text.count(b"\n") + 1, error


@FEW
@given(values=st.lists(st.one_of(values, hostile), min_size=1, max_size=2), fmt=st.sampled_from([None, "json"]))
def test_json_files_of_any_value(folder: Path, values: list[Any], fmt: str | None) -> None:
    """A .json file holding any value (an object, a number, NaN, nesting thousands deep), or several."""
    path = written(folder / "value.json", to_bytes([encode(value, False) for value in values]))
    writable(only_input_errors(lambda: read_test_set(path, fmt)))


@FEW
@given(shape=st.sampled_from(["ragas", "deepeval"]), kind=st.sampled_from(["fitting", "any values", "mixed"]),
       with_id=st.booleans(), as_array=st.booleans(), data=st.data())
def test_ragas_and_deepeval_records(folder: Path, shape: str, kind: str, with_id: bool, as_array: bool,
                                    data: Any) -> None:
    """Records in another tool's field names: fitting ones, ones of any values, or mixed with other shapes and
    localeval's records; as JSON Lines or as a JSON array. Ids are row numbers when no record has one, and in
    a file of one shape an error names the field as the file does (`user_input`, not `question`)."""
    count = data.draw(st.integers(1, 3))
    if kind == "fitting":
        items = [data.draw(fitting_records(shape, row, with_id)) for row in range(count)]
    elif kind == "any values":
        items = data.draw(st.lists(shaped_records(RAGAS if shape == "ragas" else DEEPEVAL), min_size=count, max_size=count))
    else:
        items = data.draw(st.lists(st.one_of(shaped_records(), records()), min_size=count, max_size=count))
    lines = [encode(item, False) for item in items]
    path = written(folder / ("shaped.json" if as_array else "shaped.jsonl"),
                   to_bytes(["[" + ",\n".join(lines) + "]"] if as_array else lines))
    samples, error = outcome(lambda: read_test_set(path))
    writable(samples)
    if samples and kind == "fitting":
        assert [s.id for s in samples] == [f"q{row}" if with_id else str(row + 1) for row in range(count)]
    if kind != "mixed" and error is not None and error.field is not None and "invalid JSON" not in error.message:
        assert error.field.split(".")[0].split("[")[0] not in OURS, error  # (the decoder names the file's own keys)


# ---- Parquet ----------------------------------------------------------------------------------------

arrow_text = st.one_of(st.text(max_size=6), st.sampled_from(["", "What?", "d1", "NaN", "[1]", '{"a": 1}', "\x00"]))
floats = st.floats()  # NaN and infinities too: Parquet holds them, JSON cannot
contexts_type = pa.list_(pa.struct([("id", pa.string()), ("text", pa.string())]))
#: Arrow types a column may have, each with the values a cell of it may hold (or null).
ARROW = {
    "string": (pa.string(), arrow_text),
    "large_string": (pa.large_string(), arrow_text),
    "dictionary": (pa.dictionary(pa.int32(), pa.string()), arrow_text),
    "int64": (pa.int64(), st.integers(-2**63, 2**63 - 1)),
    "uint64": (pa.uint64(), st.integers(0, 2**64 - 1)),
    "float64": (pa.float64(), floats),
    "bool": (pa.bool_(), st.booleans()),
    "null": (pa.null(), st.none()),
    "binary": (pa.binary(), st.binary(max_size=4)),
    "timestamp": (pa.timestamp("ms"), st.integers(0, 2**40)),
    "date": (pa.date32(), st.integers(0, 30000)),
    "decimal": (pa.decimal128(5, 2), st.sampled_from([Decimal("1.50"), Decimal("-0.01")])),
    "list<string>": (pa.list_(pa.string()), st.lists(st.one_of(st.none(), arrow_text, arrow_text), max_size=3)),
    "list<int64>": (pa.list_(pa.int64()), st.lists(st.integers(-5, 5), max_size=3)),
    "list<float64>": (pa.list_(pa.float64()), st.lists(floats, max_size=3)),
    "list<list<string>>": (pa.list_(pa.list_(pa.string())), st.lists(st.lists(arrow_text, max_size=2), max_size=2)),
    "list<{id, text}>": (contexts_type, st.lists(st.fixed_dictionaries(
        {"id": st.one_of(st.none(), arrow_text), "text": st.one_of(st.none(), arrow_text)}), max_size=3)),
    "{text, score}": (pa.struct([("text", pa.string()), ("score", pa.float64())]),
                      st.fixed_dictionaries({"text": st.one_of(st.none(), arrow_text), "score": floats})),
    "map<string, float64>": (pa.map_(pa.string(), pa.float64()), st.lists(st.tuples(arrow_text, floats), max_size=3)),
    "map<int64, string>": (pa.map_(pa.int64(), pa.string()), st.lists(st.tuples(st.integers(0, 3), arrow_text), max_size=2)),
}
#: The Arrow types that suit each of localeval's fields.
SUITED = {"question": ["string"], "answer": ["string", "large_string", "dictionary"], "reference": ["string"],
          "contexts": ["list<string>", "list<{id, text}>"], "reference_docs": ["list<string>", "list<{id, text}>"],
          "reference_doc_ids": ["list<string>", "map<string, float64>"]}
COLUMNS = ["id", *FIELDS, *RAGAS, *DEEPEVAL]


@st.composite
def parquet_tables(draw: Callable[..., Any]) -> pa.Table:
    """Up to 4 rows. Half the time a test set that may well be valid: one shape's columns, each of a type that
    suits its field (its cells still arbitrary: a null item, a NaN grade), the question never null, ids `q{row}`
    or none; else columns named from every shape, of any Arrow type. (A name used twice: see
    test_parquet_column_named_twice.)"""
    rows = draw(st.integers(0, 4))

    def column(kind: str, nulls: bool = True) -> pa.Array:
        arrow_type, cell = ARROW[kind]
        cells = st.one_of(st.none(), cell, cell) if nulls else cell
        return pa.array(draw(st.lists(cells, min_size=rows, max_size=rows)), arrow_type)

    if draw(st.booleans()):
        names = SHAPE_NAMES[draw(st.sampled_from(sorted(SHAPE_NAMES)))]
        fields = ["question", *draw(st.lists(st.sampled_from(sorted(set(names) - {"question"})), unique=True, max_size=3))]
        columns = {names[f]: column(draw(st.sampled_from(SUITED[f])), nulls=f != "question") for f in fields}
        if draw(st.booleans()):
            columns = {"id": pa.array([f"q{row}" for row in range(rows)], pa.string()), **columns}
        if draw(st.booleans()):
            columns["extra"] = column(draw(st.sampled_from(sorted(ARROW))))
        return pa.table(columns)
    names = draw(st.lists(st.sampled_from(COLUMNS), max_size=5, unique=True))
    return pa.Table.from_arrays([column(draw(st.sampled_from(sorted(ARROW)))) for _ in names], names=names)


@FEW
@given(table=parquet_tables(), row_group_size=st.sampled_from([1, 3, None]))
def test_parquet_test_sets(folder: Path, table: pa.Table, row_group_size: int | None) -> None:
    path = folder / "input.parquet"
    pq.write_table(table, path, row_group_size=row_group_size)
    samples, error = outcome(lambda: read_test_set(path))
    writable(samples)
    if samples is not None:  # one sample per row, numbered as rows
        assert [sample.line for sample in samples] == list(range(1, table.num_rows + 1))
    elif error.line is not None:
        assert 1 <= error.line <= table.num_rows, error


def _parquet_bytes(table: pa.Table, compression: str) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression=compression)
    return buffer.getvalue()


DAMAGE_BASE = pa.table({"id": ["q1", "q2"], "question": ["What is X?", "Why?"],
                        "contexts": pa.array([[{"id": "d1", "text": "Some passage."}], None], contexts_type)})


@FEW
@given(compression=st.sampled_from(["none", "snappy"]), cut=st.booleans(), at=st.floats(0, 1, exclude_max=True),
       junk=st.binary(min_size=1, max_size=8))
def test_damaged_parquet(folder: Path, compression: str, cut: bool, at: float, junk: bytes) -> None:
    """A valid Parquet file cut short or with bytes overwritten: a readable error or, where the damage
    missed what is read, success."""
    data = _parquet_bytes(DAMAGE_BASE, compression)
    start = int(at * len(data))
    data = data[:start] if cut else data[:start] + junk + data[start + len(junk):]
    path = written(folder / "damaged.parquet", data)
    writable(only_input_errors(lambda: read_test_set(path)))


@pytest.mark.parametrize("original", [pytest.param(b"What is X?", id="value"), pytest.param(b"question", id="column-name")])
def test_parquet_text_not_utf8(folder: Path, original: bytes) -> None:
    """A writer that stored Latin-1 bytes as a string (Arrow checks UTF-8 only when text is decoded). Every copy
    of the text is replaced (the page's and its statistics', the footer's), so only the decoding can notice;
    without the Arrow schema in the metadata, the footer is where the column names are read from."""
    buffer = io.BytesIO()
    pq.write_table(DAMAGE_BASE, buffer, compression="none", store_schema=False)
    data = buffer.getvalue()
    assert original in data
    path = written(folder / "latin1.parquet", data.replace(original, original[:-2] + b"\xe9" + original[-1:]))
    writable(only_input_errors(lambda: read_test_set(path)))


@pytest.mark.parametrize("first", [pytest.param(pa.array(["What?"]), id="two-string-columns"),
                                   pytest.param(pa.array([[("d1", "x")]], pa.map_(pa.string(), pa.string())),
                                                id="map-then-string")])
def test_parquet_column_named_twice(folder: Path, first: pa.Array) -> None:
    path = folder / "twice.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array(["q1"]), first, pa.array(["Why?"])], names=["id", "question", "question"]),
                   path)
    samples, error = outcome(lambda: read_test_set(path))
    assert error is not None and "question" in str(error), samples


tokens = st.one_of(st.sampled_from(["q1", "q2", "Q0", "0", "d1", "d2", "1", "2", "0.5", "-3", "nan", "inf", "1e999",
                                    "2.0", "tag", "query-id", "corpus-id", "score"]),
                   st.integers(1, 2000).map(lambda n: "7" * n), text.map(lambda t: t.replace(" ", "") or "x"))
trec_lines = st.lists(st.lists(tokens, min_size=0, max_size=7).map(" ".join), max_size=6)


@given(run=st.one_of(st.binary(max_size=300), trec_lines.map(to_bytes)),
       qrels=st.one_of(st.binary(max_size=300), trec_lines.map(to_bytes)))
def test_trec_runs_and_qrels(folder: Path, run: bytes, qrels: bytes) -> None:
    run_path, qrels_path = written(folder / "run.txt", run), written(folder / "qrels.txt", qrels)
    parsed_run = only_input_errors(lambda: read_run(run_path))
    parsed_qrels = only_input_errors(lambda: read_qrels(qrels_path))
    if parsed_run is not None and parsed_qrels is not None:
        samples, counts = samples_from_trec(parsed_run, parsed_qrels)
        assert counts["run_only"] + len(samples) == len(parsed_run)
        for docs in parsed_run.values():
            assert sorted(trec_ranking(docs)) == sorted(docno for docno, _ in docs)


@given(data=jsonl_files)
def test_labels(folder: Path, data: bytes) -> None:
    path = written(folder / "labels.jsonl", data)
    labels = only_input_errors(lambda: read_labels(path, {"q0", "q1", "0"}, ("mrr", "faithfulness"), None, "in.jsonl"))
    if labels is not None:
        assert all(v in (0, 1) for column in labels.by_column.values() for v in column.values())


@given(data=jsonl_files)
def test_scored_runs(folder: Path, data: bytes) -> None:
    run = folder / "run"
    run.mkdir(exist_ok=True)
    written(run / "samples.jsonl", data)
    only_input_errors(lambda: load_run(run))


@given(data=jsonl_files)
def test_corpus_jsonl(folder: Path, data: bytes) -> None:
    path = written(folder / "corpus.jsonl", data)
    docs = only_input_errors(lambda: read_corpus(path))
    for doc in docs or []:
        dumps({"id": doc.id, "text": doc.text}).encode("utf-8")
