"""`localeval report` without a browser: what the page embeds (read back from the HTML), how large runs are
capped, how context sentences are highlighted, and that the file references nothing outside itself.
tests/test_report_browser.py opens the same kind of report in headless chromium.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from localeval.data.records import Context
from localeval.report import build_report
from localeval.report.html import data_block
from localeval.report.samples import needed_spans, select_ids
from localeval.results.runs import load_run
from localeval.stats.bootstrap import bootstrap_mean_ci
from localeval.stats.compare import compare_runs

from .conftest import make_run, write_jsonl
from .report_runs import MARKUP_ANSWER, SYSTEM_A, classical_run, localeval, report_data, system_b

@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    folder = tmp_path_factory.mktemp("report")
    a, b = classical_run(folder, SYSTEM_A, "a"), classical_run(folder, system_b(), "b")
    out = folder / "report.html"
    localeval("report", str(a), str(b), "-o", str(out), "--n-boot", "500")
    return a, b, out


def test_summary_histograms_and_intervals_match_the_run(two_runs) -> None:
    a, _, out = two_runs
    data = report_data(out)
    run = data["runs"][0]
    summary = json.loads((a / "summary.json").read_text())
    assert [r["column"] for r in run["summary"]] == list(summary["metrics"])
    scored = load_run(a)
    for row in run["summary"]:
        entry = summary["metrics"][row["column"]]
        assert (row["mean"], row["n"], row["skipped"]) == (entry["mean"], entry["n"], entry["skipped"])
        assert sum(run["histograms"][row["column"]]["counts"]) == entry["n"]
        ci = bootstrap_mean_ci(scored.columns[row["column"]], row["column"], 500)  # the report's seed 0
        assert (row["ci"]["low"], row["ci"]["high"]) == (ci.low, ci.high)
        assert row["ci"]["method"] == "bootstrap, 500 resamples, seed 0"
    assert run["summary"][0]["skipped"] == {"contexts have no ids": 1}  # en-orwell's plain-string contexts
    assert run["embedded"] == {"n": 6, "max_samples": 10_000, "all": True, "texts_cut": 0, "max_text": 4000}
    assert run["verdict_thresholds"] is None  # no chunk-judging metric (test_report_browser.py has two runs with them)


def test_comparison_and_win_loss_lists(two_runs) -> None:
    a, b, out = two_runs
    cmp = report_data(out)["comparison"]
    expected = compare_runs([load_run(a, str(a)), load_run(b, str(b))], n_boot=500)
    assert cmp["columns"] == json.loads(json.dumps(expected.as_dict()["columns"]))
    mrr = next(w for w in cmp["winloss"] if w["column"] == "mrr")
    # by hand (tests/report_runs.py): B drops eiffel-1 (mrr 1 → 0) and reverses en-mito, en-boil, zh-wall (1 → 0.5),
    # so A is better on 4; zh-photo's relevant context moves to rank 1 in B (0.5 → 1); en-orwell has no ids.
    assert (mrr["n"], mrr["a_better"], mrr["b_better"], mrr["ties"]) == (5, 4, 1, 0)
    assert [r["id"] for r in mrr["a_wins"]] == ["en-eiffel", "en-mito", "en-boil", "zh-wall"]  # largest first, then file order
    assert mrr["b_wins"] == [{"id": "zh-photo", "a": 0.5, "b": 1.0}]


def test_samples_carry_contexts_ranks_grades_and_raw_text(two_runs) -> None:
    _, _, out = two_runs
    samples = {s["id"]: s for s in report_data(out)["runs"][0]["samples"]}
    eiffel = samples["en-eiffel"]
    assert [(c["id"], c["rank"], c["grade"]) for c in eiffel["ctx"]] == [("eiffel-1", 1, 1.0), ("louvre-2", 2, 0.0)]
    assert samples["en-boil"]["a"] == MARKUP_ANSWER  # shown as text by the page, never parsed as HTML
    assert samples["zh-wall"]["lang"] == "zh" and samples["en-orwell"]["ctx"][0]["id"] is None
    assert samples["zh-photo"]["unretrieved"] == []
    html = out.read_text(encoding="utf-8")
    assert "<script>alert(" not in html and "\\u003cscript\\u003ealert(" in html


def test_report_html_has_no_external_reference(two_runs) -> None:
    html = two_runs[2].read_text(encoding="utf-8")
    assert "default-src 'none'" in html  # the page's CSP refuses any fetch, should a future change attempt one
    assert re.search(r"<(script|img|iframe)[^>]*\ssrc=", html) is None
    assert re.search(r"<link\b", html) is None and "@import" not in html
    assert re.search(r"url\(\s*['\"]?https?:", html) is None
    assert html.count("<script") == 3  # the data block, plotly.js once, the page's script


def test_data_block_cannot_close_its_script() -> None:
    payload = {"q": "</script><script>alert(1)</script> & <!-- x"}
    text = data_block(payload)
    assert "</script" not in text and "<!--" not in text
    assert json.loads(text) == payload


def test_context_sentences_are_numbered_across_contexts() -> None:
    contexts = [Context("The tower is in Paris. It was completed in 1889."), Context("长城是军事工程。现存的长城是明朝修建的。")]
    # split_sentences gives 2 + 2 sentences, numbered 1-4 in rank order; the judge listed 2 and 4 as needed:
    # "It was completed in 1889." starts after "The tower is in Paris. " (23 characters) and is 25 long;
    # "现存的长城是明朝修建的。" starts after "长城是军事工程。" (8) and is 12 long
    assert needed_spans(contexts, {2, 4}) == [[[23, 48]], [[8, 20]]]
    assert needed_spans(contexts, set()) == [[], []]
    assert needed_spans(contexts, {2, 4}, counted=4) == [[[23, 48]], [[8, 20]]]
    # a run whose localeval split these contexts into 5 sentences: its numbers point at other sentences
    assert needed_spans(contexts, {2, 4}, counted=5) == [[], []]
    # the page slices in UTF-16 units: each emoji or rare CJK character before a sentence counts twice
    rare = Context("𠀀𠀁 is a rare character. 😀😀 Emoji come first. The answer is basil.")
    ((start, end),) = needed_spans([rare], {3})[0]
    assert rare.text.encode("utf-16-le")[2 * start: 2 * end].decode("utf-16-le") == "The answer is basil."


def test_large_runs_embed_each_columns_worst_first(tmp_path: Path) -> None:
    x = [0.9, 0.1, 0.8, 0.7, 0.6, 0.5]
    y = [0.2, 0.9, None, 0.95, 0.05, 0.99]
    run = load_run(make_run(tmp_path / "r", {"x": x, "y": y}))
    # round-robin: x's worst q1, y's worst q4, x's next q5 (0.5), y's next q0 (0.2)
    assert select_ids(run, ["x", "y"], 4) == {"q1", "q4", "q5", "q0"}
    assert select_ids(run, ["x", "y"], 2, first=["q3"]) == {"q3", "q1"}  # comparison rows come first
    assert select_ids(run, ["x", "y"], 2, lower_better=["x"]) == {"q0", "q4"}  # x's worst is its highest
    assert select_ids(run, ["x", "y"], 6) is None


def test_capped_report_says_so(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    words = ["an", "answer", "other", "words"]
    records = [{"id": f"s{i}", "question": f"question {i}", "contexts": [" ".join(rng.choice(words, 6))],
                "reference": " ".join(rng.choice(words, 4))} for i in range(300)]
    run = classical_run(tmp_path, records, "big")
    written = build_report([run], tmp_path / "big.html", max_samples=40, n_boot=200)
    assert written["runs"][0] == {"name": str(run), "n": 40, "max_samples": 40, "all": False, "texts_cut": 0,
                                  "max_text": 4000, "n_samples": 300}
    data = report_data(tmp_path / "big.html")["runs"][0]
    assert sum(data["histograms"]["rouge_l.f"]["counts"]) == 300  # charts use every sample
    lowest = min(load_run(run).columns["rouge_l.f"])
    assert min(s["v"][data["columns"].index("rouge_l.f")] for s in data["samples"]) == lowest


def test_long_texts_are_cut_and_counted(tmp_path: Path) -> None:
    record = {"id": 1, "question": "Why?", "answer": "word " * 2000, "contexts": ["Long. " * 1000]}
    run = classical_run(tmp_path, [record], "long")
    build_report([run], tmp_path / "r.html", n_boot=100)
    sample = report_data(tmp_path / "r.html")["runs"][0]["samples"][0]
    assert sample["a"].endswith("… [6,000 more characters in samples.jsonl]")  # 10,000 characters, 4,000 kept
    assert sample["ctx"][0]["text"].startswith("Long. " * 666 + "Long")  # 4,000 characters kept
    assert "hl" not in sample["ctx"][0]  # no context_relevance: nothing highlighted
    assert report_data(tmp_path / "r.html")["runs"][0]["embedded"]["texts_cut"] == 2


def test_report_errors_are_one_line(tmp_path: Path, two_runs) -> None:
    a, b, _ = two_runs
    done = localeval("report", str(tmp_path / "missing"), "-o", str(tmp_path / "r.html"), check=False)
    assert done.returncode == 2 and done.stderr.startswith("error: ") and done.stderr.count("\n") == 1
    done = localeval("report", str(a), str(b), "--labels", f"{tmp_path}=x.jsonl", check=False)
    assert done.returncode == 2 and "is not one of the runs given" in done.stderr
    other = classical_run(tmp_path, SYSTEM_A[:3], "other")
    done = localeval("report", str(a), str(other), "-o", str(tmp_path / "r.html"), check=False)
    assert done.returncode == 0 and "warning: no paired comparison" in done.stderr  # still a report of both
    assert report_data(tmp_path / "r.html")["comparison"]["error"].startswith("no paired comparison: ")


def test_labels_view_from_score_calibrate_or_report_labels(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "a.jsonl", SYSTEM_A)
    labels = write_jsonl(tmp_path / "labels.jsonl", [{"id": i, "coverage": y} for i, y in
                                                     [("en-eiffel", 1), ("en-mito", 1), ("en-boil", 0), ("zh-wall", 1)]])
    mapping = ("--label-column", "rouge_l.recall=coverage")
    run = tmp_path / "a"
    localeval("score", str(data), "-o", str(run), "-q", "-m", "rouge_l", "--labels", str(labels), *mapping)
    build_report([run], tmp_path / "1.html", n_boot=100)
    view = report_data(tmp_path / "1.html")["runs"][0]
    ppi = json.loads((run / "summary.json").read_text())["ppi"]["metrics"]["rouge_l.recall"]
    assert view["labels"]["source"].startswith("summary.json (localeval score --labels")
    assert view["labels"]["metrics"]["rouge_l.recall"] == {"ppi": ppi}  # no agreement without the labels themselves
    recall = next(r for r in view["summary"] if r["column"] == "rouge_l.recall")
    assert (recall["ci"]["low"], recall["ci"]["method"]) == (ppi["ci"][0], "PPI, 4 labels (summary.json)")

    localeval("calibrate", str(run), "--labels", str(labels), *mapping, "-q")
    build_report([run], tmp_path / "2.html", n_boot=100)
    calibration = json.loads((run / "calibration.json").read_text())["metrics"]["rouge_l.recall"]
    view = report_data(tmp_path / "2.html")["runs"][0]
    assert view["labels"]["metrics"]["rouge_l.recall"]["agreement"] == calibration["agreement"]

    localeval("report", str(run), "-o", str(tmp_path / "3.html"), "--labels", str(labels), *mapping, "--n-boot", "100")
    samples = {s["id"]: s for s in report_data(tmp_path / "3.html")["runs"][0]["samples"]}
    assert samples["en-boil"]["lab"] == {"rouge_l.recall": 0} and "lab" not in samples["en-orwell"]


def test_a_column_no_sample_was_scored_on_is_still_reported(tmp_path: Path) -> None:
    records = [{k: v for k, v in r.items() if k != "reference_doc_ids"} for r in SYSTEM_A]  # retrieval skips all
    run = classical_run(tmp_path, records, "noref")
    build_report([run], tmp_path / "r.html", n_boot=100)
    data = report_data(tmp_path / "r.html")["runs"][0]
    mrr = next(r for r in data["summary"] if r["column"] == "mrr")
    assert (mrr["n"], mrr["mean"], mrr["ci"]) == (0, None, None)
    assert mrr["skipped"] == {"contexts have no ids": 1, "missing field 'reference_doc_ids'": 5}
    assert data["histograms"]["mrr"]["n"] == 0 and sum(data["histograms"]["mrr"]["counts"]) == 0


def test_only_scores_with_an_absolute_scale_are_coloured() -> None:
    """grounding's likelihood ranks answers; its 0.02 is not 'bad', so the page must not colour it red."""
    from localeval.report.collect import relative_scale

    assert relative_scale("grounding") and not relative_scale("faithfulness") and not relative_scale("ndcg@5")
    assert not relative_scale("a_plugin_not_installed_here")


def test_summary_rows_say_which_columns_only_rank(two_runs) -> None:
    summary = report_data(two_runs[2])["runs"][0]["summary"]
    assert summary and all(row["relative"] is False for row in summary)  # classical metrics: absolute scores
