"""--verdict-threshold fitted by `localeval calibrate` on the relevance a test set's reference_doc_ids give
its chunks, then used by `localeval score`: by hand on a written run, and end to end with the real tiny
judge (the re-score reads every verdict from the cache)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from localeval.cli import cli
from tests.conftest import write_jsonl

TINY = "smollm2-135m-instruct-q4_1"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), obj={"debug": False})


def written_run(folder: Path) -> Path:
    """A run as `localeval score` writes it, with chunk probabilities chosen by hand."""
    folder.mkdir()
    ctx = [{"id": "a1", "text": "A one."}, {"id": "a2", "text": "A two."}]
    write_jsonl(folder / "samples.jsonl", [
        {"id": "A", "question": "q?", "reference": "r", "contexts": ctx, "reference_doc_ids": ["a1"],
         "metrics": {"context_precision": 1.0, "passage_relevance": 0.35},
         "details": {"context_precision": {"useful": [{"p": 0.9, "relevant": True}, {"p": 0.7, "relevant": True}]},
                     "passage_relevance": {"passages": [{"id": "a1", "rank": 1, "p": 0.4, "relevant": False},
                                                        {"id": "a2", "rank": 2, "p": 0.3, "relevant": False}]}}},
        {"id": "B", "question": "q?", "reference": "r", "contexts": [{"id": "b1", "text": "B one."},
                                                                    {"id": "b2", "text": "B two."}],
         "reference_doc_ids": {"b1": 0, "b2": 2},
         "metrics": {"context_precision": 1.0},
         "details": {"context_precision": {"useful": [{"p": 0.6, "relevant": True}, {"p": 0.8, "relevant": True}]}}},
        # no relevant document named: unjudged, left out (else its chunks would all count as irrelevant)
        {"id": "C", "question": "q?", "reference": "r", "contexts": ctx, "reference_doc_ids": [],
         "metrics": {"context_precision": 1.0},
         "details": {"context_precision": {"useful": [{"p": 0.1, "relevant": False}, {"p": 0.95, "relevant": True}]}}},
        # contexts without ids cannot be matched to reference_doc_ids
        {"id": "D", "question": "q?", "reference": "r", "contexts": ["x", "y"], "reference_doc_ids": ["a1"],
         "metrics": {"context_precision": 1.0},
         "details": {"context_precision": {"useful": [{"p": 0.1, "relevant": False}, {"p": 0.95, "relevant": True}]}}},
    ])
    return folder


def test_calibrate_fits_the_chunk_threshold_on_reference_doc_ids(tmp_path: Path) -> None:
    run = written_run(tmp_path / "run")
    result = invoke("calibrate", str(run))
    assert result.exit_code == 0, result.output
    report = json.loads((run / "calibration.json").read_text())["verdict_thresholds"]
    precision = report["context_precision"]
    # chunks of A and B: relevant P 0.9, 0.8; not relevant 0.7, 0.6. At 0.5 all are yes (balanced accuracy
    # 0.5); the midpoint 0.75 splits them exactly (by hand).
    assert (precision["n_chunks"], precision["n_relevant"], precision["n_samples"]) == (4, 2, 2)
    assert precision["agreement"]["at_0.5"]["balanced_accuracy"] == 0.5
    assert precision["agreement"]["threshold"] == 0.75
    assert precision["agreement"]["at_chosen"]["balanced_accuracy"] == 1.0
    # passage_relevance of A: relevant 0.4, not 0.3; at 0.5 both are no
    assert report["passage_relevance"]["agreement"]["threshold"] == 0.35
    assert "--verdict-threshold context_precision=0.75,passage_relevance=0.35" in result.output


def test_nothing_to_calibrate_and_bad_details_are_one_line_errors(tmp_path: Path) -> None:
    run = tmp_path / "bare"
    run.mkdir()
    write_jsonl(run / "samples.jsonl", [{"id": "A", "question": "q?", "metrics": {"mrr": 1.0}}])
    result = invoke("calibrate", str(run))
    assert result.exit_code == 2
    assert result.output.startswith(f"error: nothing to calibrate in {run / 'samples.jsonl'}: give --labels FILE")
    assert result.output.count("\n") == 1

    bad = written_run(tmp_path / "bad")
    lines = (bad / "samples.jsonl").read_text().splitlines()
    record = json.loads(lines[1])
    record["details"]["context_precision"]["useful"][1]["p"] = "high"
    lines[1] = json.dumps(record)
    (bad / "samples.jsonl").write_text("\n".join(lines) + "\n")
    result = invoke("calibrate", str(bad))
    assert result.exit_code == 2
    assert result.output == (f"error: {bad / 'samples.jsonl'}:2: field 'details.context_precision.useful': "
                             "entry 1: 'p' must be a probability, got 'high'\n")


@pytest.mark.model(TINY)
def test_the_fitted_threshold_rescores_from_the_cache_with_the_real_judge(tmp_path: Path) -> None:
    records = [
        {"id": i, "question": question, "reference": reference, "reference_doc_ids": [f"{i}-own"],
         "contexts": [{"id": f"{i}-own", "text": own}, {"id": f"{i}-other", "text": other}]}
        for i, (question, reference, own, other) in enumerate([
            ("When was the Eiffel Tower completed?", "In 1889.", "The Eiffel Tower was completed in 1889.",
             "The Louvre is a museum in Paris."),
            ("What is the capital of Japan?", "Tokyo.", "Tokyo is the capital of Japan.",
             "Mount Fuji is the highest mountain in Japan."),
            ("Who wrote Hamlet?", "William Shakespeare.", "Hamlet is a tragedy by William Shakespeare.",
             "The Globe Theatre was rebuilt in 1997."),
        ])]
    data = write_jsonl(tmp_path / "set.jsonl", records)
    common = ["--metrics", "context_precision,passage_relevance", "--judge", TINY, "--threads", "1",
              "--cache", str(tmp_path / "c.sqlite")]
    first = invoke("score", str(data), "-o", str(tmp_path / "first"), *common)
    assert first.exit_code == 0, first.output
    calibrated = invoke("calibrate", str(tmp_path / "first"), "-q")
    assert calibrated.exit_code == 0, calibrated.output
    fitted = json.loads((tmp_path / "first" / "calibration.json").read_text())["verdict_thresholds"]
    flag = ",".join(fitted[m]["verdict_threshold"] for m in ("context_precision", "passage_relevance"))
    # score's lines under its table say at 0.5 what calibrate measured there
    for metric in ("context_precision", "passage_relevance"):
        c = fitted[metric]["agreement"]["at_0.5"]["confusion"]
        assert (f"{metric}: at threshold 0.500 the chunk verdicts agree with reference_doc_ids in bacc "
                f"{fitted[metric]['agreement']['at_0.5']['balanced_accuracy']:.3f} (yes to {c['tp'] + c['fp']} of 6 "
                f"chunks; 3 relevant)") in first.output
    assert f"to fit the threshold on these chunks: localeval calibrate {tmp_path / 'first'}" in first.output

    second = invoke("score", str(data), "-o", str(tmp_path / "second"), "--verdict-threshold", flag, *common, "-q")
    assert second.exit_code == 0, second.output
    assert "chunk verdicts" not in second.output  # -q: no table, no lines under it
    summary = json.loads((tmp_path / "second" / "summary.json").read_text())
    given = {m: float(fitted[m]["verdict_threshold"].split("=")[1]) for m in ("context_precision", "passage_relevance")}
    for metric, threshold in given.items():
        assert threshold == pytest.approx(fitted[metric]["agreement"]["threshold"], abs=1e-7)
        assert summary["settings"][metric]["threshold"] == threshold
        assert summary["judge"]["usage"][metric]["calls"] == 0  # every verdict from the cache
    rows = [json.loads(line) for line in (tmp_path / "second" / "samples.jsonl").read_text().splitlines()]
    t = given["context_precision"]
    for row in rows:
        assert [u["relevant"] for u in row["details"]["context_precision"]["useful"]] == \
               [u["p"] >= t for u in row["details"]["context_precision"]["useful"]]
    before = [json.loads(line) for line in (tmp_path / "first" / "samples.jsonl").read_text().splitlines()]
    assert [r["metrics"]["context_precision"] for r in rows] != [r["metrics"]["context_precision"] for r in before]
    # the fitted threshold does on these chunks what calibrate said it would
    again = invoke("calibrate", str(tmp_path / "second"), "-q")
    assert again.exit_code == 0
    refit = json.loads((tmp_path / "second" / "calibration.json").read_text())["verdict_thresholds"]
    assert refit["context_precision"]["agreement"]["threshold"] == pytest.approx(t, abs=1e-7)
    if t != 0.5:  # scored at the fitted threshold (the flag's 7 decimals): the run's own figures are the fitted ones
        at_run, at_chosen = dict(refit["context_precision"]["at_run"]), dict(refit["context_precision"]["agreement"]["at_chosen"])
        assert at_run.pop("threshold") == pytest.approx(at_chosen.pop("threshold"), abs=1e-7) and at_run == at_chosen


def test_a_run_scored_at_another_threshold_gets_its_figures_there(tmp_path: Path) -> None:
    """What the run's own counts rest on: summary.json says context_precision was scored at 0.65."""
    run = written_run(tmp_path / "run")
    (run / "summary.json").write_text(json.dumps({"metrics": {}, "settings": {
        "context_precision": {"threshold": 0.65}, "passage_relevance": {"threshold": 0.5}}}))
    result = invoke("calibrate", str(run))
    assert result.exit_code == 0, result.output
    report = json.loads((run / "calibration.json").read_text())["verdict_thresholds"]
    # relevant P 0.9, 0.8 are yes at 0.65; not relevant 0.7 is yes, 0.6 is no: recalls 1 and 1/2 (by hand)
    at_run = report["context_precision"]["at_run"]
    assert (at_run["threshold"], at_run["balanced_accuracy"], at_run["judge_positive_rate"]) == (0.65, 0.75, 0.75)
    assert "at_run" not in report["passage_relevance"]  # scored at 0.5: the 0.5 figures already say it
    assert "context_precision: this run was scored at 0.650: bacc 0.7500, yes 0.7500" in result.output


