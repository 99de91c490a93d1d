"""Property-based fuzzing of every reader of user files: JSONL and CSV test sets, TREC runs and qrels,
labels, scored runs and corpora. Arbitrary bytes, and arbitrary JSON-ish text (NaN, 1e999, integers of
thousands of digits, lone surrogates, repeated keys, nesting thousands deep, broken quoting), may only
end in success or in one InputError whose message is one line. A test set that passes validation must
also be writable: every accepted record is dumped as the result writer dumps it.

Budget: the `ci` profile (default) runs ~150 examples per test, about half a minute in all; the `long`
profile explores far more: `LOCALEVAL_FUZZ=long python -m pytest tests/test_fuzz.py` (`make fuzz`).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from localeval.data.labels import read_labels
from localeval.data.loading import read_samples
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
    try:
        return read()
    except InputError as exc:
        message = str(exc)
        assert message and "\n" not in message and "\r" not in message, message
        return None


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
    samples = only_input_errors(lambda: list(read_samples(path)))
    for sample in samples or []:  # accepted means writable, exactly as the result writer writes it
        dumps({"id": sample.id, **sample.record, "metrics": {}}).encode("utf-8")


@given(extra=st.lists(st.one_of(hostile, values), min_size=1, max_size=3), ascii_only=st.booleans())
def test_pass_through_fields_are_refused_or_written(folder: Path, extra: list[Any], ascii_only: bool) -> None:
    """Valid records whose only oddity is a field copied to the output: the class of input that used to pass
    validation and then crash the writer (NaN, lone surrogates, 5,000-digit integers)."""
    lines = [encode(Obj((("id", f"q{i}"), ("question", "What?"), ("extra", value))), ascii_only)
             for i, value in enumerate(extra)]
    path = written(folder / "extra.jsonl", to_bytes(lines))
    samples = only_input_errors(lambda: list(read_samples(path)))
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
    samples = only_input_errors(lambda: list(read_samples(path)))
    for sample in samples or []:
        dumps({"id": sample.id, **sample.record}).encode("utf-8")


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
