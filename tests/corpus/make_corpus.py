"""Writes tests/corpus/files/ and tests/corpus/cases.json, the malformed-input corpus of tests/test_corpus.py.

Both outputs are checked in, so the corpus is there to read and stays fixed; this script is how each file
was made (some are binary, or 200 KB of brackets) and where a new case is added:
    python tests/corpus/make_corpus.py
"""
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent
F = ROOT / "files"
shutil.rmtree(F, ignore_errors=True)
F.mkdir(parents=True)
cases = []

def w(name, data):
    p = F / name
    p.parent.mkdir(parents=True, exist_ok=True)
    (p.write_bytes if isinstance(data, bytes) else lambda d: p.write_text(d, encoding="utf-8", newline=""))(data)
    return name

def case(name, args, exit=2, message="", **more):
    cases.append({"name": name, "args": args, "exit": exit, "message": message, **more})

def rec(i, **extra):
    r = {"id": f"q{i}", "question": f"Question {i}?", "answer": f"Answer {i}.",
         "contexts": [{"id": f"d{i}", "text": f"Passage {i}."}, {"id": "dx", "text": "Other."}],
         "reference": f"Answer {i}.", "reference_doc_ids": [f"d{i}"]}
    r.update(extra)
    return r

def jl(records):
    return "".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in records)

GOOD = [rec(i) for i in range(4)]
w("ok.jsonl", jl(GOOD))
def score(inp, *more):
    return ["score", inp, "-m", "mrr", "-o", "out", "-q", *more]

# ---- JSONL input ----------------------------------------------------------------------------------
w("jsonl/huge_int_id.jsonl", '{"id": ' + "7" * 5000 + ', "question": "q?"}\n')
case("jsonl_huge_int_id", score("jsonl/huge_int_id.jsonl"), message="huge_int_id.jsonl:1: invalid JSON: an integer of 5000 digits")
w("jsonl/deep_nesting.jsonl", jl(GOOD[:1]) + '{"id": "deep", "question": "q?", "extra": ' + "[" * 20000 + "]" * 20000 + "}\n")
case("jsonl_deep_nesting", score("jsonl/deep_nesting.jsonl"), message="deep_nesting.jsonl:2: invalid JSON: nested more than 100 levels deep")
w("jsonl/deep_objects.jsonl", '{"id": "deep", "question": "q?", "extra": ' + '{"a": ' * 5000 + "1" + "}" * 5000 + "}\n")
case("jsonl_deep_objects", score("jsonl/deep_objects.jsonl"), message="deep_objects.jsonl:1: invalid JSON: nested more than 100 levels deep")
w("jsonl/nan_passthrough.jsonl", jl(GOOD[:2]) + '{"id": "n", "question": "q?", "score": NaN}\n')
case("jsonl_nan_passthrough", score("jsonl/nan_passthrough.jsonl"), message="nan_passthrough.jsonl:3: invalid JSON: NaN is not a JSON number")
w("jsonl/infinity.jsonl", '{"id": "n", "question": "q?", "latency": -Infinity}\n')
case("jsonl_minus_infinity", score("jsonl/infinity.jsonl"), message="infinity.jsonl:1: invalid JSON: -Infinity is not a JSON number")
w("jsonl/huge_float.jsonl", '{"id": "n", "question": "q?", "latency": 1e999}\n')
case("jsonl_huge_float", score("jsonl/huge_float.jsonl"), message="too large for a 64-bit float")
w("jsonl/surrogate_question.jsonl", '{"id": "s", "question": "broken \\ud800 text"}\n')
case("jsonl_lone_surrogate_question", score("jsonl/surrogate_question.jsonl"), message="surrogate_question.jsonl:1: field 'question': holds an unpaired surrogate")
w("jsonl/surrogate_context.jsonl", '{"id": "s", "question": "q?", "contexts": [{"id": "d", "text": "x \\udfff"}]}\n')
case("jsonl_lone_surrogate_context", score("jsonl/surrogate_context.jsonl"), message="field 'contexts[0].text': holds an unpaired surrogate")
w("jsonl/surrogate_passthrough.jsonl", '{"id": "s", "question": "q?", "meta": {"\\ud83d": 1}}\n')
case("jsonl_lone_surrogate_in_key", score("jsonl/surrogate_passthrough.jsonl"), message="field 'meta': holds an unpaired surrogate")
w("jsonl/surrogate_pair_ok.jsonl", '{"id": "e", "question": "emoji \\ud83d\\ude00 ok?", "contexts": [{"id": "d", "text": "t"}], "reference_doc_ids": ["d"]}\n')
case("jsonl_paired_surrogates_accepted", score("jsonl/surrogate_pair_ok.jsonl"), exit=0, check_output={"out/samples.jsonl": "\U0001F600"})
w("jsonl/duplicate_key.jsonl", '{"id": "k", "question": "first?", "question": "second?"}\n')
case("jsonl_duplicate_key", score("jsonl/duplicate_key.jsonl"), message="duplicate_key.jsonl:1: field 'question': invalid JSON: appears twice in one object")
w("jsonl/duplicate_key_nested.jsonl", '{"id": "k", "question": "q?", "contexts": [{"id": "a", "text": "t", "id": "b"}]}\n')
case("jsonl_duplicate_key_nested", score("jsonl/duplicate_key_nested.jsonl"), message="field 'id': invalid JSON: appears twice")
w("jsonl/long_string_id.jsonl", json.dumps({"id": "x" * 2000, "question": "q?"}) + "\n")
case("jsonl_long_string_id", score("jsonl/long_string_id.jsonl"), message="field 'id': is 2000 characters long; ids may have at most 1000")
w("jsonl/long_doc_id.jsonl", json.dumps({"id": "a", "question": "q?", "reference_doc_ids": ["d" * 1500]}) + "\n")
case("jsonl_long_reference_doc_id", score("jsonl/long_doc_id.jsonl"), message="field 'reference_doc_ids[0]': is 1500 characters long")
w("jsonl/bad_utf8.jsonl", jl(GOOD[:1]).encode() + b'{"id": "b", "question": "caf\xe9?"}\n')
case("jsonl_bad_utf8", score("jsonl/bad_utf8.jsonl"), message="bad_utf8.jsonl:2: is not valid UTF-8 (byte 0xe9 at column 29)")
w("jsonl/truncated_line.jsonl", jl(GOOD[:2]) + '{"id": "t", "question": "q?", "contexts": [{"id": "d", "te\n')
case("jsonl_truncated_line", score("jsonl/truncated_line.jsonl"), message="truncated_line.jsonl:3: invalid JSON: Unterminated string")
w("jsonl/nul_byte.jsonl", b'{"id": "z", "question": "q\x00?"}\n')
case("jsonl_raw_nul_byte", score("jsonl/nul_byte.jsonl"), message="nul_byte.jsonl:1: invalid JSON: Invalid control character")
w("jsonl/array_line.jsonl", '[1, 2, 3]\n')
case("jsonl_array_line", score("jsonl/array_line.jsonl"), message="array_line.jsonl:1: expected a JSON object, got a list")
w("jsonl/missing_question.jsonl", '{"id": 1, "answer": "a"}\n')
case("jsonl_missing_question", score("jsonl/missing_question.jsonl"), message="field 'question': must be a non-empty string (missing)")
w("jsonl/bool_id.jsonl", '{"id": true, "question": "q?"}\n')
case("jsonl_boolean_id", score("jsonl/bool_id.jsonl"), message="field 'id': must be a string or an integer, got a boolean")
w("jsonl/duplicate_id.jsonl", jl(GOOD[:3] + [rec(1)]))
case("jsonl_duplicate_id", score("jsonl/duplicate_id.jsonl"), message="duplicate_id.jsonl:4: field 'id': duplicate id 'q1' (first used on line 2)")
w("jsonl/duplicate_id_newline.jsonl", jl([{"id": "q\n1\u001b[31m", "question": "q?"}, {"id": "q\n1\u001b[31m", "question": "r?"}]))
case("jsonl_duplicate_id_with_control_chars", score("jsonl/duplicate_id_newline.jsonl"), message="duplicate id 'q\\n1\\x1b[31m'")
w("jsonl/reserved_field.jsonl", '{"id": 1, "question": "q?", "metrics": {}}\n')
case("jsonl_reserved_field", score("jsonl/reserved_field.jsonl"), message="field 'metrics': is reserved")
w("jsonl/mixed_contexts.jsonl", '{"id": 1, "question": "q?", "contexts": ["a", {"id": "d", "text": "b"}]}\n')
case("jsonl_mixed_contexts", score("jsonl/mixed_contexts.jsonl"), message="mixes plain strings")
w("jsonl/grade_too_large.jsonl", '{"id": 1, "question": "q?", "reference_doc_ids": {"d1": 1e300}}\n')
case("jsonl_grade_too_large", score("jsonl/grade_too_large.jsonl"), message="field 'reference_doc_ids.d1': grade 1e+300 is beyond")
w("jsonl/grade_text.jsonl", '{"id": 1, "question": "q?", "reference_doc_ids": {"d1": "high"}}\n')
case("jsonl_grade_text", score("jsonl/grade_text.jsonl"), message="field 'reference_doc_ids.d1': grade must be a finite number")
w("jsonl/context_no_text.jsonl", '{"id": 1, "question": "q?", "contexts": [{"id": "d"}]}\n')
case("jsonl_context_without_text", score("jsonl/context_no_text.jsonl"), message="field 'contexts[0].text': must be a string, got nothing")
w("jsonl/empty.jsonl", "")
case("jsonl_empty_file", score("jsonl/empty.jsonl"), message="empty.jsonl: contains no records")
w("jsonl/blank_lines.jsonl", "\n  \n\r\n")
case("jsonl_only_blank_lines", score("jsonl/blank_lines.jsonl"), message="blank_lines.jsonl: contains no records")
w("jsonl/bom_crlf.jsonl", ("\ufeff" + jl(GOOD[:2]).replace("\n", "\r\n")).encode("utf-8"))
case("jsonl_bom_and_crlf_accepted", score("jsonl/bom_crlf.jsonl"), exit=0)
w("jsonl/data.txt", jl(GOOD[:1]))
case("input_unknown_extension", score("jsonl/data.txt"), message="data.txt: unknown format; use a file ending in .jsonl, .ndjson, .json, .csv, .tsv, .parquet, .pq, or pass --format")
case("jsonl_column_not_in_first_record", score("ok.jsonl", "--column", "question=query"),
     message="ok.jsonl:1: --column question=query: no column 'query' in the first record (it has id, question,")
