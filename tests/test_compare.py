"""Agreement statistics, threshold choice, run comparison, label files, and the calibrate/compare commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result

from localeval.stats.agreement import agreement, auroc, choose_threshold, confusion_matrix
from localeval.stats.calibration import ppi_summary
from localeval.cli.calibrate import calibrate
from localeval.cli.compare import compare
from localeval.stats.compare import compare_runs, paired_bootstrap_means
from localeval.errors import InputError
from localeval.data.labels import load_labels
from localeval.results.runs import load_run
from tests.conftest import make_run, write_jsonl

# Hand-worked example. At t = 0.5 the judge says yes to samples 0, 1, 4, 6:
# TP = {0, 1, 6} = 3, FP = {4} = 1, FN = {2} = 1, TN = {3, 5, 7} = 3.
LABELS = [1, 1, 1, 0, 0, 0, 1, 0]
SCORES = [0.9, 0.6, 0.4, 0.2, 0.7, 0.1, 0.8, 0.3]


def test_agreement_by_hand() -> None:
    a = agreement(LABELS, SCORES)
    assert (a.confusion.tp, a.confusion.fp, a.confusion.fn, a.confusion.tn) == (3, 1, 1, 3)
    assert a.accuracy == 0.75  # 6 / 8
    assert a.balanced_accuracy == 0.75  # (3/4 + 3/4) / 2
    assert a.kappa == pytest.approx(0.5)  # p_o = .75, p_e = (4·4 + 4·4) / 64 = .5 → (.75 − .5) / .5
    assert confusion_matrix(LABELS, SCORES, 0.6).tp == 3  # a score equal to the threshold is positive


def test_threshold_choice_by_hand() -> None:
    # Only t in (0.3, 0.4] catches sample 2 without adding a false positive: TPR 4/4, TNR 3/4 → 0.875.
    choice = choose_threshold(LABELS, SCORES)
    assert choice.threshold == pytest.approx(0.35)
    assert choice.at_chosen.balanced_accuracy == 0.875
    assert choice.at_default.balanced_accuracy == 0.75


def test_threshold_ties_go_to_nearest_half_then_lower() -> None:
    assert choose_threshold([1, 0], [0.8, 0.2]).threshold == 0.5  # anything in (0.2, 0.8] is perfect
    # 0.25 and 0.75 both give (1 + 1/2)/2 = 0.75 and are equally far from 0.5: the lower one wins
    assert choose_threshold([1, 0, 1, 0], [0.9, 0.6, 0.4, 0.1]).threshold == 0.25


def test_kappa_undefined_when_both_raters_use_one_class() -> None:
    a = agreement([1, 1, 1], [0.9, 0.8, 0.7])
    assert a.kappa is None and a.accuracy == 1.0 and a.balanced_accuracy == 1.0


def test_agreement_matches_sklearn_on_random_data() -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(5)
    y = (rng.random(300) < 0.3).astype(int)
    s = np.clip(0.5 * y + 0.6 * rng.random(300), 0, 1)
    a = agreement(y, s, 0.55)
    predicted = (s >= 0.55).astype(int)
    assert a.balanced_accuracy == pytest.approx(metrics.balanced_accuracy_score(y, predicted), abs=1e-12)
    assert a.kappa == pytest.approx(metrics.cohen_kappa_score(y, predicted), abs=1e-12)
    (tn, fp), (fn, tp) = metrics.confusion_matrix(y, predicted)
    assert (a.confusion.tn, a.confusion.fp, a.confusion.fn, a.confusion.tp) == (tn, fp, fn, tp)
    tied = np.round(s, 1)  # ties count one half, as sklearn's trapezoids do
    assert auroc(y, tied) == pytest.approx(metrics.roc_auc_score(y, tied), abs=1e-12)


def test_auroc_by_hand() -> None:
    # positives 0.9, 0.5; negatives 0.5, 0.1: pairs (0.9>0.5) (0.9>0.1) (0.5=0.5 → ½) (0.5>0.1) → 3.5 / 4
    assert auroc([1, 1, 0, 0], [0.9, 0.5, 0.5, 0.1]) == 0.875
    assert auroc([1, 1], [0.2, 0.8]) is None


def test_identical_runs_are_not_distinguishable(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    values = {"faithfulness": list(rng.random(50))}
    runs = [load_run(make_run(tmp_path / name, values), name) for name in ("a", "b")]
    result = compare_runs(runs, n_boot=1000)
    (pair,) = result.columns[0].pairs
    assert pair.diff == 0.0 and pair.low == 0.0 and pair.high == 0.0 and pair.better is None
    assert result.columns[0].ranks == {"a": 1, "b": 1}


def test_clear_difference_is_ranked_and_noise_is_not(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    base, other = rng.random(200), rng.random(200)
    # "same": each run's values are a reordering of the others', so every paired mean difference is 0
    # while the per-sample differences are large
    good = make_run(tmp_path / "good", {"m": list(np.clip(base + 0.2, 0, 1)), "same": list(other[::-1])})
    bad = make_run(tmp_path / "bad", {"m": list(base), "same": list(other)})
    mid = make_run(tmp_path / "mid", {"m": list(np.clip(base + 0.1, 0, 1)), "same": list(np.roll(other, 7))})
    runs = [load_run(p, p.name) for p in (bad, good, mid)]
    result = compare_runs(runs, n_boot=2000, seed=3)
    by_column = {c.column: c for c in result.columns}
    assert by_column["m"].ranks == {"good": 1, "mid": 2, "bad": 3}
    assert all(p.better is not None for p in by_column["m"].pairs)
    assert all(p.better is None and p.low < 0 < p.high for p in by_column["same"].pairs)
    assert set(by_column["same"].ranks.values()) == {1}


def test_bootstrap_interval_is_close_to_the_normal_one_and_reproducible() -> None:
    rng = np.random.default_rng(2)
    d = rng.normal(0.1, 1.0, 400)[None, :]
    means = paired_bootstrap_means(d, 10_000, np.random.default_rng(9))
    low, high = np.quantile(means[0], [0.025, 0.975])
    se = d.std() / np.sqrt(400)  # the CLT interval the percentile interval should approach
    assert low == pytest.approx(d.mean() - 1.96 * se, abs=0.015)
    assert high == pytest.approx(d.mean() + 1.96 * se, abs=0.015)
    assert np.array_equal(means, paired_bootstrap_means(d, 10_000, np.random.default_rng(9)))


def test_skipped_samples_are_dropped_from_every_run(tmp_path: Path) -> None:
    a = load_run(make_run(tmp_path / "a", {"m": [0.1, 0.2, None, 0.4]}), "a")
    b = load_run(make_run(tmp_path / "b", {"m": [0.1, None, 0.3, 0.4]}), "b")
    column = compare_runs([a, b], n_boot=200).columns[0]
    assert (column.n, column.n_dropped) == (2, 2)


def test_no_sample_scored_in_every_run_is_no_difference_not_a_difference_of_0(tmp_path: Path) -> None:
    a = load_run(make_run(tmp_path / "a", {"m": [0.1, None]}), "a")
    b = load_run(make_run(tmp_path / "b", {"m": [None, 0.9]}), "b")
    column = compare_runs([a, b], n_boot=200).columns[0]
    (pair,) = column.pairs
    assert column.n == 0 and pair.diff is None and pair.better is None and pair.method == "no sample scored in every run"
    json.dumps(compare_runs([a, b], n_boot=200).as_dict(), allow_nan=False)


def test_labels_of_one_kind_get_a_ppi_estimate_and_no_fitted_threshold(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", {"faithfulness": [0.2, 0.4, 0.9, 0.7, 0.8]})
    labels = write_jsonl(tmp_path / "labels.jsonl", [{"id": f"q{i}", "faithfulness": 1} for i in range(3)])
    result = invoke(calibrate, str(run), "--labels", str(labels))
    assert result.exit_code == 0, result.output
    entry = json.loads((run / "calibration.json").read_text())["metrics"]["faithfulness"]
    assert "agreement" not in entry and entry["error"].startswith("all 3 labels are 1: agreement and a threshold need")
    assert entry["ppi"]["n_labeled"] == 3 and "PPI estimate" in result.output


def test_missing_ids_are_named(tmp_path: Path) -> None:
    a = load_run(make_run(tmp_path / "a", {"m": [0.1, 0.2, 0.3]}), "a")
    b = load_run(make_run(tmp_path / "b", {"m": [0.1, 0.2]}, ids=["q0", "q1"]), "b")
    with pytest.raises(InputError, match=r"lacks 1 sample id\(s\) of .*'q2'"):
        compare_runs([a, b])


def test_compare_uses_ppi_when_both_runs_have_labels(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    n = 120
    truth_a, truth_b = (rng.random(n) < 0.8).astype(int), (rng.random(n) < 0.4).astype(int)
    judge_a, judge_b = np.clip(truth_a * 0.7 + 0.3 * rng.random(n), 0, 1), np.clip(truth_b * 0.7 + 0.3 * rng.random(n), 0, 1)
    runs = [load_run(make_run(tmp_path / "a", {"m": list(judge_a)}), "a"),
            load_run(make_run(tmp_path / "b", {"m": list(judge_b)}), "b")]
    labels = {}
    for run, truth in zip(runs, (truth_a, truth_b)):
        path = write_jsonl(tmp_path / f"{run.name}.labels.jsonl", [{"id": f"q{i}", "m": int(truth[i])} for i in range(40)])
        labels[run.name] = load_labels(path, run)
    (pair,) = compare_runs(runs, n_boot=500, labels=labels).columns[0].pairs
    assert pair.method == "ppi" and pair.n_labeled == 40 and pair.better == "a"


@pytest.mark.parametrize(("line", "expected"), [
    ('{"id": "q0", "m": 2}', "labels.jsonl:2: field 'm': a label must be 0 or 1 (or null), got 2"),
    ('{"id": "q0", "m": "yes"}', "labels.jsonl:2: field 'm': a label must be 0 or 1 (or null), got 'yes'"),
    ('{"id": "zz", "m": 1}', "labels.jsonl:2: field 'id': unknown id 'zz': not a sample in"),
    ('{"id": "q0", "m": 1', "labels.jsonl:2: invalid JSON"),
    ('{"id": "q1", "m": 1}', "labels.jsonl:2: field 'id': duplicate id 'q1' (first used on line 1)"),
])
def test_bad_label_lines_name_file_line_and_field(tmp_path: Path, line: str, expected: str) -> None:
    run = load_run(make_run(tmp_path / "run", {"m": [0.1, 0.9, 0.5]}))
    path = write_jsonl(tmp_path / "labels.jsonl", ['{"id": "q1", "m": 1}', line])
    with pytest.raises(InputError) as caught:
        load_labels(path, run)
    assert expected in str(caught.value) and "\n" not in str(caught.value)


def test_labels_with_ares_names_and_extra_fields(tmp_path: Path) -> None:
    run = load_run(make_run(tmp_path / "run", {"faithfulness": [0.1, 0.9, 0.5]}))
    path = write_jsonl(tmp_path / "gold.jsonl", [{"id": "q0", "question": "x", "answer_faithfulness": 0},
                                                 {"id": "q1", "question": "y", "answer_faithfulness": None}])
    labels = load_labels(path, run, {"faithfulness": "answer_faithfulness"})
    assert labels.by_column == {"faithfulness": {"q0": 0}} and labels.ignored_fields == ["question"]
    with pytest.raises(InputError, match="no label matches a metric column"):
        load_labels(path, run)


def test_one_label_key_mapped_onto_two_columns_labels_both_from_that_key(tmp_path: Path) -> None:
    """--label-column exact_match=human --label-column token_f1=human: one human verdict for both columns,
    never the file's own exact_match key for one of them."""
    run = load_run(make_run(tmp_path / "run", {"exact_match": [0.0, 1.0, 1.0], "token_f1": [0.2, 0.9, 0.8]}))
    path = write_jsonl(tmp_path / "labels.jsonl", [{"id": f"q{i}", "human": i % 2, "exact_match": 1 - i % 2}
                                                   for i in range(3)])
    labels = load_labels(path, run, {"exact_match": "human", "token_f1": "human"})
    assert labels.by_column == {"exact_match": {"q0": 0, "q1": 1, "q2": 0}, "token_f1": {"q0": 0, "q1": 1, "q2": 0}}
    assert labels.ignored_fields == ["exact_match"]


