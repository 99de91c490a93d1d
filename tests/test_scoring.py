"""End to end through the CLI and the Python API: outputs, summary statistics, errors, atomicity."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import localeval
from localeval.cli import cli
from localeval.errors import OptionError, OutputError

from .conftest import write_jsonl


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_score_example_writes_all_outputs(example_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run("score", str(example_path), "--out", str(out), "--metrics", "classical,ndcg@3")
    assert result.exit_code == 0, result.stderr
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    inputs = [json.loads(line) for line in example_path.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len(inputs) == 8
    for row, record in zip(rows, inputs):
        assert {k: row[k] for k in record} == record  # every input field kept as written
    q7 = rows[6]  # plain-string contexts and no reference_doc_ids: retrieval metrics skipped, ROUGE-L scored
    assert q7["skipped"]["mrr"] == "contexts have no ids"
    assert set(q7["metrics"]) == {"rouge_l.precision", "rouge_l.recall", "rouge_l.f"}
    q3 = rows[2]  # the only relevant doc (lit-1) was not retrieved
    assert q3["metrics"]["mrr"] == 0.0 and q3["metrics"]["recall@5"] == 0.0

    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    mrr = summary["metrics"]["mrr"]
    assert (mrr["n"], mrr["n_skipped"], mrr["skipped"]) == (7, 1, {"contexts have no ids": 1})
    per_row = [r["metrics"]["mrr"] for r in rows if "mrr" in r["metrics"]]
    assert mrr["mean"] == pytest.approx(sum(per_row) / len(per_row), abs=1e-12)
    assert summary["settings"]["ndcg@3"]["gain"] == "linear"
    assert summary["versions"]["localeval"] == localeval.__version__

    with (out / "summary.csv").open(encoding="utf-8") as handle:
        table = {row["metric"]: row for row in csv.DictReader(handle)}
    assert float(table["mrr"]["mean"]) == mrr["mean"]
    assert "ndcg@3" in result.stdout and "rouge_l.f" in result.stdout
    assert "skipped for precision@5, recall@5, hit@5, mrr, ap, ndcg@5, ndcg@3: 1 contexts have no ids" in result.stdout
    assert not list(out.glob(".*.tmp"))


def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path: Path) -> None:
    records = [{"id": i, "question": "q", "contexts": [{"id": "d", "text": "t"}], "reference_doc_ids": ["d"]} for i in range(300)]
    records.append({"id": 300, "question": "q", "contexts": [{"id": "d", "text": 5}]})
    path = write_jsonl(tmp_path / "bad.jsonl", records)
    out = tmp_path / "out"
    result = run("score", str(path), "--out", str(out), "--metrics", "mrr")
    assert result.exit_code == 2
    assert result.stderr == f"error: {path}:301: field 'contexts[0].text': must be a string, got a number\n"
    assert not out.exists() or not any(out.iterdir())


def test_unknown_metric_is_a_clear_error(example_path: Path, tmp_path: Path) -> None:
    result = run("score", str(example_path), "--out", str(tmp_path), "--metrics", "mrr,bleu")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: 'bleu' is not a known metric; use one of precision@K")
    assert result.stderr.count("\n") == 1


def test_rerun_gives_identical_files(example_path: Path, tmp_path: Path) -> None:
    for name in ("a", "b"):
        assert run("score", str(example_path), "--out", str(tmp_path / name), "-q").exit_code == 0
    assert (tmp_path / "a" / "samples.jsonl").read_bytes() == (tmp_path / "b" / "samples.jsonl").read_bytes()
    a = json.loads((tmp_path / "a" / "summary.json").read_text())
    b = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert a["metrics"] == b["metrics"]


def test_python_api_mirrors_cli(example_path: Path, tmp_path: Path) -> None:
    records = [json.loads(line) for line in example_path.read_text(encoding="utf-8").splitlines()]
    result = localeval.evaluate(records, metrics=["mrr", "rouge_l"])
    assert run("score", str(example_path), "--out", str(tmp_path), "-m", "mrr,rouge_l", "-q").exit_code == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert result.summary["metrics"] == summary["metrics"]
    assert result.means["mrr"] == summary["metrics"]["mrr"]["mean"]
    assert [r["id"] for r in result.rows] == [r["id"] for r in records]


def test_api_rejects_duplicates_with_item_number() -> None:
    with pytest.raises(localeval.InputError, match=r"<samples>:2: field 'id': duplicate id 'a'"):
        localeval.evaluate([{"id": "a", "question": "q"}, {"id": "a", "question": "q"}])


def test_metric_with_no_scored_sample_reports_null_not_nan() -> None:
    result = localeval.evaluate([{"id": 1, "question": "q"}], metrics="mrr")
    entry = result.summary["metrics"]["mrr"]
    assert (entry["mean"], entry["std"], entry["n"], entry["skipped"]) == (None, None, 0, {"missing field 'contexts'": 1})


def test_trec_run_and_qrels(tmp_path: Path) -> None:
    run_file = tmp_path / "run.trec"
    run_file.write_text("1 Q0 d1 1 2.0 sys\n1 Q0 d2 2 1.0 sys\n2 Q0 d3 1 1.0 sys\n9 Q0 d1 1 1.0 sys\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 d2 1\n2 0 d3 1\n3 0 d1 1\n")
    out = tmp_path / "out"
    result = run("score", "--run", str(run_file), "--qrels", str(qrels), "--out", str(out), "-m", "mrr,hit@1")
    assert result.exit_code == 0, result.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_samples"] == 2
    assert summary["metrics"]["mrr"]["mean"] == pytest.approx((1 / 2 + 1) / 2)  # q1: d2 at rank 2; q2: d3 at rank 1
    assert summary["metrics"]["hit@1"]["mean"] == pytest.approx(0.5)


def test_score_needs_input_or_run(tmp_path: Path) -> None:
    result = run("score", "--out", str(tmp_path))
    assert result.exit_code == 2 and "give an INPUT file" in result.stderr


def test_score_with_labels_adds_prediction_powered_estimates(example_path: Path, tmp_path: Path) -> None:
    labels = write_jsonl(tmp_path / "labels.jsonl", [{"id": q, "coverage": y} for q, y in
                                                     [("q1", 1), ("q2", 1), ("q3", 0), ("q5", 1), ("q8", 0)]])
    out = tmp_path / "out"
    result = run("score", str(example_path), "--out", str(out), "-m", "rouge_l", "--labels", str(labels),
                 "--label-column", "rouge_l.recall=coverage")
    assert result.exit_code == 0, result.stderr
    block = json.loads((out / "summary.json").read_text())["ppi"]["metrics"]["rouge_l.recall"]
    assert (block["n_labeled"], block["n_unlabeled"]) == (5, 3)
    assert block["ci"][0] <= block["estimate"] <= block["ci"][1]
    assert "PPI estimate" in result.stdout


def test_a_classifier_no_chosen_metric_asks_is_refused(example_path: Path, tmp_path: Path) -> None:
    # checked before the folder is read: the metrics alone say the classifier would never be asked
    result = run("score", str(example_path), "--out", str(tmp_path / "out"), "-m", "rouge_l,exact_match",
                 "--classifier", str(tmp_path / "clf"))
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: --classifier {tmp_path / 'clf'}: no metric chosen (rouge_l, exact_match)")
    assert "passage_relevance" in line and "faithfulness" in line
    with pytest.raises(OptionError, match="takes a classifier's verdicts"):
        localeval.build_metrics("ndcg@10", localeval.MetricOptions(judge=localeval.JudgeOptions(classifier="c")))


def test_an_input_field_named_like_a_metric_column_keeps_both_values_in_the_tables(tmp_path: Path) -> None:
    """A Ragas export (or localeval's own samples.csv) scored again holds a column a metric writes too."""
    import pyarrow.parquet as pq

    data = tmp_path / "ragas_result.csv"
    data.write_text("user_input,response,reference,exact_match\nWho?,Orwell,Orwell,0.5\nWhen?,1949,1948,0.25\n",
                    encoding="utf-8")
    out = tmp_path / "out"
    result = run("score", str(data), "-m", "exact_match", "-o", str(out), "--table", "csv", "--table", "parquet", "-q")
    assert result.exit_code == 0, result.stderr
    with (out / "samples.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["input.exact_match"], r["exact_match"]) for r in rows] == [("0.5", "1.0"), ("0.25", "0.0")]
    table = pq.read_table(out / "samples.parquet").to_pydict()
    assert (table["input.exact_match"], table["exact_match"]) == (["0.5", "0.25"], [1.0, 0.0])


def test_a_table_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    from localeval.results.tables import write_table

    rows = write_jsonl(tmp_path / "rows.jsonl", [{"id": "1", "metrics": {"x": 1.0}}])
    for fmt in ("csv", "parquet"):
        with pytest.raises(OutputError, match=f"cannot write {tmp_path / 'gone' / 'samples'}"):
            write_table(rows, fmt, ["id"], ["x"], tmp_path / "gone" / f"samples.{fmt}")


def test_summary_csv_keeps_skip_reasons_that_hold_separators(tmp_path: Path) -> None:
    from localeval.results.writer import summary_csv

    skipped = {"judge error: HTTP 400: n_ctx=4096; prompt has 5000 tokens": 2, "the answer is empty": 1}
    text = summary_csv({"faithfulness": {"mean": 0.5, "std": 0.1, "n": 3, "n_skipped": 3, "skipped": skipped},
                        "mrr": {"mean": None, "std": None, "n": 0, "n_skipped": 0, "skipped": {}}})
    rows = list(csv.DictReader(text.splitlines()))
    assert json.loads(rows[0]["skipped"]) == skipped and rows[1]["skipped"] == ""


def test_a_live_progress_line_is_cleared_to_its_end_and_ended_before_anything_else_is_printed() -> None:
    import io

    from localeval import progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    bar = progress.Progress(10, stream=screen)
    bar.advance(3)
    assert screen.getvalue().startswith("\r") and screen.getvalue().endswith(progress.CLEAR_TO_END)
    progress.end_line(screen)  # an error now starts a line of its own
    progress.end_line(screen)  # and only one newline, however many say so
    bar.close()
    assert screen.getvalue().endswith(progress.CLEAR_TO_END + "\n")


def test_bad_labels_stop_the_run_before_anything_is_written(example_path: Path, tmp_path: Path) -> None:
    labels = write_jsonl(tmp_path / "labels.jsonl", [{"id": "q1", "rouge_l.recall": 1}, {"id": "q2", "rouge_l.recall": 7}])
    out = tmp_path / "out"
    result = run("score", str(example_path), "--out", str(out), "-m", "rouge_l", "--labels", str(labels))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {labels}:2: field 'rouge_l.recall'")
    assert not (out / "summary.json").exists() and not list(out.glob(".*"))