case("jsonl_column_unknown_field", score("ok.jsonl", "--column", "body=question"),
     message="ok.jsonl: --column: 'body' is not a field; use one of id, question, answer")
w("jsonl/query_column.jsonl", '{"qid": "a", "query": "q?"}\n{"qid": "b", "query": "r?"}\n')
case("jsonl_column_renames_accepted", score("jsonl/query_column.jsonl", "--column", "question=query", "--column", "id=qid"),
     exit=0, check_output={"out/samples.jsonl": '"id": "b"'})

# ---- CSV ------------------------------------------------------------------------------------------
HDR = "id,question,contexts,reference_doc_ids\n"
CTX = '"[{""id"": ""d1"", ""text"": ""t""}]","[""d1""]"'
w("csv/unbalanced_quote.csv", HDR + f"1,q1?,{CTX}\n" + f'2,"what is this?,{CTX}\n' + f"3,q3?,{CTX}\n4,q4?,{CTX}\n")
case("csv_unbalanced_quote_rows_merged", score("csv/unbalanced_quote.csv"), message="unbalanced_quote.csv:3: invalid CSV: a quoted cell is followed by text")
w("csv/unclosed_quote.csv", 'id,question\n1,first?\n2,"second?\n3,third?\n4,fourth?\n')
case("csv_quote_never_closed", score("csv/unclosed_quote.csv"), message="unclosed_quote.csv:3: the row starting on this line has a quoted cell that is never closed")
w("csv/text_after_quote.csv", HDR + f'1,"q1"?,{CTX}\n')
case("csv_text_after_closing_quote", score("csv/text_after_quote.csv"), message="text_after_quote.csv:2: invalid CSV")
w("csv/duplicate_header.csv", "id,question,question\n1,first?,second?\n")
case("csv_duplicate_header", score("csv/duplicate_header.csv"), message="duplicate_header.csv:1: column 'question' appears twice in the header (columns 2 and 3)")
w("csv/ragged_row.csv", "id,question\n1,q?,extra\n")
case("csv_ragged_row", score("csv/ragged_row.csv"), message="ragged_row.csv:2: has 3 cells but the header has 2")
w("csv/bad_json_cell.csv", HDR + '1,q?,"[{""id"": ""d1"", ""text"": ""t""}",\n')
case("csv_bad_json_cell", score("csv/bad_json_cell.csv"), message="bad_json_cell.csv:2: field 'contexts': cell must hold JSON")
w("csv/nan_json_cell.csv", "id,question,reference_doc_ids\n1,q?,\"{\"\"d1\"\": NaN}\"\n")
case("csv_nan_in_json_cell", score("csv/nan_json_cell.csv"), message="field 'reference_doc_ids': cell must hold JSON: NaN is not a JSON number")
w("csv/deep_json_cell.csv", "id,question,contexts\n1,q?," + "[" * 3000 + "]" * 3000 + "\n")
case("csv_deep_json_cell", score("csv/deep_json_cell.csv"), message="field 'contexts': cell must hold JSON: nested more than 100 levels deep")
w("csv/duplicate_key_cell.csv", "id,question,reference_doc_ids\n1,q?,\"{\"\"d1\"\": 1, \"\"d1\"\": 0}\"\n")
case("csv_duplicate_key_in_json_cell", score("csv/duplicate_key_cell.csv"), message="field 'reference_doc_ids.d1': cell must hold JSON: appears twice")
w("csv/latin1.csv", "id,question\n1,caf\xe9?\n".encode("latin-1"))
case("csv_not_utf8", score("csv/latin1.csv"), message="latin1.csv:2: is not valid UTF-8 (byte 0xe9")
w("csv/header_only.csv", HDR)
case("csv_header_only", score("csv/header_only.csv"), message="header_only.csv: contains no records")
w("csv/query_column.csv", "qid,query\n1,q?\n")
case("csv_column_map_to_missing_column", score("csv/query_column.csv", "--column", "question=text"), message="query_column.csv:2: --column question=text: no column 'text' in the first record")
case("csv_column_map_unknown_field", score("csv/query_column.csv", "--column", "body=query"), message="--column: 'body' is not a field")
case("csv_column_malformed_pair", score("csv/query_column.csv", "--column", "question"), message="'question' is not FIELD=COLUMN")
w("csv/multiline_ok.csv", HDR + '1,"a question\nover two lines?",' + CTX + "\n2,q2?," + CTX + "\n")
case("csv_multiline_quoted_cell_accepted", score("csv/multiline_ok.csv"), exit=0, check_output={"out/samples.jsonl": "over two lines?"})
w("csv/ok.tsv", "id\tquestion\tcontexts\treference_doc_ids\n1\tq?\t[{\"id\": \"d1\", \"text\": \"t\"}]\t[\"d1\"]\n")
case("tsv_accepted", score("csv/ok.tsv"), exit=0)