def _ppi_run(tmp_path: Path, n: int = 300, n_labels: int = 100) -> tuple[Path, Path, np.ndarray]:
    rng = np.random.default_rng(8)
    truth = (rng.random(n) < 0.6).astype(int)
    judge = np.clip(0.8 * truth + 0.3 * rng.random(n), 0, 1)
    run = make_run(tmp_path / "run", {"faithfulness": [float(v) for v in judge], "rouge_l.f": list(rng.random(n))})
    labels = write_jsonl(tmp_path / "labels.jsonl", [{"id": f"q{i}", "faithfulness": int(truth[i])} for i in range(n_labels)])
    return run, labels, truth


def invoke(command: Any, *args: str) -> Result:
    return CliRunner().invoke(command, list(args), obj={"debug": False}, catch_exceptions=False)


def test_calibrate_command_writes_report(tmp_path: Path) -> None:
    run, labels, truth = _ppi_run(tmp_path)
    result = invoke(calibrate, str(run), "--labels", str(labels))
    assert result.exit_code == 0, result.output
    assert "faithfulness" in result.output and "PPI estimate" in result.output
    report = json.loads((run / "calibration.json").read_text())["metrics"]["faithfulness"]
    assert report["n_labels"] == 100 and report["ppi"]["n_unlabeled"] == 200
    low, high = report["ppi"]["ci"]
    assert low <= truth.mean() <= high
    assert high - low <= report["ppi"]["classical_ci"][1] - report["ppi"]["classical_ci"][0]
    assert report["agreement"]["at_0.5"]["confusion"]["tp"] >= 0


