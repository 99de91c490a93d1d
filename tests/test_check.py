"""`localeval check` and `assert_scores`: exit 0 when every threshold holds, 1 when one fails (with the table),
2 on bad input; `--on ci-low` uses the PPI interval where the run has labels, else a seeded bootstrap.

The runs are real `localeval score` output on tests/report_runs.py's system A (classical metrics, no model).
Its mrr by hand: en-eiffel, en-mito, en-boil and zh-wall have their relevant document at rank 1 (1 each),
zh-photo at rank 2 (1/2), en-orwell's contexts have no ids (skipped): mean (4 + 0.5) / 5 = 0.9.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from localeval.errors import InputError, OptionError
from localeval.results.runs import load_run
from localeval.stats.bootstrap import bootstrap_mean_ci
from localeval.testing import assert_scores

from .conftest import write_jsonl
from .report_runs import SYSTEM_A, classical_run, localeval

MRR_A = 0.9


@pytest.fixture(scope="module")
def run_a(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return classical_run(tmp_path_factory.mktemp("check"), SYSTEM_A, "a")


def check(*args: str):
    return localeval("check", *args, check=False)


def test_every_threshold_holds(run_a: Path) -> None:
    done = check(str(run_a), "--min", f"mrr={MRR_A}", "--min", "hit@5=1", "--max", "rouge_l.precision=0.5")
    assert done.returncode == 0, done.stderr
    assert "all 3 threshold(s) hold" in done.stdout
    assert json.loads((run_a / "summary.json").read_text())["metrics"]["mrr"]["mean"] == pytest.approx(MRR_A)


def test_a_failing_threshold_exits_1_and_says_by_how_much(run_a: Path) -> None:
    done = check(str(run_a), "--min", "mrr=0.95", "--min", "hit@5=0.5")
    assert done.returncode == 1
    rows = {line.split()[0]: line for line in done.stdout.splitlines() if line.startswith(("mrr", "hit@5"))}
    assert "FAIL" in rows["mrr"] and "-0.0500" in rows["mrr"]  # 0.9 - 0.95
    assert "pass" in rows["hit@5"] and "+0.5000" in rows["hit@5"]  # every sample with ids has a hit: 1 - 0.5
    assert "1 of 2 threshold(s) failed" in done.stdout and "mrr below 0.95 by 0.0500" in done.stdout


def test_unknown_column_is_bad_input_with_a_suggestion(run_a: Path) -> None:
    done = check(str(run_a), "--min", "ndcg@10=0.5")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert "--min ndcg@10: the run has no metric column 'ndcg@10'; did you mean 'ndcg@5'?" in done.stderr


@pytest.mark.parametrize("args, message", [
    (["--min", "mrr"], "--min 'mrr' is not NAME=VALUE"),
    (["--min", "mrr=high"], "--min mrr=high: 'high' is not a number"),
    (["--max", "mrr=nan"], "the threshold must be a finite number"),
    ([], "give at least one threshold"),
    (["--min", "mrr=0.5", "--on", "median"], "Invalid value for '--on'"),
    (["--min", "mrr=0.9", "--min", "mrr=0.5"], "--min mrr: given more than once; give each column one threshold"),
])
def test_malformed_options_exit_2(run_a: Path, args: list[str], message: str) -> None:
    done = check(str(run_a), *args)
    assert done.returncode == 2 and message in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_missing_run_exits_2(tmp_path: Path) -> None:
    done = check(str(tmp_path / "nowhere"), "--min", "mrr=0.5")
    assert done.returncode == 2
    assert done.stderr == f"error: {tmp_path / 'nowhere'}: no such folder; give a folder written by `localeval score --out`\n"
    empty = tmp_path / "empty"
    empty.mkdir()
    done = check(str(empty), "--min", "mrr=0.5")
    assert done.returncode == 2 and "summary.json: no such file" in done.stderr


def test_ci_low_uses_the_seeded_bootstrap_without_labels(run_a: Path) -> None:
    done = check(str(run_a), "--min", "mrr=0.5", "--on", "ci-low", "--n-boot", "500", "--seed", "3")
    assert done.returncode == 0, done.stderr
    # the same interval as the library's bootstrap with the same resamples and seed
    expected = bootstrap_mean_ci(load_run(run_a).columns["mrr"], "mrr", 500, 0.95, 3)
    row = next(line for line in done.stdout.splitlines() if line.startswith("mrr"))
    assert f"{expected.low:.4f}" in row and "ci-low" in row and "95% bootstrap, 500 resamples, seed 3" in row
    assert expected.low < MRR_A  # the conservative end is below the mean ...
    strict = check(str(run_a), "--min", f"mrr={MRR_A}", "--on", "ci-low", "--n-boot", "500", "--seed", "3")
    assert strict.returncode == 1  # ... so a bar the mean just meets fails on ci-low


def test_max_threshold_on_ci_low_compares_the_upper_end(run_a: Path) -> None:
    done = check(str(run_a), "--max", "rouge_l.precision=0.99", "--on", "ci-low")
    assert done.returncode == 0, done.stderr
    assert "ci-high" in done.stdout


def test_ci_low_uses_the_ppi_interval_when_the_run_has_labels(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "a.jsonl", SYSTEM_A)
    labels = write_jsonl(tmp_path / "labels.jsonl", [{"id": i, "coverage": y} for i, y in
                                                     [("en-eiffel", 1), ("en-mito", 1), ("en-boil", 0), ("zh-wall", 1)]])
    out = tmp_path / "out"
    localeval("score", str(data), "-o", str(out), "-q", "-m", "rouge_l", "--labels", str(labels),
              "--label-column", "rouge_l.recall=coverage")
    ppi = json.loads((out / "summary.json").read_text())["ppi"]["metrics"]["rouge_l.recall"]
    done = check(str(out), "--min", "rouge_l.recall=-1", "--on", "ci-low")
    row = next(line for line in done.stdout.splitlines() if line.startswith("rouge_l.recall"))
    assert done.returncode == 0 and f"{ppi['ci'][0]:.4f}" in row and "PPI, 4 labels (summary.json)" in row
    # --confidence applies to the PPI interval too: the 99% lower end, from the stored estimate and standard error
    strict = check(str(out), "--min", "rouge_l.recall=-1", "--on", "ci-low", "--confidence", "0.99")
    row = next(line for line in strict.stdout.splitlines() if line.startswith("rouge_l.recall"))
    low = ppi["estimate"] - 2.5758293035489 * ppi["std_error"]
    assert strict.returncode == 0 and f"{low:.4f}" in row and "99% PPI" in row, row
    # calibrate writes calibration.json; scoring the folder again removes it (it fitted the previous samples)
    localeval("calibrate", str(out), "--labels", str(labels), "--label-column", "rouge_l.recall=coverage", "-q")
    assert (out / "calibration.json").exists()
    localeval("score", str(data), "-o", str(out), "-q", "-m", "rouge_l")
    assert not (out / "calibration.json").exists()
    done = check(str(out), "--min", "rouge_l.recall=-1", "--on", "ci-low")
    assert "bootstrap" in done.stdout and "PPI" not in done.stdout


def test_assert_scores_for_pytest_gates(run_a: Path) -> None:
    result = assert_scores(run_a, min={"mrr": MRR_A, "hit@5": 1.0})
    assert result.passed and [c.value for c in result.checks] == pytest.approx([MRR_A, 1.0])
    with pytest.raises(AssertionError, match=r"(?s)quality gate failed:.*mrr .*FAIL.*mrr below 0.95 by 0.0500"):
        assert_scores(run_a, min={"mrr": 0.95})
    with pytest.raises(OptionError, match="did you mean 'mrr'"):
        assert_scores(run_a, min={"mmr": 0.5})
    with pytest.raises(InputError, match="no such folder"):
        assert_scores(run_a.parent / "missing", min={"mrr": 0.5})
    for confidence in (0.0, 1.5):  # the CLI's range holds in Python too
        with pytest.raises(OptionError, match=f"--confidence {confidence}: give a level between 0 and 1"):
            assert_scores(run_a, min={"mrr": 0.5}, on="ci-low", confidence=confidence)


def test_max_skipped_fails_a_column_whose_mean_leaves_out_too_many_samples(run_a: Path) -> None:
    # en-orwell's contexts have no ids: mrr skips 1 of 6 samples, and its mean of the other 5 would pass
    done = check(str(run_a), "--min", "mrr=0.5", "--min", "rouge_l.f=0")
    assert done.returncode == 0 and "mean of 5 scored samples, 1 skipped" in done.stdout, done.stdout
    done = check(str(run_a), "--min", "mrr=0.5", "--min", "rouge_l.f=0", "--max-skipped", "0.1")
    assert done.returncode == 1, done.stdout
    assert "1 of 1 threshold(s) failed" not in done.stdout and "1 of 2 threshold(s) failed" in done.stdout
    assert "failed for " in done.stdout and "mrr: 1 of 6 samples skipped (17%), more than --max-skipped 0.1" in done.stdout
    assert check(str(run_a), "--min", "mrr=0.5", "--max-skipped", "0.2").returncode == 0
    assert check(str(run_a), "--min", "mrr=0.5", "--max-skipped", "1.5").returncode == 2
    with pytest.raises(AssertionError, match="more than --max-skipped 0"):
        assert_scores(run_a, min={"mrr": 0.5}, max_skipped=0.0)
    with pytest.raises(OptionError, match="--max-skipped -1"):
        assert_scores(run_a, min={"mrr": 0.5}, max_skipped=-1)


def test_a_column_nobody_scored_fails_rather_than_passes(tmp_path: Path) -> None:
    records = [{k: v for k, v in r.items() if k != "reference_doc_ids"} for r in SYSTEM_A]  # retrieval skips all
    run = classical_run(tmp_path, records, "noref")
    done = check(str(run), "--min", "mrr=0", "--min", "rouge_l.f=0")
    assert done.returncode == 1
    assert "mrr below 0 (no sample was scored, 6 skipped)" in done.stdout
    with pytest.raises(AssertionError):
        assert_scores(run, min={"mrr": 0.0}, on="ci-low")


def test_bootstrap_interval_is_reproducible_and_brackets_the_mean() -> None:
    values = np.random.default_rng(0).random(300)
    first = bootstrap_mean_ci(values, "x", 1000, 0.95, 7)
    assert first == bootstrap_mean_ci(values, "x", 1000, 0.95, 7)
    assert first.low < values.mean() < first.high
    se = values.std() / np.sqrt(300)  # the percentile interval approaches the CLT one (±1.96 se)
    assert first.low == pytest.approx(values.mean() - 1.96 * se, abs=0.01)
    assert bootstrap_mean_ci(np.array([0.5, np.nan]), "x") is None  # one scored value: no interval


def test_a_miss_too_small_for_four_decimals_is_not_shown_as_zero() -> None:
    from localeval.cli.tables import _margin

    assert _margin(-4e-5, "+") == "-4.0e-05" and _margin(4e-5) == "4.0e-05"  # a mean of 0.84996 against 0.85
    assert _margin(-0.05, "+") == "-0.0500" and _margin(0.0, "+") == "+0.0000"