w("csv/python_list_unclosed.csv", "user_input,retrieved_contexts\nq?,\"['a', 'b'\"\n")
case("csv_python_list_literal_malformed", score("csv/python_list_unclosed.csv"),
     message="python_list_unclosed.csv:2: field 'retrieved_contexts': cell must hold JSON")
w("csv/python_list_ok.csv", "user_input,retrieved_contexts\nq?,\"" + repr(["it's a", "b"]).replace('"', '""') + '"\n')  # as pandas writes a list
case("csv_python_list_literal_accepted", score("csv/python_list_ok.csv"), exit=0, check_output={"out/samples.jsonl": "it's a"})

# ---- JSON array (.json starting with '[') --------------------------------------------------------------
def ja(elements):
    """A JSON array with one element per line (the first on line 2), as DeepEval saves a dataset."""
    return "[\n" + ",\n".join(e if isinstance(e, str) else json.dumps(e, ensure_ascii=False) for e in elements) + "\n]\n"
Q1, Q2 = {"id": "q1", "question": "q?"}, {"id": "q2", "question": "r?"}
w("json/number_element.json", ja([Q1, "3"]))
case("json_array_number_element", score("json/number_element.json"), message="number_element.json:3: expected a JSON object, got a number")
w("json/string_element.json", ja([Q1, Q2, '"q3"']))
case("json_array_string_element", score("json/string_element.json"), message="string_element.json:4: expected a JSON object, got a string")
w("json/nested_array_element.json", ja([[Q1], Q2]))
case("json_array_nested_array_element", score("json/nested_array_element.json"), message="nested_array_element.json:2: expected a JSON object, got a list")
w("json/object.json", '{\n  "id": "q1",\n  "question": "q?"\n}\n')
case("json_format_object_not_array", score("json/object.json", "--format", "json"), message="object.json: must hold one JSON array of records")
w("json/one_object_per_line.json", jl([Q1, Q2]))
case("json_not_starting_with_bracket_is_json_lines", score("json/one_object_per_line.json"), exit=0, check_output={"out/samples.jsonl": '"q2"'})
w("json/truncated.json", ja([Q1, Q2])[:-12])
case("json_array_truncated", score("json/truncated.json"), message="truncated.json:3: invalid JSON: Unterminated string")
w("json/unclosed.json", ja([Q1, Q2])[:-3])
case("json_array_unclosed", score("json/unclosed.json"), message="unclosed.json:3: invalid JSON: Expecting ',' delimiter")
w("json/empty.json", "[]\n")
case("json_array_empty", score("json/empty.json"), message="empty.json: contains no records")
w("json/nan.json", ja([Q1, '{"id": "q2", "question": "r?", "score": NaN}']))
case("json_array_nan", score("json/nan.json"), message="nan.json:3: invalid JSON: NaN is not a JSON number")
w("json/duplicate_key.json", ja([Q1, '{"id": "q2", "question": "r?", "question": "s?"}']))
case("json_array_duplicate_key", score("json/duplicate_key.json"), message="field 'question': invalid JSON: appears twice in one object")
w("json/huge_int.json", ja([Q1, '{"id": ' + "7" * 5000 + ', "question": "r?"}']))
case("json_array_huge_int", score("json/huge_int.json"), message="huge_int.json:3: invalid JSON: an integer of 5000 digits")
w("json/deep.json", ja([Q1, '{"id": "q2", "question": "r?", "extra": ' + "[" * 3000 + "]" * 3000 + "}"]))
case("json_array_deep_nesting", score("json/deep.json"), message="deep.json:3: invalid JSON: nested more than 100 levels deep")
w("json/two_arrays.json", ja([Q1]) + ja([Q2]))
case("json_array_followed_by_another", score("json/two_arrays.json"), message="two_arrays.json:4: invalid JSON: Extra data")
w("json/trailing_comma.json", ja([Q1, Q2]).replace("\n]", ",\n]"))
case("json_array_trailing_comma", score("json/trailing_comma.json"), message="trailing_comma.json:4: invalid JSON: Expecting value")
w("json/bad_utf8.json", ja([Q1]).encode() + b'{"id": "q2", "question": "caf\xe9?"}\n')
case("json_array_bad_utf8", score("json/bad_utf8.json"), message="bad_utf8.json:4: is not valid UTF-8 (byte 0xe9")
w("json/duplicate_id.json", ja([Q1, Q2, {"id": "q1", "question": "s?"}]))
case("json_array_duplicate_id", score("json/duplicate_id.json"), message="duplicate_id.json:4: field 'id': duplicate id 'q1' (first used on line 2)")
w("json/element_lines.json", "\ufeff[\n" + json.dumps(Q1) + ", " + json.dumps(Q2) + ",\n\n" + json.dumps({"id": "q3", "question": "s?\nt"}, indent=1)
  + ",\n" + json.dumps({"id": "q4", "question": ""}) + "]\n")
case("json_array_error_names_the_element_line", score("json/element_lines.json"), message="element_lines.json:8: field 'question': must be a non-empty string (empty)")
w("json/deepeval.json", ja([{"input": "q?", "actual_output": "a", "retrieval_context": ["x"]}, {"input": "r?", "actual_output": "b"}]))
case("json_array_deepeval_accepted", score("json/deepeval.json"), exit=0, check_output={"out/samples.jsonl": '"id": "2"'})
w("json/deepeval_bad.json", ja([{"input": "q?", "actual_output": "a"}, {"input": "r?", "actual_output": 5}]))
case("json_array_deepeval_names_their_field", score("json/deepeval_bad.json"), message="deepeval_bad.json:3: field 'actual_output': must be a string, got a number")