def test_ppi_summary_block(tmp_path: Path) -> None:
    run, labels, _ = _ppi_run(tmp_path)
    block = ppi_summary(run / "samples.jsonl", load_labels(labels, load_run(run)))
    assert set(block["metrics"]) == {"faithfulness"}
    entry = block["metrics"]["faithfulness"]
    assert {"estimate", "ci", "classical_ci", "naive_judge_mean", "lambda"} <= set(entry)
    json.dumps(block, allow_nan=False)


def test_calibrate_bad_label_is_one_line_exit_2(tmp_path: Path) -> None:
    run, _, _ = _ppi_run(tmp_path)
    bad = write_jsonl(tmp_path / "bad.jsonl", ['{"id": "q0", "faithfulness": 0.7}'])
    result = CliRunner().invoke(calibrate, [str(run), "--labels", str(bad)], obj={"debug": False})
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {bad}:1: field 'faithfulness': a label must be 0 or 1 (or null), got 0.7"


def test_compare_command(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    base = rng.random(100)
    a = make_run(tmp_path / "a", {"m": list(base)})
    b = make_run(tmp_path / "b", {"m": list(base)})
    c = make_run(tmp_path / "c", {"m": list(np.clip(base - 0.3, 0, 1))})
    out = tmp_path / "cmp.json"
    result = invoke(compare, str(a), str(b), str(c), "--n-boot", "500", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert f"{a} - {b}: +0.0000" in result.output and "not distinguishable" in result.output
    assert f"{a} is better" in result.output
    saved = json.loads(out.read_text())
    assert saved["columns"][0]["ranks"][str(c)] == 3


def test_compare_missing_run_file_is_one_line(tmp_path: Path) -> None:
    a = make_run(tmp_path / "a", {"m": [0.1, 0.2]})
    result = CliRunner().invoke(compare, [str(a), str(tmp_path / "nope")], obj={"debug": False})
    assert result.exit_code == 2 and result.output.count("\n") == 1 and "no such file" in result.output


def test_a_metric_that_declares_lower_better_is_compared_so_without_the_flag(tmp_path: Path) -> None:
    low = [0.0, 0.1, 0.0, 0.1] * 10
    a = load_run(make_run(tmp_path / "a", {"hallucination": low, "m": low}), "a")
    b = load_run(make_run(tmp_path / "b", {"hallucination": [v + 0.5 for v in low], "m": [v + 0.5 for v in low]}), "b")
    result = {c.column: c for c in compare_runs([a, b], n_boot=500).columns}
    assert result["hallucination"].ranks == {"a": 1, "b": 2}  # less hallucination is better
    assert result["m"].ranks == {"a": 2, "b": 1}
