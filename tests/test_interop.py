"""Test sets as other tools write them: Ragas' and DeepEval's field names, JSON arrays, CSV and Parquet, no
ids; and the samples back out as a table pandas reads in one call."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from localeval.data.loading import input_notice, read_samples
from localeval.errors import InputError
from localeval.metrics import MetricOptions
from localeval.judge import JudgeOptions
from localeval.pipeline import score_file

TINY = "smollm2-135m-instruct-q4_1"
#: Three samples in localeval's own field names, without ids (each shape's files get row-number ids).
SAMPLES = [
    {"question": "Where is the Eiffel Tower?", "answer": "The Eiffel Tower is in Paris.",
     "contexts": ["The Eiffel Tower stands in Paris, France.", "Berlin is the capital of Germany."],
     "reference": "It is in Paris.", "reference_docs": ["The Eiffel Tower stands in Paris, France."]},
    {"question": "Who wrote Nineteen Eighty-Four?", "answer": "Aldous Huxley wrote it.",
     "contexts": ["George Orwell wrote Nineteen Eighty-Four in 1949."],
     "reference": "George Orwell.", "reference_docs": ["George Orwell wrote Nineteen Eighty-Four in 1949."]},
    {"question": "When was the telephone patented?", "answer": "In 1876, by Alexander Graham Bell.",
     "contexts": ["Bell was granted the telephone patent in 1876.", "Edison improved the phonograph."],
     "reference": "1876.", "reference_docs": ["Bell was granted the telephone patent in 1876."]},
]
RENAMES = {
    "localeval": {},
    "ragas": {"question": "user_input", "answer": "response", "contexts": "retrieved_contexts",
              "reference_docs": "reference_contexts"},
    "deepeval": {"question": "input", "answer": "actual_output", "contexts": "retrieval_context",
                 "reference": "expected_output", "reference_docs": "context"},
}
CLASSICAL = ["rouge_l", "exact_match", "token_f1", "answer_rouge_l"]


def in_shape(shape: str) -> list[dict[str, Any]]:
    return [{RENAMES[shape].get(k, k): v for k, v in sample.items()} for sample in SAMPLES]


def write(folder: Path, shape: str, container: str, records: list[dict[str, Any]] | None = None) -> Path:
    """The records (default: SAMPLES in `shape`) written as `container` would hold them."""
    records = in_shape(shape) if records is None else records
    path = folder / f"{shape}.{ {'jsonl': 'jsonl', 'json': 'json', 'csv': 'csv', 'parquet': 'parquet'}[container] }"
    if container == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    elif container == "json":
        path.write_text(json.dumps(records, indent=2), encoding="utf-8")  # one element over several lines
    elif container == "csv":
        names = list(dict.fromkeys(k for r in records for k in r))
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(names)
            for r in records:  # lists as pandas writes them (Python literals), as Ragas' to_csv leaves them
                writer.writerow([repr(r[n]) if isinstance(r.get(n), list) else r.get(n, "") for n in names])
    else:
        pq.write_table(pa.Table.from_pylist(records), path)
    return path


@pytest.mark.model(TINY)
def test_one_test_set_in_every_shape_and_container_scores_the_same(tmp_path: Path) -> None:
    options = MetricOptions(judge=JudgeOptions(judge=TINY, n_threads=1, cache=str(tmp_path / "judge.sqlite")))
    results: dict[tuple[str, str], dict[str, Any]] = {}
    for shape in RENAMES:
        for container in ("jsonl", "json", "csv", "parquet"):
            folder = tmp_path / f"{shape}-{container}"
            folder.mkdir()
            path = write(folder, shape, container)
            said: list[str] = []
            summary = score_file(path, folder / "out", [*CLASSICAL, "faithfulness"], options, notice=said.append)
            rows = [json.loads(line) for line in (folder / "out" / "samples.jsonl").read_text().splitlines()]
            results[shape, container] = {"means": {c: e["mean"] for c, e in summary["metrics"].items()},
                                         "ids": [r["id"] for r in rows], "values": [r["metrics"] for r in rows]}
            assert said and "ids are row numbers" in said[0]
    first = results["localeval", "jsonl"]
    assert first["ids"] == ["1", "2", "3"] and first["means"]["faithfulness"] is not None
    for key, result in results.items():
        assert result == first, key


def test_a_ragas_file_is_read_in_localevals_names_and_said_so(tmp_path: Path) -> None:
    records = [dict(r, retrieved_context_ids=[f"d{i}-{j}" for j in range(len(r["retrieved_contexts"]))],
                    reference_context_ids=[f"d{i}-0"]) for i, r in enumerate(in_shape("ragas"))]
    path = write(tmp_path, "ragas", "jsonl", records)
    samples = list(read_samples(path))
    assert [s.id for s in samples] == ["1", "2", "3"]
    assert samples[0].question == SAMPLES[0]["question"] and samples[0].reference == "It is in Paris."
    assert samples[0].context_ids == ("d0-0", "d0-1") and samples[0].relevance == {"d0-0": 1.0}
    assert input_notice(path) == (
        "read as a Ragas dataset: user_input → question, response → answer, retrieved_contexts → contexts, "
        "reference_contexts → reference_docs, reference_context_ids → reference_doc_ids; no record has an id: "
        "ids are row numbers (1-based)")
    summary = score_file(path, tmp_path / "out", "mrr,token_f1")
    assert summary["metrics"]["mrr"]["mean"] == 1.0


@pytest.mark.parametrize(("records", "message"), [
    ([{"user_input": "a?", "response": "b"}, {"input": "c?", "actual_output": "d"}],
     ":2: is a record of DeepEval test cases but line 1 is of a Ragas dataset; a file holds one shape"),
    ([{"question": "a?", "user_input": "a?"}],
     ":1: holds fields of two shapes at once: question (localeval's format); user_input (a Ragas dataset)"),
    ([{"question": "a?"}, {"id": "x", "question": "b?"}],
     ":2: field 'id': is given here but not on line 1; give every record an id, or none"),
    ([{"id": "x", "question": "a?"}, {"question": "b?"}],
     ":2: field 'id': is required: the first record has one, so every record needs one"),
    ([{"user_input": "a?", "retrieved_contexts": ["x"], "retrieved_context_ids": ["1", "2"]}],
     ":1: field 'retrieved_context_ids': must be a list as long as 'retrieved_contexts'"),
    ([{"user_input": "q", "retrieved_contexts": ["a", "b"], "retrieved_context_ids": ["d1", None]}],
     ":1: field 'retrieved_context_ids[1]':"),
    ([{"user_input": "q", "retrieved_contexts": ["a", 5], "retrieved_context_ids": ["d1", "d2"]}],
     ":1: field 'retrieved_contexts[1]':"),
    ([{"user_input": 5, "response": "b"}], ":1: field 'user_input': must be a non-empty string"),
    ([{"input": "a?", "retrieval_context": [["nested"]]}], ":1: field 'retrieval_context[0]':"),
    ([{"input": "a?", "actual_output": "b", "expected_output": "c", "reference": "d"}],
     ":1: field 'reference': and 'expected_output' both give the reference; keep one"),
    ([{"question": "a?", "ground_truth": "c", "ground_truths": ["d"]}],
     ":1: field 'ground_truths': and 'ground_truth' both give the reference; keep one"),
    ([{"question": "a?", "ground_truths": ["c", "d"]}],
     ":1: field 'ground_truths': must be a list of one answer: localeval scores against one reference"),
])
def test_a_file_that_cannot_be_read_one_way_is_one_line_naming_where(tmp_path: Path, records: list[Any],
                                                                   message: str) -> None:
    path = write(tmp_path, "mixed", "jsonl", records)
    with pytest.raises(InputError) as caught:
        list(read_samples(path))
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_ragas_0_1_file_gives_its_ground_truth_as_the_reference(tmp_path: Path) -> None:
    one = write(tmp_path, "v01", "jsonl", [{"question": "a?", "answer": "b", "contexts": ["x"], "ground_truth": "c"}])
    listed = write(tmp_path, "v01-list", "jsonl", [{"question": "a?", "answer": "b", "ground_truths": ["c"]}])
    assert [s.reference for s in read_samples(one)] == [s.reference for s in read_samples(listed)] == ["c"]
    assert input_notice(one).startswith("read as a Ragas 0.1 dataset: ground_truth → reference")
    none = write(tmp_path, "v01-null", "jsonl", [{"question": "a?", "answer": "b", "ground_truths": None}])
    assert [s.reference for s in read_samples(none)] == [None]  # null: no reference, as `reference: null` is
    empty = write(tmp_path, "v01-empty", "jsonl", [{"question": "a?", "answer": "b", "ground_truth": ""}])
    with pytest.raises(InputError, match=r":1: field 'ground_truth': "):  # the key the record used
        list(read_samples(empty))


def test_csv_list_cells_are_json_first_and_numpys_print_is_refused(tmp_path: Path) -> None:
    cell = json.dumps(["it's 😀 fine", "2 € / 3"])  # JSON escapes (\ud83d\ude00, \u20ac) beside an apostrophe
    path = tmp_path / "cells.csv"
    path.write_text(f'id,question,contexts\n1,q,"{cell.replace(chr(34), chr(34) * 2)}"\n'
                    "2,q,\"['pandas', 'list']\"\n", encoding="utf-8")
    assert [[c.text for c in s.contexts] for s in read_samples(path)] == [["it's 😀 fine", "2 € / 3"], ["pandas", "list"]]
    path.write_text("id,question,contexts\n1,q,\"['alpha' 'beta']\"\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"cells.csv:2: field 'contexts': cell holds texts without commas between "
                                         r"them \(numpy's way of printing an array\)"):
        list(read_samples(path))


def test_a_column_mapped_onto_a_field_the_record_also_has_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "both", "jsonl", [{"id": "1", "query": "QUERY", "question": "QUESTION"}])
    with pytest.raises(InputError, match="--column question=query: the record also has a 'question' column"):
        list(read_samples(path, columns={"question": "query"}))


def test_a_label_column_mapped_to_another_key_ignores_the_key_of_its_own_name(tmp_path: Path) -> None:
    from localeval.data.labels import read_labels

    path = tmp_path / "labels.jsonl"
    for order in ({"id": "1", "faithfulness": 0, "gold": 1}, {"id": "1", "gold": 1, "faithfulness": 0}):
        path.write_text(json.dumps(order) + "\n", encoding="utf-8")
        labels = read_labels(path, {"1"}, ["faithfulness"], {"faithfulness": "gold"}, "samples.jsonl")
        assert labels.by_column == {"faithfulness": {"1": 1}}


def test_column_maps_fields_in_every_container(tmp_path: Path) -> None:
    records = [{"query": s["question"], "output": s["answer"]} for s in SAMPLES]
    for container in ("jsonl", "json", "csv", "parquet"):
        path = write(tmp_path, f"mapped-{container}", container, records)
        samples = list(read_samples(path, columns={"question": "query", "answer": "output"}))
        assert [s.answer for s in samples] == [s["answer"] for s in SAMPLES], container
    with pytest.raises(InputError, match="--column answer=missing: no column 'missing' in the first record"):
        list(read_samples(path, columns={"answer": "missing"}))


def test_a_json_file_of_lines_is_json_lines_and_an_array_is_an_array(tmp_path: Path) -> None:
    lines = tmp_path / "lines.json"  # Hugging Face's Dataset.to_json writes JSON Lines to a .json name
    lines.write_text("".join(json.dumps(dict(r, id=f"q{i}")) + "\n" for i, r in enumerate(SAMPLES)), encoding="utf-8")
    assert [s.id for s in read_samples(lines)] == ["q0", "q1", "q2"]
    array = write(tmp_path, "localeval", "json")
    starts = [s.line for s in read_samples(array)]  # the line each element starts on
    assert len(starts) == 3 and all(array.read_text().splitlines()[n - 1] == "  {" for n in starts)


def test_tables_beside_samples_read_back_in_one_call(tmp_path: Path) -> None:
    path = write(tmp_path, "deepeval", "json")
    out = tmp_path / "out"
    score_file(path, out, "token_f1,exact_match", tables=("csv", "parquet"))
    table = pq.read_table(out / "samples.parquet").to_pylist()
    assert [row["id"] for row in table] == ["1", "2", "3"]
    assert table[1]["question"] == SAMPLES[1]["question"] and json.loads(table[1]["contexts"]) == SAMPLES[1]["contexts"]
    scored = [json.loads(line)["metrics"] for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [row["token_f1"] for row in table] == [m["token_f1"] for m in scored]
    with (out / "samples.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [float(r["token_f1"]) for r in rows] == [m["token_f1"] for m in scored]
    assert list(rows[0])[:2] == ["id", "question"] and "exact_match" in rows[0]
    # scored again with one table: the other, of the previous rows, does not stay beside the new ones
    score_file(path, out, "token_f1", tables=("csv",))
    assert sorted(p.name for p in out.iterdir()) == ["samples.csv", "samples.jsonl", "summary.csv", "summary.json"]
    # a table these results did not write (the input itself, scored into its own folder) is never removed
    (tmp_path / "own").mkdir()
    mine = tmp_path / "own" / "samples.csv"
    mine.write_text("id,question\n1,When?\n", encoding="utf-8")
    score_file(mine, tmp_path / "own", "token_f1")
    score_file(mine, tmp_path / "own", "token_f1")
    assert mine.read_text(encoding="utf-8") == "id,question\n1,When?\n"


def test_parquet_maps_and_columns_are_read_as_json_would_be(tmp_path: Path) -> None:
    graded = pa.map_(pa.string(), pa.int64())
    path = tmp_path / "maps.parquet"
    pq.write_table(pa.table({"question": ["a?", "b?"], "reference_doc_ids": pa.array([[("d1", 2)], [("d1", 1), ("d1", 0)]],
                                                                                      graded)}), path)
    with pytest.raises(InputError, match=r"maps\.parquet:2: field 'reference_doc_ids': key 'd1' appears twice"):
        list(read_samples(path))
    pq.write_table(pa.table({"question": ["a?"], "reference_doc_ids": pa.array([[("d1", 2), ("d2", 0)]], graded)}), path)
    assert [s.relevance for s in read_samples(path)] == [{"d1": 2.0, "d2": 0.0}]
    with pytest.raises(InputError, match="--column: the column 'question' is given for question and answer"):
        list(read_samples(path, columns={"question": "question", "answer": "question"}))


def test_text_that_is_not_utf8_in_a_parquet_file_is_named_by_row_and_column(tmp_path: Path) -> None:
    """pyarrow decodes a batch of rows at once; the error still names the row and the column that hold it."""
    questions = [f"question {i}?".encode() for i in range(5000)]
    questions[4499] = b"caf\xe9?"
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"id": [str(i) for i in range(5000)],
                             "question": pa.array(questions, pa.binary()).view(pa.string())}), path)
    with pytest.raises(InputError, match=r"bad\.parquet:4500: field 'question': holds text that is not valid UTF-8"):
        list(read_samples(path))