def test_score_says_how_the_chunk_verdicts_agree_at_the_run_threshold(tmp_path: Path) -> None:
    """The lines `score` prints under its table, on the hand-written chunks, at the run's own thresholds."""
    from localeval.cli.tables import calibrate_hint
    from localeval.results.verdicts import chunk_verdicts
    from localeval.stats.calibration import verdict_threshold_report

    run = written_run(tmp_path / "run")
    chunks = chunk_verdicts(run)
    report = verdict_threshold_report(chunks, {"context_precision": 0.65})
    # context_precision at 0.65: relevant 0.9, 0.8 yes; not relevant 0.7 yes, 0.6 no (by hand)
    at_run = report["context_precision"]["at_run"]
    assert (at_run["balanced_accuracy"], at_run["judge_positive_rate"]) == (0.75, 0.75)
    assert calibrate_hint(run, report) == "\n".join([
        "context_precision: at threshold 0.650 the chunk verdicts agree with reference_doc_ids in bacc 0.750 "
        "(yes to 3 of 4 chunks; 2 relevant)",
        "passage_relevance: at threshold 0.500 the chunk verdicts agree with reference_doc_ids in bacc 0.500 "
        "(yes to 0 of 2 chunks; 1 relevant)",
        f"to fit the threshold on these chunks: localeval calibrate {run}"])
    # chunks of one kind only say nothing about a threshold: no line; none at all: no hint
    chunks["passage_relevance"].relevant = [1, 1]
    lines = calibrate_hint(run, verdict_threshold_report(chunks, {})).splitlines()
    assert [line.split(":")[0] for line in lines[:-1]] == ["context_precision"]
    assert calibrate_hint(run, {}) == ""
