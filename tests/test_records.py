"""The data contract: what a valid record is, and the one-line errors for everything else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localeval.errors import InputError
from localeval.data.loading import read_samples, validate_file
from localeval.data.records import Context, sample_from_record

from .conftest import write_jsonl

GOOD = {"id": "a", "question": "q?", "answer": "x", "contexts": [{"id": "d1", "text": "t1"}, {"id": 2, "text": "t2"}]}


def test_full_record_is_parsed_with_ids_as_strings() -> None:
    record = dict(GOOD, reference="r", reference_doc_ids={"d1": 2, "d9": 0}, reference_docs=["doc text"])
    sample = sample_from_record(record, "f.jsonl", 3)
    assert sample.contexts == (Context("t1", "d1"), Context("t2", "2"))
    assert sample.context_ids == ("d1", "2")
    assert sample.relevance == {"d1": 2.0, "d9": 0.0}
    assert sample.reference_docs == (Context("doc text"),)
    assert sample.line == 3


def test_plain_string_contexts_have_no_ids() -> None:
    sample = sample_from_record({"id": 1, "question": "q", "contexts": ["a", "b"]})
    assert sample.id == "1"
    assert sample.context_ids is None
    assert sample.missing("context_ids") == "contexts have no ids"
    assert sample.missing("contexts") is None
    assert sample.missing("reference") == "missing field 'reference'"
    assert sample.missing("reference_doc_ids") == "missing field 'reference_doc_ids'"


def test_list_of_reference_ids_means_grade_one() -> None:
    sample = sample_from_record({"id": 1, "question": "q", "reference_doc_ids": ["x", 7]})
    assert sample.relevance == {"x": 1.0, "7": 1.0}


@pytest.mark.parametrize(
    "record, field, fragment",
    [
        ([1, 2], None, "expected a JSON object, got a list"),
        ({"question": "q"}, "id", "is required"),
        ({"id": 1.5, "question": "q"}, "id", "must be a string or an integer, got a number"),
        ({"id": True, "question": "q"}, "id", "got a boolean"),
        ({"id": " ", "question": "q"}, "id", "must not be empty"),
        ({"id": 1, "question": "  "}, "question", "must be a non-empty string (empty)"),
        ({"id": 1}, "question", "must be a non-empty string (missing)"),
        ({"id": 1, "question": ["q"]}, "question", "(got a list)"),
        ({"id": 1, "question": "q", "answer": 3}, "answer", "must be a string, got a number"),
        ({"id": 1, "question": "q", "reference": ""}, "reference", "non-empty string when present"),
        ({"id": 1, "question": "q", "contexts": "one"}, "contexts", "got a string"),
        ({"id": 1, "question": "q", "contexts": ["a", {"id": 1, "text": "b"}]}, "contexts", "mixes plain strings"),
        ({"id": 1, "question": "q", "contexts": [{"text": "b"}]}, "contexts[0].id", "is required"),
        ({"id": 1, "question": "q", "contexts": [{"id": 1, "text": None}]}, "contexts[0].text", "must be a string, got null"),
        ({"id": 1, "question": "q", "contexts": [{"id": 1}]}, "contexts[0].text", "got nothing"),
        ({"id": 1, "question": "q", "contexts": [3]}, "contexts[0]", "got a number"),
        ({"id": 1, "question": "q", "reference_doc_ids": "d1"}, "reference_doc_ids", "got a string"),
        ({"id": 1, "question": "q", "reference_doc_ids": [["d"]]}, "reference_doc_ids[0]", "got a list"),
        ({"id": 1, "question": "q", "reference_doc_ids": {"d": "high"}}, "reference_doc_ids.d", "finite number"),
        ({"id": 1, "question": "q", "reference_doc_ids": {"d": True}}, "reference_doc_ids.d", "finite number"),
        ({"id": 1, "question": "q", "reference_docs": [None]}, "reference_docs[0]", "got null"),
        ({"id": 1, "question": "q", "metrics": {}}, "metrics", "reserved"),
    ],
)
def test_bad_records_name_the_field(record: object, field: str | None, fragment: str) -> None:
    with pytest.raises(InputError) as caught:
        sample_from_record(record, "data.jsonl", 7)
    error = caught.value
    assert (error.source, error.line, error.field) == ("data.jsonl", 7, field)
    assert fragment in str(error)
    assert str(error).startswith("data.jsonl:7: ")
    assert "\n" not in str(error)


def test_bad_json_names_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"id": 1, "question": "q"}, "", '{"id": 2, "question": "q"'])
    with pytest.raises(InputError, match=r"d\.jsonl:3: invalid JSON: Expecting ',' delimiter at column 26"):
        validate_file(path)


def test_non_utf8_names_line_and_byte(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"id": 1, "question": "q"}\n{"id": 2, "question": "caf\xe9"}\n')
    with pytest.raises(InputError, match=r"d\.jsonl:2: is not valid UTF-8 \(byte 0xe9 at column 27\)"):
        validate_file(path)


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": 1, "question": "q"}\n')
    assert validate_file(path) == 1
    # a bad byte after the BOM is named as in the same file without it (the BOM's bytes once shifted it)
    path.write_bytes(b'\xef\xbb\xbf{"id": "caf\xe9", "question": "q"}\n')
    with pytest.raises(InputError, match=r"d\.jsonl:1: is not valid UTF-8 \(byte 0xe9 at column 12\)"):
        validate_file(path)


def test_blank_lines_before_a_csv_header_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("\n \nid,question\n1,q1\n", encoding="utf-8")
    assert [s.question for s in read_samples(path)] == ["q1"]
    path.write_text("\nid,id\n1,q1\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"d\.csv:2: .*id"):
        validate_file(path)


def test_duplicate_id_names_both_lines(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"id": "a", "question": "q"}, {"id": "b", "question": "q"}, {"id": "a", "question": "q"}])
    with pytest.raises(InputError, match=r"d\.jsonl:3: field 'id': duplicate id 'a' \(first used on line 1\)"):
        validate_file(path)


def test_empty_file_is_an_error(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [""])
    with pytest.raises(InputError, match="contains no records"):
        validate_file(path)


def test_missing_file_and_unknown_extension(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        validate_file(tmp_path / "nope.jsonl")
    other = tmp_path / "data.txt"
    other.write_text("x")
    with pytest.raises(InputError, match="unknown format"):
        validate_file(other)


def test_reading_is_lazy(tmp_path: Path) -> None:
    """A record is handed out before later lines are read: the file is streamed, not loaded."""
    path = write_jsonl(tmp_path / "d.jsonl", [{"id": 1, "question": "q"}, "not json"])
    samples = read_samples(path)
    assert next(samples).id == "1"
    with pytest.raises(InputError, match=":2: invalid JSON"):
        next(samples)


def test_csv_with_column_mapping_and_json_cells(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    contexts = json.dumps([{"id": "d1", "text": "multi\nline, quoted"}])
    path.write_text(
        "qid,query,answer,contexts,reference_doc_ids,extra\n"
        f'1,What?,"It.\nTwo lines.","{contexts.replace(chr(34), chr(34) * 2)}","[""d1""]",keep me\n'
        "2,Why?,,,,\n",
        encoding="utf-8",
    )
    samples = list(read_samples(path, columns={"id": "qid", "question": "query"}))
    assert [s.id for s in samples] == ["1", "2"]
    assert samples[0].contexts == (Context("multi\nline, quoted", "d1"),)
    assert samples[0].relevance == {"d1": 1.0}
    assert samples[0].record["extra"] == "keep me"
    assert "query" not in samples[0].record
    assert samples[1].answer is None and samples[1].contexts is None
    assert samples[0].answer == "It.\nTwo lines."
    assert samples[1].line == 4  # the quoted answer cell spans lines 2-3


def test_csv_errors_name_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("id,question,contexts\n1,q,[oops\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"d\.csv:2: field 'contexts': cell must hold JSON"):
        validate_file(path)
    path.write_text("id,question\n1,q,extra\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"d\.csv:2: has 3 cells but the header has 2"):
        validate_file(path)
    path.write_text("id,question\n1,q\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"d\.csv:2: --column question=query: no column 'query' in the first record"):
        validate_file(path, columns={"question": "query"})
    with pytest.raises(InputError, match=r"'questions' is not a field"):
        validate_file(path, columns={"questions": "q"})