# ---- Parquet --------------------------------------------------------------------------------------
def pqt(name, columns, **write):
    """A Parquet file of these columns (name -> pyarrow array or list of values)."""
    table = pa.Table.from_arrays([c if isinstance(c, pa.Array) else pa.array(c) for c in columns.values()], names=list(columns))
    p = F / name
    p.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, p, **write)
    return name

pqt("parquet/ok.parquet", {"id": ["q1", "q2"], "question": ["a?", "b?"],
                           "contexts": [[{"id": "d1", "text": "t"}, {"id": "d2", "text": "u"}], [{"id": "d3", "text": "v"}]],
                           "reference_doc_ids": [["d2"], ["d9"]]})
case("parquet_accepted", score("parquet/ok.parquet"), exit=0, check_output={"out/summary.json": '"mrr"'})
pqt("parquet/int_question.parquet", {"id": ["q1", "q2"], "question": pa.array([1, 2], pa.int64())})
case("parquet_int64_question", score("parquet/int_question.parquet"), message="int_question.parquet:1: field 'question': must be a non-empty string (got a number)")
pqt("parquet/int_contexts.parquet", {"id": ["q1"], "question": ["q?"], "contexts": pa.array([[1, 2]], pa.list_(pa.int64()))})
case("parquet_list_int64_contexts", score("parquet/int_contexts.parquet"), message="int_contexts.parquet:1: field 'contexts[0]': must be a string or an {id, text} object, got a number")
pqt("parquet/struct_answer.parquet", {"id": ["q1"], "question": ["q?"], "answer": pa.array([{"text": "a", "score": 1}])})
case("parquet_struct_answer", score("parquet/struct_answer.parquet"), message="struct_answer.parquet:1: field 'answer': must be a string, got an object")
pqt("parquet/binary_question.parquet", {"id": ["q1"], "question": pa.array([b"q?"], pa.binary())})
case("parquet_binary_question", score("parquet/binary_question.parquet"), message="binary_question.parquet:1: field 'question': is a bytes, which is not a JSON value")
pqt("parquet/timestamp.parquet", {"id": ["q1"], "question": ["q?"], "asked_at": pa.array([0], pa.timestamp("s"))})
case("parquet_timestamp_column", score("parquet/timestamp.parquet"), message="timestamp.parquet:1: field 'asked_at': is a datetime, which is not a JSON value")
pqt("parquet/nan.parquet", {"id": ["q1", "q2"], "question": ["q?", "r?"], "latency": [0.5, float("nan")]})
case("parquet_nan_float", score("parquet/nan.parquet"), message="nan.parquet:2: field 'latency': must be a finite number, got nan")
pqt("parquet/int_map_key.parquet", {"id": ["q1"], "question": ["q?"], "meta": pa.array([[(1, "x")]], pa.map_(pa.int64(), pa.string()))})
case("parquet_map_with_int_keys", score("parquet/int_map_key.parquet"), message="int_map_key.parquet:1: field 'meta': has a key 1 that is not a string")
pqt("parquet/reserved.parquet", {"id": ["q1"], "question": ["q?"], "metrics": [1]})
case("parquet_reserved_column", score("parquet/reserved.parquet"), message="reserved.parquet:1: field 'metrics': is reserved")
pqt("parquet/null_question.parquet", {"id": ["q1", "q2"], "question": ["q?", None]})
case("parquet_null_question", score("parquet/null_question.parquet"), message="null_question.parquet:2: field 'question': must be a non-empty string (missing)")
pqt("parquet/late_error.parquet", {"id": [f"q{i}" for i in range(1, 4101)], "question": ["q?"] * 4099 + [""]}, row_group_size=1000)
case("parquet_error_in_a_later_batch_names_its_row", score("parquet/late_error.parquet"), message="late_error.parquet:4100: field 'question': must be a non-empty string (empty)")
pqt("parquet/duplicate_id.parquet", {"id": [1, 2, 1], "question": ["a?", "b?", "c?"]})
case("parquet_duplicate_id", score("parquet/duplicate_id.parquet"), message="duplicate_id.parquet:3: field 'id': duplicate id '1' (first used on line 1)")
pqt("parquet/no_rows.parquet", {"id": pa.array([], pa.string()), "question": pa.array([], pa.string())})
case("parquet_no_rows", score("parquet/no_rows.parquet"), message="no_rows.parquet: contains no records")
GOOD_PARQUET = (F / "parquet/ok.parquet").read_bytes()
w("parquet/truncated.parquet", GOOD_PARQUET[: len(GOOD_PARQUET) // 2])
case("parquet_truncated", score("parquet/truncated.parquet"), message="truncated.parquet: is not a readable Parquet file (")
w("parquet/magic_only.parquet", b"PAR1")
case("parquet_magic_bytes_only", score("parquet/magic_only.parquet"), message="magic_only.parquet: is not a readable Parquet file (")
w("parquet/empty.parquet", b"")
case("parquet_empty_file", score("parquet/empty.parquet"), message="empty.parquet: is not a readable Parquet file (")
w("parquet/not_parquet.parquet", jl(GOOD[:2]))
case("parquet_not_a_parquet_file", score("parquet/not_parquet.parquet"), message="not_parquet.parquet: is not a readable Parquet file (")
case("format_parquet_given_a_json_file", score("json/deepeval.json", "--format", "parquet"), message="deepeval.json: is not a readable Parquet file (")
pqt("parquet/query.parquet", {"qid": ["a", "b"], "query": ["q?", "r?"]})
case("parquet_column_renames_accepted", score("parquet/query.parquet", "--column", "question=query", "--column", "id=qid"),
     exit=0, check_output={"out/samples.jsonl": '"id": "b"'})
case("parquet_column_not_in_first_record", score("parquet/query.parquet", "--column", "question=text"),
     message="query.parquet:1: --column question=text: no column 'text' in the first record (it has qid, query)")
case("parquet_column_unknown_field", score("parquet/query.parquet", "--column", "user_input=query"),
     message="query.parquet: --column: 'user_input' is not a field; use one of id, question")
pqt("parquet/ragas.parquet", {"user_input": ["a?", "b?"], "retrieved_contexts": [["x", "y"], ["z"]],
                              "retrieved_context_ids": [["d1", "d2"], ["d3"]], "reference_context_ids": [["d2"], ["d3"]]})
case("parquet_ragas_accepted", score("parquet/ragas.parquet"), exit=0, check_output={"out/samples.jsonl": '"id": "2"'})
pqt("parquet/ragas_ids_length.parquet", {"user_input": ["a?", "b?"], "retrieved_contexts": [["x", "y"], ["z"]],
                                         "retrieved_context_ids": [["d1", "d2"], ["d3", "d4"]]})
case("parquet_ragas_context_ids_length", score("parquet/ragas_ids_length.parquet"),
     message="ragas_ids_length.parquet:2: field 'retrieved_context_ids': must be a list as long as 'retrieved_contexts' (one id per text)")
pqt("parquet/some_ids.parquet", {"id": ["q1", None], "question": ["a?", "b?"]})
case("parquet_id_null_on_a_later_row", score("parquet/some_ids.parquet"), message="some_ids.parquet:2: field 'id': is required: the first record has one")

# ---- nested lists where strings belong, in every container -----------------------------------------
NESTED = {"contexts": ({"id": "q1", "question": "q?", "contexts": [["a"]]}, "field 'contexts[0]': must be a string or an {id, text} object, got a list"),
          "question": ({"id": "q1", "question": ["x"]}, "field 'question': must be a non-empty string (got a list)"),
          "ragas": ({"user_input": "q?", "retrieved_contexts": [[1]]}, "field 'retrieved_contexts[0]': must be a string or an {id, text} object, got a list")}
for what, (record, message) in NESTED.items():
    w(f"nested/{what}.jsonl", jl([record]))
    case(f"jsonl_nested_list_{what}", score(f"nested/{what}.jsonl"), message=f"{what}.jsonl:1: {message}")
    w(f"nested/{what}.json", ja([record]))
    case(f"json_array_nested_list_{what}", score(f"nested/{what}.json"), message=f"{what}.json:2: {message}")
    pqt(f"nested/{what}.parquet", {k: [v] for k, v in record.items()})
    case(f"parquet_nested_list_{what}", score(f"nested/{what}.parquet"), message=f"{what}.parquet:1: {message}")

# ---- record shapes (Ragas, DeepEval) and ids ---------------------------------------------------------
w("shapes/ragas_then_deepeval.jsonl", jl([{"user_input": "q?", "response": "a"}, {"input": "r?", "actual_output": "b"}]))
case("shape_ragas_then_deepeval", score("shapes/ragas_then_deepeval.jsonl"),
     message="ragas_then_deepeval.jsonl:2: is a record of DeepEval test cases but line 1 is of a Ragas dataset")
w("shapes/two_shapes_one_record.jsonl", jl([{"id": "q1", "question": "q?", "user_input": "q?"}]))
case("shape_two_shapes_in_one_record", score("shapes/two_shapes_one_record.jsonl"),
     message="two_shapes_one_record.jsonl:1: holds fields of two shapes at once: question (localeval's format); user_input (a Ragas dataset)")
w("shapes/ids_then_none.jsonl", jl([Q1, {"question": "r?"}]))
case("shape_id_missing_after_records_with_ids", score("shapes/ids_then_none.jsonl"),
     message="ids_then_none.jsonl:2: field 'id': is required: the first record has one, so every record needs one")
w("shapes/none_then_ids.jsonl", jl([{"question": "q?"}, Q2]))
case("shape_id_given_after_records_without", score("shapes/none_then_ids.jsonl"),
     message="none_then_ids.jsonl:2: field 'id': is given here but not on line 1")
w("shapes/ragas_ids_length.jsonl", jl([{"user_input": "q?", "retrieved_contexts": ["a", "b"], "retrieved_context_ids": ["d1"]}]))
case("shape_ragas_context_ids_length", score("shapes/ragas_ids_length.jsonl"),
     message="ragas_ids_length.jsonl:1: field 'retrieved_context_ids': must be a list as long as 'retrieved_contexts'")
w("shapes/ragas_bad_input.jsonl", jl([{"user_input": "q?"}, {"user_input": 5}]))
case("shape_ragas_error_names_their_field", score("shapes/ragas_bad_input.jsonl"),
     message="ragas_bad_input.jsonl:2: field 'user_input': must be a non-empty string (got a number)")
w("shapes/ragas_no_ids.jsonl", jl([{"user_input": "q?", "retrieved_contexts": ["a"], "response": "x"}, {"user_input": "r?", "response": "y"}]))
case("shape_ragas_without_ids_accepted", score("shapes/ragas_no_ids.jsonl"), exit=0, check_output={"out/samples.jsonl": '"id": "2"'})

# ---- TREC -----------------------------------------------------------------------------------------
w("trec/run.txt", "q1 Q0 d1 1 2.5 sys\nq1 Q0 d2 2 1.5 sys\nq2 Q0 d3 1 0.9 sys\n")
w("trec/qrels.txt", "q1 0 d1 1\nq2 0 d9 2\n")
def trec(run, qrels="trec/qrels.txt", *more):
    return ["score", "--run", run, "--qrels", qrels, "-o", "out", "-q", *more]
case("trec_ok", trec("trec/run.txt"), exit=0, check_output={"out/summary.json": '"run_only": 0'})
w("trec/empty_run.txt", "")
case("trec_empty_run", trec("trec/empty_run.txt"), message="empty_run.txt: contains no run lines")
w("trec/huge_grade_qrels.txt", "q1 0 d1 1\nq2 0 d9 3000000\n")
case("trec_grade_too_large", trec("trec/run.txt", "trec/huge_grade_qrels.txt"), message="huge_grade_qrels.txt:2: field 'grade': grade 3e+06 is beyond")
w("trec/blank_qrels.txt", "\n\n")
case("trec_empty_qrels", trec("trec/run.txt", "trec/blank_qrels.txt"), message="blank_qrels.txt: contains no judgments")
w("trec/other_topics_qrels.txt", "301 0 d1 1\n302 0 d2 1\n")
case("trec_no_shared_query_ids", trec("trec/run.txt", "trec/other_topics_qrels.txt"), message="no query is in both the run and")
w("trec/run_5_fields.txt", "q1 Q0 d1 1 2.5\n")
case("trec_run_missing_field", trec("trec/run_5_fields.txt"), message="run_5_fields.txt:1: expected 6 whitespace-separated fields")
w("trec/run_nan_score.txt", "q1 Q0 d1 1 nan sys\n")
case("trec_run_nan_score", trec("trec/run_nan_score.txt"), message="field 'score': must be a finite number, got 'nan'")
w("trec/run_text_score.txt", "q1 Q0 d1 1 high sys\n")
case("trec_run_text_score", trec("trec/run_text_score.txt"), message="field 'score': must be a number, got 'high'")
w("trec/qrels_fraction.txt", "q1 0 d1 0.5\n")
case("trec_qrels_fractional_grade", trec("trec/run.txt", "trec/qrels_fraction.txt"), message="field 'grade': must be an integer")
w("trec/qrels_dup.txt", "q1 0 d1 1\nq1 0 d1 2\n")
case("trec_qrels_duplicate_judgment", trec("trec/run.txt", "trec/qrels_dup.txt"), message="qrels_dup.txt:2: field 'docno': duplicate judgment")
w("trec/run_long_docno.txt", "q1 Q0 " + "d" * 1200 + " 1 1.0 sys\n")
case("trec_run_overlong_docno", trec("trec/run_long_docno.txt"), message="field 'docno': is 1200 characters long")
w("trec/run_bad_utf8.txt", b"q1 Q0 d\xff 1 1.0 sys\n")
case("trec_run_bad_utf8", trec("trec/run_bad_utf8.txt"), message="run_bad_utf8.txt:1: is not valid UTF-8 (byte 0xff")
w("trec/qrels_huge_grade.txt", "q1 0 d1 " + "9" * 400 + "\n")
case("trec_qrels_huge_grade", trec("trec/run.txt", "trec/qrels_huge_grade.txt"), message="field 'grade': must be an integer")
case("trec_with_input_too", ["score", "ok.jsonl", "--run", "trec/run.txt", "--qrels", "trec/qrels.txt"], message="use either INPUT, or --run together with --qrels")
case("trec_run_without_qrels", ["score", "--run", "trec/run.txt"], message="use either INPUT, or --run together with --qrels")
case("trec_with_labels", trec("trec/run.txt", "trec/qrels.txt", "--labels", "ok.jsonl"), message="--labels applies to INPUT test sets")

# ---- labels with score ----------------------------------------------------------------------------
def labelled(labels, *more):
    return score("ok.jsonl", "--labels", labels, *more)
w("labels/unknown_id.jsonl", '{"id": "q0", "mrr": 1}\n{"id": "q-typo", "mrr": 0}\n')
case("labels_unknown_id_named_before_scoring", labelled("labels/unknown_id.jsonl"),
     message="unknown_id.jsonl:2: field 'id': unknown id 'q-typo': not a sample in ok.jsonl", not_message=".tmp", absent=["out"])
w("labels/value_two.jsonl", '{"id": "q0", "mrr": 2}\n')
case("labels_value_not_binary", labelled("labels/value_two.jsonl"), message="value_two.jsonl:1: field 'mrr': a label must be 0 or 1")
w("labels/deep.jsonl", '{"id": "q0", "mrr": ' + "[" * 20000 + "]" * 20000 + "}\n")
case("labels_deep_nesting", labelled("labels/deep.jsonl"), message="deep.jsonl:1: invalid JSON: nested more than 100 levels")
w("labels/duplicate_key.jsonl", '{"id": "q0", "mrr": 1, "mrr": 0}\n')
case("labels_duplicate_key", labelled("labels/duplicate_key.jsonl"), message="field 'mrr': invalid JSON: appears twice")
w("labels/ok.jsonl", '{"id": "q0", "mrr": 1}\n{"id": "q1", "mrr": 1}\n{"id": "q2", "mrr": null}\n')
case("labels_ok", labelled("labels/ok.jsonl"), exit=0, check_output={"out/summary.json": '"ppi"'})
case("labels_label_column_not_a_metric", labelled("labels/ok.jsonl", "--label-column", "faithfulness=answer_faithfulness"),
     message="--label-column: there is no metric column 'faithfulness'")
case("labels_label_column_malformed", labelled("labels/ok.jsonl", "--label-column", "faithfulness"),
     message="'faithfulness' is not COLUMN=KEY")
w("labels/other_keys.jsonl", '{"id": "q0", "answer_faithfulness": 1}\n')
case("labels_no_matching_column", labelled("labels/other_keys.jsonl"), message="no label matches a metric column")
case("labels_checked_before_the_judge_loads", labelled("labels/unknown_id.jsonl", "-m", "faithfulness", "--judge",
     "smollm2-135m-instruct-q4_1"), message="unknown id 'q-typo'", absent=["out", ".cache/judge.sqlite"])
case("labels_missing_file", labelled("labels/nope.jsonl"), message="nope.jsonl: no such file")
w("labels/empty.jsonl", "")
case("labels_empty", labelled("labels/empty.jsonl"), message="empty.jsonl: contains no labels")
w("labels/list_label.jsonl", '{"id": "q0", "mrr": [1]}\n')
case("labels_list_value", labelled("labels/list_label.jsonl"), message="a label must be 0 or 1 (or null), got [1]")

# ---- scored runs: calibrate and compare -----------------------------------------------------------
def run_rows(values, extra=None):
    return jl([{"id": f"q{i}", "metrics": {"faithfulness": v}, "details": {}, "skipped": {}, **(extra or {})} for i, v in enumerate(values)])
w("runs/a/samples.jsonl", run_rows([0.9, 0.2, 0.7, 0.4, 0.8, 0.1]))
w("runs/b/samples.jsonl", run_rows([0.5, 0.3, 0.6, 0.2, 0.9, 0.4]))
w("runs/short/samples.jsonl", run_rows([0.5, 0.3]))
w("runs/labels.jsonl", jl([{"id": f"q{i}", "faithfulness": i % 2} for i in range(4)]))
w("runs/deep/samples.jsonl", run_rows([0.5]) + '{"id": "x", "metrics": {}, "details": ' + "{\"a\":" * 3000 + "1" + "}" * 3000 + "}\n")
case("calibrate_run_deep_nesting", ["calibrate", "runs/deep", "--labels", "runs/labels.jsonl"], message="samples.jsonl:2: invalid JSON: nested more than 100 levels")
w("runs/nan/samples.jsonl", '{"id": "q0", "metrics": {"faithfulness": NaN}}\n')
case("calibrate_run_nan_metric", ["calibrate", "runs/nan", "--labels", "runs/labels.jsonl"], message="samples.jsonl:1: invalid JSON: NaN is not a JSON number")
w("runs/dupkey/samples.jsonl", '{"id": "q0", "metrics": {"faithfulness": 0.5, "faithfulness": 0.9}}\n')
case("compare_run_duplicate_key", ["compare", "runs/a", "runs/dupkey"], message="field 'faithfulness': invalid JSON: appears twice")
w("runs/textmetric/samples.jsonl", '{"id": "q0", "metrics": {"faithfulness": "0.5"}}\n')
case("compare_run_metric_not_number", ["compare", "runs/a", "runs/textmetric"], message="field 'metrics.faithfulness': must be a finite number")
w("runs/objid/samples.jsonl", '{"id": {"q": 0}, "metrics": {"faithfulness": 0.5}}\n')
case("compare_run_object_id", ["compare", "runs/a", "runs/objid"], message="field 'id': must be a string or an integer, got an object")
case("calibrate_missing_run", ["calibrate", "runs/nope", "--labels", "runs/labels.jsonl"], message="is runs/nope a folder written by `localeval score --out`?")
w("runs/labels_unknown.jsonl", '{"id": "q99", "faithfulness": 1}\n')
case("calibrate_labels_unknown_id", ["calibrate", "runs/a", "--labels", "runs/labels_unknown.jsonl"], message="field 'id': unknown id 'q99': not a sample in runs/a/samples.jsonl")
case("calibrate_ok", ["calibrate", "runs/a", "--labels", "runs/labels.jsonl", "-q"], exit=0, check_output={"runs/a/calibration.json": '"faithfulness"'})
w("runs/edited.jsonl", run_rows([0.9, 0.2, 0.7, 0.4, 0.8, 0.1]))
case("calibrate_other_file_writes_beside_it", ["calibrate", "runs/edited.jsonl", "--labels", "runs/labels.jsonl", "-q"], exit=0,
     check_output={"runs/edited.calibration.json": '"faithfulness"'}, absent=["runs/calibration.json"])
case("compare_ok", ["compare", "runs/a", "runs/b", "--n-boot", "200", "-o", "cmp/result.json"], exit=0, check_output={"cmp/result.json": '"n_aligned": 6'})
case("compare_output_is_folder", ["compare", "runs/a", "runs/b", "-o", "runs"], message="output file runs is a folder")
case("compare_output_under_file", ["compare", "runs/a", "runs/b", "-o", "ok.jsonl/cmp.json"], message="ok.jsonl is a file, not a folder")
case("compare_lower_is_better_unknown_column", ["compare", "runs/a", "runs/b", "--lower-is-better", "latency"],
     message="--lower-is-better 'latency' is not a metric column of every run")
case("compare_different_ids", ["compare", "runs/a", "runs/short"], message="lacks 4 sample id(s)")
case("compare_negative_seed", ["compare", "runs/a", "runs/b", "--seed", "-1"], message="Invalid value for '--seed'")
case("compare_one_run", ["compare", "runs/a"], message="give at least two runs to compare")
case("compare_unknown_column", ["compare", "runs/a", "runs/b", "-m", "recall"], message="metric column 'recall' is not in")
w("runs/huge/samples.jsonl", run_rows([1e308, 0.3, 0.6, 0.2, 0.9, 0.4]))
case("compare_run_metric_too_large", ["compare", "runs/a", "runs/huge"], message="samples.jsonl:1: field 'metrics.faithfulness': 1e+308 is beyond")
case("compare_confidence_nan", ["compare", "runs/a", "runs/b", "--confidence", "nan"], message="'nan' is not a finite number")
case("calibrate_confidence_nan", ["calibrate", "runs/a", "--labels", "runs/labels.jsonl", "--confidence", "nan"],
     message="'nan' is not a finite number")
case("check_n_boot_beyond_memory", ["check", "summaries/good", "--min", "faithfulness=0.4", "--on", "ci-low", "--n-boot",
                                    "100000000000"], message="Invalid value for '--n-boot'")
case("compare_label_column_without_labels", ["compare", "runs/a", "runs/b", "--label-column", "faithfulness=x"],
     message="--label-column needs --labels")
case("compare_output_uncreatable_prints_nothing", ["compare", "runs/a", "runs/b", "-o", "ok.jsonl/cmp.json"],
     message="ok.jsonl is a file, not a folder")

# ---- a run's summary.json, hand-edited or damaged: check and report ---------------------------------
def summary(**entry):
    body = {"metric": "faithfulness", "mean": 0.5, "std": 0.3, "n": 6, "n_skipped": 0, "skipped": {}}
    body.update(entry)
    return json.dumps({"input": "in.jsonl", "n_samples": 6, "metrics": {"faithfulness": body}, "settings": {}}, indent=1)
for name, text in {"good": summary(), "text_mean": summary(mean="0.9"), "list_n": summary(n=[6]),
                   "nan": summary().replace('"mean": 0.5', '"mean": NaN'), "truncated": summary()[:60],
                   "bad_ppi": summary()[:-2] + ', "ppi": {"metrics": {"faithfulness": {"ci": "wide"}}}\n}',
                   "metric_not_name": summary(metric=5)}.items():
    w(f"summaries/{name}/samples.jsonl", run_rows([0.9, 0.2, 0.7, 0.4, 0.8, 0.1]))
    w(f"summaries/{name}/summary.json", text)
case("check_summary_ok", ["check", "summaries/good", "--min", "faithfulness=0.4"], exit=0)
w("summaries/details_text/samples.jsonl", run_rows([0.9, 0.2, 0.7, 0.4, 0.8, 0.1], {"details": "oops"}))
w("summaries/details_text/summary.json", summary())
case("report_run_details_not_an_object", ["report", "summaries/details_text", "-o", "r.html"],
     message="samples.jsonl:1: field 'details': must be an object of metric → details")
case("check_summary_mean_is_text", ["check", "summaries/text_mean", "--min", "faithfulness=0.4"],
     message="summary.json: field 'metrics.faithfulness.mean': must be a finite number or null, got '0.9'")
case("check_summary_count_is_list", ["check", "summaries/list_n", "--min", "faithfulness=0.4"],
     message="field 'metrics.faithfulness.n': must be a count")
case("check_summary_nan_names_its_line", ["check", "summaries/nan", "--min", "faithfulness=0.4"],
     message="summary.json:7: invalid JSON: NaN is not a JSON number (write null for a missing value) at column 12")
case("check_summary_truncated_names_its_line", ["check", "summaries/truncated", "--min", "faithfulness=0.4"],
     message="summary.json:5: invalid JSON: ")
case("report_summary_bad_ppi", ["report", "summaries/bad_ppi", "-o", "r.html"],
     message="field 'ppi.metrics.faithfulness.ci': must be [low, high]")
case("report_summary_metric_not_a_name", ["report", "summaries/metric_not_name", "-o", "r.html"],
     message="field 'metrics.faithfulness.metric': must be the metric's name, got 5")
case("check_other_file_is_not_a_run", ["check", "ok.jsonl", "--min", "faithfulness=0.4"],
     message="ok.jsonl: is a file, not a run folder")
case("check_samples_file_of_a_run", ["check", "summaries/good/samples.jsonl", "--min", "faithfulness=0.4"], exit=0)
case("report_labels_for_no_run", ["report", "summaries/good", "-l", "nope=labels.jsonl", "-o", "r.html"],
     message="nope is not one of the runs given (summaries/good), and there is no labels file named 'nope=labels.jsonl'")
w("runs/labels=v2.jsonl", jl([{"id": f"q{i}", "faithfulness": i % 2} for i in range(6)]))
case("report_labels_file_named_with_equals", ["report", "summaries/good", "-l", "runs/labels=v2.jsonl", "-o", "r.html"],
     exit=0, check_output={"r.html": "faithfulness"})
case("out_empty", ["score", "ok.jsonl", "-m", "mrr", "-o", "", "-q"], message="an empty path", absent=["summary.json"])

# ---- where results go, and options checked before any model loads ---------------------------------
w("prev/samples.jsonl", '{"id": "old", "question": "old?", "metrics": {}, "details": {}, "skipped": {}}\n')
w("prev/summary.json", '{"old": true}\n')
case("out_is_a_file", ["score", "ok.jsonl", "-o", "ok.jsonl", "-q"], message="output folder ok.jsonl is a file")
case("out_under_a_file", ["score", "ok.jsonl", "-o", "ok.jsonl/out", "-q"], message="cannot create output folder ok.jsonl/out: ok.jsonl is a file")
case("out_result_name_taken_by_folder", ["score", "ok.jsonl", "-o", "prev", "-q"], setup={"mkdir": ["prev/summary.csv"]},
     message="cannot write prev/summary.csv: a folder of that name is in the way", unchanged=["prev/samples.jsonl", "prev/summary.json"])
case("out_read_only_filesystem", ["score", "ok.jsonl", "-o", "ro/out", "-q"], setup={"readonly": ["ro"]},
     message="cannot create output folder ro/out: ro is not writable")
case("out_stale_temps_swept", ["score", "ok.jsonl", "-o", "prev", "-q"], exit=0,
     setup={"write": {"prev/.samples.jsonl.999999999.tmp": "half a row", "prev/.summary.json.999999999.tmp": "{"}},
     absent=["prev/.samples.jsonl.999999999.tmp", "prev/.summary.json.999999999.tmp"])
JUDGE = ["-m", "faithfulness", "--judge", "smollm2-135m-instruct-q4_1", "--threads", "1"]
case("cache_parent_is_a_file", score("ok.jsonl", *JUDGE, "--cache", "ok.jsonl/judge.sqlite"),
     message="cannot create judge cache ok.jsonl/judge.sqlite: ok.jsonl is a file")
case("cache_is_a_folder", score("ok.jsonl", *JUDGE, "--cache", "runs"), message="judge cache runs is a folder")
w("not_a_database.sqlite", "this is not SQLite\n")
case("cache_is_not_sqlite", score("ok.jsonl", *JUDGE, "--cache", "not_a_database.sqlite"), message="is not an SQLite file")
w("truncated.gguf", b"GGUF\x03\x00\x00\x00" + bytes(range(256)) * 4)
# answers whose passages name what they add to the question, so faithfulness asks the judge (and loads it)
w("judged.jsonl", jl(rec(i, answer=f"Passage {i} says it.") for i in range(2)))
case("judge_truncated_gguf", score("judged.jsonl", "-m", "faithfulness", "--judge", "truncated.gguf", "--threads", "1", "--cache", "c/judge.sqlite"),
     message="judge truncated.gguf could not be loaded by llama.cpp", absent=["out"])
case("judge_not_gguf", score("ok.jsonl", "-m", "faithfulness", "--judge", "ok.jsonl"), message="judge file ok.jsonl is not a GGUF file")
case("judge_missing_file", score("ok.jsonl", "-m", "faithfulness", "--judge", "models/none.gguf"), message="judge path models/none.gguf does not exist")
case("judge_file_is_a_fifo", score("ok.jsonl", "-m", "faithfulness", "--judge", "judge.gguf"), setup={"mkfifo": ["judge.gguf"]},
     message="judge file judge.gguf is not a regular file")
case("judge_unknown_name", score("ok.jsonl", "-m", "faithfulness", "--judge", "gpt-4"), message="'gpt-4' is not a registered judge")
case("embedder_unknown_name", score("ok.jsonl", *JUDGE, "--embedder", "bert-huge"), message="'bert-huge' is not a registered embedder")
case("prompts_folder_missing", score("ok.jsonl", *JUDGE, "--prompts", "my_prompts"), message="--prompts my_prompts: no such folder")
w("bad_prompts/en/statements.md", "name: statements\nno front matter here\n")
case("prompts_malformed_file", score("ok.jsonl", *JUDGE, "--prompts", "bad_prompts"), message="must start with a '---' front-matter line")
w("bad_template/en/statements.md", "---\nname: statements\nversion: 9\nkind: json\nmax_tokens: 10\nschema: {\"type\": \"object\"}\n---\n### user\n{{ answer \n")
case("prompts_template_syntax_error", score("ok.jsonl", *JUDGE, "--prompts", "bad_template"), message="template error")
case("unknown_metric", score("ok.jsonl", "-m", "bleu"), message="'bleu' is not a known metric")
case("metric_from_other_tool", ["score", "ok.jsonl", "-m", "map", "-o", "out"], message="did you mean 'ap'?")
case("usage_unknown_option", ["score", "ok.jsonl", "--bogus"], message="localeval score: No such option '--bogus'")
case("usage_no_input", ["score"], message="give an INPUT file, or --run and --qrels")
case("usage_n_ctx_too_small", score("ok.jsonl", "--n-ctx", "5"), message="Invalid value for '--n-ctx'")
case("usage_unknown_command", ["scroe", "ok.jsonl"], message="No such command 'scroe'")
case("usage_label_column_without_labels", score("ok.jsonl", "--label-column", "mrr=x"), message="--label-column needs --labels")
case("usage_bad_choice", score("ok.jsonl", "--ndcg-gain", "cubic"), message="Invalid value for '--ndcg-gain'")
case("input_is_a_folder", score("runs"), message="runs: is a folder, not a file")
case("input_is_a_fifo", score("pipe.jsonl"), setup={"mkfifo": ["pipe.jsonl"]}, message="pipe.jsonl: is not a regular file (a pipe or device?)")
case("input_missing", score("nope.jsonl"), message="nope.jsonl: no such file")

# ---- generate and retrieve ------------------------------------------------------------------------
w("corpus/deep.jsonl", '{"id": "d1", "text": "Some text."}\n{"id": "d2", "text": ' + "[" * 5000 + "]" * 5000 + "}\n")
case("generate_corpus_deep_nesting", ["generate", "corpus/deep.jsonl", "-o", "gen", "-q", "--cache", "c/judge.sqlite"],
     message="deep.jsonl:2: invalid JSON: nested more than 100 levels")
w("corpus/long_id.jsonl", json.dumps({"id": "x" * 3000, "text": "Some text."}) + "\n")
case("generate_corpus_long_id", ["generate", "corpus/long_id.jsonl", "-o", "gen", "-q", "--cache", "c/judge.sqlite"],
     message="long_id.jsonl:1: field 'id': is 3000 characters long")
case("generate_out_is_a_file", ["generate", "corpus/long_id.jsonl", "-o", "ok.jsonl", "-q"], message="Directory 'ok.jsonl' is a file")
case("generate_corpus_missing", ["generate", "corpus/none", "-o", "gen", "-q"], message="corpus/none: no such file")
case("retrieve_no_index", ["retrieve", "ok.jsonl", "--index", "runs", "-o", "with_contexts.jsonl"], message="runs: holds no index")
w("bad_index/chunks.faiss", b"not a faiss index")
w("bad_index/chunks.jsonl", '{"id": "d#0", "doc_id": "d", "text": "t", "index": "flat"}\n')
case("retrieve_corrupt_index", ["retrieve", "ok.jsonl", "--index", "bad_index", "-o", "with_contexts.jsonl"], message="chunks.faiss: is not a faiss index")
case("retrieve_output_is_folder", ["retrieve", "ok.jsonl", "--index", "bad_index", "-o", "runs"], message="File 'runs' is a directory")

names = [c["name"] for c in cases]
assert len(names) == len(set(names))
(ROOT / "cases.json").write_text(json.dumps({"cases": cases}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
print(len(cases), "cases,", sum(1 for _ in F.rglob("*") if _.is_file()), "files")
