"""Trained classifier judges (ARES's method), end to end with the real MiniLM base weights: `localeval
train` on a small labelled fixture, `score --classifier`, `calibrate`; the one-line errors of a damaged or
foreign folder and of Chinese input; identical numbers on a rerun; and the training-pair readers."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from localeval.atomic import one_run_at_a_time
from localeval.classifier.folder import Classifier, check_classifier
from localeval.classifier.pairs import (Pair, distilled_pairs, distinct_pairs, generated_pairs, labelled_pairs,
                                       read_pairs, swapped_pairs)
from localeval.classifier.training import MANIFEST, behind_teacher, chance_bar, keeps_teacher, near_chance
from localeval.cli import cli
from localeval.errors import InputError
from tests.conftest import write_jsonl

pytestmark = pytest.mark.model("all-minilm-l6-v2")

CAPITALS = [("Paris", "France"), ("Berlin", "Germany"), ("Rome", "Italy"), ("Madrid", "Spain"),
            ("Lisbon", "Portugal"), ("Vienna", "Austria"), ("Warsaw", "Poland"), ("Prague", "Czechia"),
            ("Dublin", "Ireland"), ("Oslo", "Norway"), ("Athens", "Greece"), ("Bern", "Switzerland")]
METRICS = "passage_relevance,faithfulness,answer_relevance_rating"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), obj={"debug": False})


def labelled_rows() -> list[dict[str, Any]]:
    rows = []
    for i, (city, country) in enumerate(CAPITALS):
        other_city, other_country = CAPITALS[(i + 5) % len(CAPITALS)]
        question = f"What is the capital of {country}?"
        rows += [{"question": question, "context": f"{city} is the capital of {country}.", "answer": f"It is {city}.",
                  "context_relevance": 1, "answer_faithfulness": 1, "answer_relevance": 1},
                 # the right answer, which another country's passage does not support
                 {"question": question, "context": f"{other_city} is the capital of {other_country}.",
                  "answer": f"It is {city}.", "context_relevance": 0, "answer_faithfulness": 0},
                 {"question": question, "answer": f"It is {other_city}.", "answer_relevance": 0}]
    return rows


def samples(n: int = 4) -> list[dict[str, Any]]:
    out = []
    for city, country in CAPITALS[:n]:
        out.append({"id": country.lower(), "question": f"What is the capital of {country}?",
                    "answer": f"The capital is {city}. It is a large city.",
                    "contexts": [{"id": f"{city}-1", "text": f"{city} is the capital of {country}."},
                                 {"id": "other", "text": "Bananas are rich in potassium."}]})
    return out


def trained_classifier(folder: Path, *judgements: str) -> Path:
    """A classifier trained on the labelled fixture in a few steps (the real base weights), for `judgements`
    (default: all that the fixture labels)."""
    data = folder / "labels.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in labelled_rows()), encoding="utf-8")
    only = ["--judgements", ",".join(judgements)] if judgements else []
    result = invoke("train", "--data", str(data), "-o", str(folder / "clf"), *only, "--epochs", "1", "--batch-size",
                    "8", "--held-out", "0.25", "--max-length", "64", "--threads", "1", "--layers", "3")
    assert result.exit_code == 0, result.output
    assert "context_relevance: 18 pairs trained" in result.output
    assert "3 layers learnt from a 6-layer one" in result.output
    return folder / "clf"


def held_out_manifest(n: int, **aurocs: float | None) -> dict[str, Any]:
    return {"judgements": {name: {"pairs": {"train": 9 * n, "held_out": n}, "seconds": 1.0,
                                  "held_out": {"n": n, "accuracy": 0.5, "auroc": area}}
                           for name, area in aurocs.items()}}


def test_the_chance_bar_is_the_auroc_of_no_learning_plus_its_one_sided_95_percent_margin() -> None:
    assert chance_bar(118) == pytest.approx(0.5 + 1.645 * (119 / (12 * 59 * 59)) ** 0.5)
    assert chance_bar(118) == pytest.approx(0.588, abs=5e-4) and chance_bar(6) > 0.9  # fewer pairs, a higher bar
    assert chance_bar(1000) < chance_bar(118)


def test_a_judgement_its_held_out_pairs_cannot_tell_from_chance_is_named() -> None:
    bar = chance_bar(118)
    manifest = held_out_manifest(118, context_relevance=0.81, answer_faithfulness=0.584, answer_relevance=None)
    lines = near_chance(manifest)
    assert [line.split(":")[0] for line in lines] == ["answer_faithfulness", "answer_relevance"]
    assert "is 0.584, not above chance (under 0.59 at this size)" in lines[0]
    assert "could not be measured" in lines[1] and all("localeval calibrate" in line for line in lines)
    assert near_chance(held_out_manifest(118, answer_faithfulness=bar)) == []
    assert len(near_chance(held_out_manifest(118, answer_faithfulness=0.2))) == 1  # an inverted one too


def test_a_student_that_lost_its_teachers_judgement_is_named() -> None:
    manifest = held_out_manifest(59, context_relevance=0.523, answer_faithfulness=0.716, answer_relevance=None)
    teachers = {"context_relevance": 0.814, "answer_faithfulness": 0.709, "answer_relevance": 0.9}
    for name, trained in manifest["judgements"].items():
        trained.update(layers=3, teacher={"layers": 6, "held_out": {"n": 59, "auroc": teachers[name]}, "agreement": 0.5})
    lines = behind_teacher(manifest)
    assert lines == ["context_relevance: the 3-layer classifier's held-out AUROC is 0.523, its 6-layer teacher's "
                     "0.814 (correlation 0.5); train this judgement with --layers 6 unless the speed is worth it"]
    assert behind_teacher(held_out_manifest(59, context_relevance=0.5)) == []  # six layers: no teacher


def test_auto_keeps_a_student_that_copies_its_teacher_and_is_within_the_margin() -> None:
    # the bench's students (2026-12-02): faithfulness kept its teacher's judgement, relevance did not
    assert keeps_teacher({"auroc": 0.727}, {"auroc": 0.709}, 0.991)
    assert not keeps_teacher({"auroc": 0.523}, {"auroc": 0.814}, 0.536)
    assert not keeps_teacher({"auroc": 0.80}, {"auroc": 0.814}, 0.6)  # as good by luck of the draw, not a copy
    assert not keeps_teacher({"auroc": 0.70}, {"auroc": 0.814}, 0.95)  # a copy that lost too much
    assert keeps_teacher({"auroc": 0.765}, {"auroc": 0.814}, 0.9)
    assert not keeps_teacher({"auroc": 0.9}, {"auroc": 0.9}, None)  # a student that says one thing to all
    assert not keeps_teacher({"auroc": None}, {"auroc": 0.9}, 0.95)


@pytest.mark.parametrize("quiet", [False, True])
def test_train_prints_the_warning_for_each_judgement_near_chance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 quiet: bool) -> None:
    import localeval.classifier.training as training

    data = tmp_path / "labels.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in labelled_rows()), encoding="utf-8")
    monkeypatch.setattr(training, "train", lambda *args, **kwargs: held_out_manifest(
        118, context_relevance=0.81, answer_faithfulness=0.51))
    result = invoke("train", "--data", str(data), "-o", str(tmp_path / "clf"), *(["-q"] if quiet else []))
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert warnings == [f"warning: {line}" for line in near_chance(held_out_manifest(118, answer_faithfulness=0.51))]


@pytest.fixture(scope="module")
def classifier(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return trained_classifier(tmp_path_factory.mktemp("trained"))


def score(tmp_path: Path, classifier: Path, name: str, rows: list[dict[str, Any]], cache: str = "c.sqlite",
          metrics: str = METRICS) -> Result:
    data = write_jsonl(tmp_path / f"{name}.jsonl", [json.dumps(r) for r in rows])
    return invoke("score", str(data), "-m", metrics, "--classifier", str(classifier), "-o", str(tmp_path / name),
                  "--cache", str(tmp_path / cache), "--threads", "1", "-q")


def test_manifest_records_base_data_and_held_out_figures(classifier: Path) -> None:
    from localeval import models

    manifest = json.loads((classifier / "manifest.json").read_text())
    assert manifest["base"] == {"name": "all-minilm-l6-v2", "sha256": models.find("all-minilm-l6-v2").sha256}
    assert manifest["lang"] == "en" and len(manifest["data_sha256"]) == 64
    assert set(manifest["judgements"]) == {"context_relevance", "answer_faithfulness", "answer_relevance"}
    for trained in manifest["judgements"].values():
        assert trained["pairs"] == {"train": 18, "held_out": 6}
        assert trained["held_out"]["n"] == 6 and 0 <= trained["held_out"]["accuracy"] <= 1
        # 3 layers, learnt from the 6-layer classifier trained first (its figures kept too)
        assert trained["layers"] == 3 and set(trained["teacher"]) == {"layers", "held_out", "agreement"}
        assert trained["teacher"]["layers"] == 6 and trained["teacher"]["held_out"]["n"] == 6
    for name in manifest["judgements"]:
        assert json.loads((classifier / name / "config.json").read_text())["num_hidden_layers"] == 3
    for name, digest in manifest["files"].items():
        assert hashlib.sha256((classifier / name).read_bytes()).hexdigest() == digest
    assert not list(classifier.parent.glob(".clf.*")), "the staging folder is left behind"


def test_a_student_of_three_starts_from_every_other_layer_of_its_teacher_and_its_head() -> None:
    import torch

    from localeval import models
    from localeval.classifier.folder import load_cross_encoder
    from localeval.classifier.training import _student_of

    teacher = load_cross_encoder(models.resolve("all-minilm-l6-v2", "embedder"), 1)
    student = _student_of(teacher, 3)
    taught, kept = teacher.model.base_model.encoder.layer, student.model.base_model.encoder.layer
    assert len(taught) == 6 and len(kept) == 3 and student.model.config.num_hidden_layers == 3
    for mine, theirs in zip(kept, (taught[0], taught[2], taught[4])):
        assert mine is not theirs  # a copy: training the student leaves the teacher as it was
        assert all(torch.equal(a, b) for a, b in zip(mine.state_dict().values(), theirs.state_dict().values()))
    assert torch.equal(student.model.classifier.weight, teacher.model.classifier.weight)
    assert len(_student_of(teacher, 2).model.base_model.encoder.layer) == 2
    pairs = [("What is the capital of France?", "Paris is the capital of France.")]
    assert student.predict(pairs).shape == teacher.predict(pairs).shape  # it scores as a cross-encoder still


def test_by_default_each_judgement_keeps_the_student_only_where_it_holds_its_teachers_judgement(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--layers auto: the branch the rule takes on the run's own held-out figures, then the other one (the rule
    turned around), then --layers 6, which trains no student; the manifest, the saved model and train's line
    agree each time."""
    import localeval.classifier.training as training

    data = write_jsonl(tmp_path / "labels.jsonl", [json.dumps(r) for r in labelled_rows()])

    def trained(out: str, *more: str) -> tuple[dict[str, Any], str]:
        result = invoke("train", "--data", str(data), "-o", str(tmp_path / out), "--judgements", "context_relevance",
                        "--epochs", "1", "--batch-size", "8", "--held-out", "0.25", "--max-length", "64", "--threads",
                        "1", *more)
        assert result.exit_code == 0, result.output
        manifest = json.loads((tmp_path / out / "manifest.json").read_text())
        one = manifest["judgements"]["context_relevance"]
        layers = json.loads((tmp_path / out / "context_relevance" / "config.json").read_text())["num_hidden_layers"]
        assert one["layers"] == layers and manifest["options"]["layers"] == (int(more[1]) if more else "auto")
        return one, result.output

    def student_kept(one: dict[str, Any], output: str) -> bool:
        kept = "teacher" in one
        assert kept != ("student" in one)
        assert one["layers"] == (3 if kept else 6)
        assert ("3 layers learnt from a 6-layer one" in output) == kept
        assert ("all 6 layers kept: a 3-layer copy lost their judgement" in output) != kept
        return kept

    def figures(one: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], float | None]:
        """The student's held-out figures, the teacher's, and how their probabilities correlate."""
        if "teacher" in one:
            return one["held_out"], one["teacher"]["held_out"], one["teacher"]["agreement"]
        return one["student"]["held_out"], one["held_out"], one["student"]["agreement"]

    one, output = trained("auto")
    kept = student_kept(one, output)
    assert kept == keeps_teacher(*figures(one))
    monkeypatch.setattr(training, "keeps_teacher", lambda *given: not kept)
    other, output = trained("turned")
    assert student_kept(other, output) != kept
    assert figures(other) == figures(one)  # the same teacher and student (seeded): only the choice changed
    six, output = trained("six", "--layers", "6")
    assert six["layers"] == 6 and "teacher" not in six and "student" not in six
    assert "learnt from" not in output and "layers kept" not in output


def test_score_with_classifier_never_loads_the_gguf_and_calibrates(tmp_path: Path, classifier: Path) -> None:
    result = score(tmp_path, classifier, "run", samples())
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    judge = summary["judge"]
    sha = hashlib.sha256((classifier / "manifest.json").read_bytes()).hexdigest()
    assert judge["classifier"]["sha256"] == sha and "judge_model" not in judge  # the GGUF was never opened
    assert judge["classifier"]["precision"] in ("bf16", "fp32")
    for metric in METRICS.split(","):
        usage = judge["usage"][metric]
        assert usage["classified"] == usage["calls"] > 0 and usage["prompt_tokens"] == 0
        assert summary["settings"][metric]["classifier"] == str(classifier)
    rows = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    for row in rows:
        assert 0 < row["metrics"]["passage_relevance"] < 1
        assert len(row["details"]["passage_relevance"]["passages"]) == 2
        assert len(row["details"]["faithfulness"]["statements"]) == 2
        dist = row["details"]["answer_relevance_rating"]["distribution"]
        assert dist["2"] == dist["3"] == dist["4"] == 0
        assert row["metrics"]["answer_relevance_rating"] == pytest.approx(dist["5"], abs=1e-6)
    labels = write_jsonl(tmp_path / "labels.jsonl", [json.dumps({"id": r["id"], "passage_relevance": i % 2})
                                                      for i, r in enumerate(rows)])
    calibrated = invoke("calibrate", str(tmp_path / "run"), "--labels", str(labels))
    assert calibrated.exit_code == 0, calibrated.output
    assert "passage_relevance" in json.loads((tmp_path / "run" / "calibration.json").read_text())["metrics"]
    report = invoke("report", str(tmp_path / "run"), "-o", str(tmp_path / "report.html"))
    assert report.exit_code == 0, report.output
    assert sha in (tmp_path / "report.html").read_text()  # the report names the classifier that judged


def test_rerun_gives_identical_numbers(tmp_path: Path, classifier: Path) -> None:
    first = score(tmp_path, classifier, "first", samples(), cache="one.sqlite")
    again = score(tmp_path, classifier, "again", samples(), cache="two.sqlite")
    cached = score(tmp_path, classifier, "cached", samples(), cache="one.sqlite")
    assert first.exit_code == again.exit_code == cached.exit_code == 0
    read = [[json.loads(line)["metrics"] for line in (tmp_path / name / "samples.jsonl").read_text().splitlines()]
            for name in ("first", "again", "cached")]
    assert read[0] == read[1] == read[2]
    usage = json.loads((tmp_path / "cached" / "summary.json").read_text())["judge"]["usage"]
    assert all(u["calls"] == 0 and u["cache_hits"] > 0 for u in usage.values())


def test_bf16_probabilities_are_those_of_fp32_to_a_hundredth(classifier: Path) -> None:
    """bfloat16 runs on a CPU with AMX; it must not change what the classifier says."""
    model = Classifier(check_classifier(classifier), threads=1)
    judgement = model.folder.judgements[0]
    pairs = [(f"What is the capital of {country}?", f"{city} is the capital of {country}. It has a river.")
             for city, country in CAPITALS] + [("What is the capital of France?", "Bananas are yellow.")]
    found = {}
    for precision in ("fp32", "bf16"):
        model.precision = precision
        found[precision] = model.probabilities(judgement, pairs)
    assert max(abs(a - b) for a, b in zip(found["fp32"], found["bf16"])) < 0.02


def test_long_passage_is_windowed_by_the_classifier_tokens(tmp_path: Path, classifier: Path) -> None:
    long_text = " ".join(f"Sentence number {i} says that Paris is a city in France." for i in range(60))
    row = dict(samples(1)[0], contexts=[{"id": "long", "text": long_text}])
    result = score(tmp_path, classifier, "long", [row], metrics="faithfulness")
    assert result.exit_code == 0, result.output
    details = json.loads((tmp_path / "long" / "samples.jsonl").read_text())["details"]["faithfulness"]
    assert details["windows"] > 1  # the 64-token cross-encoder got pieces, not a silently cut passage


@pytest.mark.model("all-minilm-l6-v2", "smollm2-135m-instruct-q4_1")
def test_a_pair_longer_than_the_window_goes_to_the_gguf_judge_uncut(tmp_path: Path, classifier: Path) -> None:
    long_answer = "The capital is Paris, " + ", ".join(f"a city with district number {i}" for i in range(16)) + "."
    rows = [dict(samples(1)[0], id="long", answer=long_answer, contexts=[{"id": "p", "text": long_answer}]),
            samples(2)[1]]
    data = write_jsonl(tmp_path / "rows.jsonl", [json.dumps(r) for r in rows])
    result = invoke("score", str(data), "-m", "faithfulness,answer_relevance_rating", "--classifier", str(classifier),
                    "--judge", "smollm2-135m-instruct-q4_1", "--n-ctx", "2048", "-o", str(tmp_path / "run"),
                    "--cache", str(tmp_path / "c.sqlite"), "--threads", "1", "-q")
    assert result.exit_code == 0, result.output
    judge = json.loads((tmp_path / "run" / "summary.json").read_text())["judge"]
    assert judge["judge_model"] == "smollm2-135m-instruct-q4_1.gguf"  # loaded for the long pairs only
    for metric in ("faithfulness", "answer_relevance_rating"):
        usage = judge["usage"][metric]  # the long answer's one sentence, and its rating, went to the GGUF judge
        assert 0 < usage["classified"] < usage["calls"], (metric, usage)


def test_chinese_sample_is_refused_in_one_line(tmp_path: Path, classifier: Path) -> None:
    row = {"id": "zh", "question": "法国的首都是哪里？", "answer": "巴黎是法国的首都。",
           "contexts": [{"id": "c", "text": "巴黎是法国的首都和最大城市。"}]}
    result = score(tmp_path, classifier, "zh", samples(2) + [row])
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert "Chinese sample" in line and "trained for English only" in line and "without --classifier" in line


def _damage(kind: str, clf: Path) -> None:
    manifest = clf / "manifest.json"
    if kind == "weights changed":
        weights = clf / "context_relevance" / "model.safetensors"
        data = bytearray(weights.read_bytes())
        data[-10] ^= 0xFF
        weights.write_bytes(bytes(data))
    elif kind == "file missing":
        (clf / "answer_relevance" / "tokenizer.json").unlink()
    elif kind == "no manifest":
        manifest.unlink()
    elif kind == "manifest truncated":
        manifest.write_text(manifest.read_text()[:100])
    elif kind == "foreign manifest":
        manifest.write_text(json.dumps({"format": "something-else"}))
    elif kind in ("newer version", "trained before the marks"):
        version = 99 if kind == "newer version" else 1
        manifest.write_text(json.dumps(dict(json.loads(manifest.read_text()), version=version)))
    elif kind == "file added":
        (clf / "context_relevance" / "pytorch_model.bin").write_bytes(b"not the trained weights")
    elif kind == "lang removed":
        manifest.write_text(json.dumps({k: v for k, v in json.loads(manifest.read_text()).items() if k != "lang"}))
    elif kind == "figures removed":
        edited = json.loads(manifest.read_text())
        edited["judgements"]["context_relevance"] = {}
        manifest.write_text(json.dumps(edited))


@pytest.mark.parametrize("kind, message", [
    ("weights changed", "context_relevance/model.safetensors does not match the sha256"),
    ("file missing", "answer_relevance/tokenizer.json is missing"),
    ("no manifest", "no manifest.json; this is not a folder `localeval train` wrote"),
    ("manifest truncated", "not valid JSON; the folder is damaged"),
    ("foreign manifest", "not a localeval classifier manifest"),
    ("newer version", "manifest version 99"),
    ("trained before the marks", "manifest version 1; this localeval reads version 3: train it again"),
    ("file added", "context_relevance/pytorch_model.bin is not in manifest.json"),
    ("lang removed", "lang None (expected one of en, zh); the manifest was changed"),
    ("figures removed", "judgement 'context_relevance' has no held-out figures"),
])
def test_damaged_or_foreign_folder_is_one_line_before_scoring(tmp_path: Path, classifier: Path, kind: str,
                                                               message: str) -> None:
    import shutil

    clf = tmp_path / "clf"
    shutil.copytree(classifier, clf)
    _damage(kind, clf)
    result = score(tmp_path, clf, "run", samples(1))
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"error: --classifier {clf}") and message in line
    assert not (tmp_path / "run" / "summary.json").exists()


def test_train_refuses_a_folder_of_other_files_and_too_few_pairs(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "rows.jsonl", [json.dumps(r) for r in labelled_rows()[:4]])
    few = invoke("train", "--data", str(data), "-o", str(tmp_path / "clf"))
    assert few.exit_code == 2 and "training needs at least 4 of each" in few.output
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    busy = invoke("train", "--data", str(data), "-o", str(tmp_path / "mine"))
    assert busy.exit_code == 2 and "holds files and is not a classifier folder" in busy.output
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    # a manifest.json of another kind (a web app's) does not make a folder ours to replace
    (tmp_path / "mine" / "manifest.json").write_text('{"name": "my app", "start_url": "/"}')
    app = invoke("train", "--data", str(data), "-o", str(tmp_path / "mine"))
    assert app.exit_code == 2 and "is not a classifier folder" in app.output
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["manifest.json", "notes.txt"]
    chinese = write_jsonl(tmp_path / "zh.jsonl", [json.dumps(r) for r in labelled_rows()[:8]] + [json.dumps(
        {"question": "法国的首都是哪里？", "context": "巴黎是法国的首都。", "context_relevance": 1})])
    zh = invoke("train", "--data", str(chinese), "-o", str(tmp_path / "zh-clf"))
    assert zh.exit_code == 2 and f"{chinese}: Chinese training pairs" in zh.output and "English only" in zh.output
    assert not (tmp_path / "zh-clf").exists()
    with one_run_at_a_time(tmp_path / "held"):  # another training into it, still running
        held = invoke("train", "--data", str(data), "-o", str(tmp_path / "held"))
    assert held.exit_code == 2 and f"output folder {tmp_path / 'held'} is in use by another localeval run" in held.output


# ---- training pairs --------------------------------------------------------------------------------

def test_labelled_rows_errors_name_file_line_and_field(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", ['{"question": "q", "context": "c", "context_relevance": 1}',
                                                '{"question": "q", "context": "c", "context_relevance": 0.7}'])
    with pytest.raises(InputError, match=r"bad.jsonl:2: field 'context_relevance': expected 0 or 1, got 0.7"):
        list(labelled_pairs(path, str(path)))
    path = write_jsonl(tmp_path / "empty.jsonl", ['{"question": "q", "answer": "", "answer_faithfulness": 1, "context": "c"}'])
    with pytest.raises(InputError, match=r"empty.jsonl:1: field 'answer': a answer_faithfulness label needs"):
        list(labelled_pairs(path, str(path)))
    path = write_jsonl(tmp_path / "none.jsonl", ['{"question": "q"}'])
    with pytest.raises(InputError, match=r"none.jsonl:1: no label"):
        read_pairs([path])
    path = write_jsonl(tmp_path / "ctx.jsonl", ['{"question": "q", "contexts": [{"text": null}], "context_relevance": 1}'])
    with pytest.raises(InputError, match=r"ctx.jsonl:1: field 'contexts': each context is a string or an object"):
        read_pairs([path])


def test_generated_folder_gives_all_three_judgements(tmp_path: Path) -> None:
    folder = tmp_path / "gen"
    folder.mkdir()
    rows = [{"id": f"gen-{i}", "question": f"Capital of {country}?", "reference": city,
             "reference_docs": [{"id": country, "text": f"{city} is the capital of {country}."}]}
            for i, (city, country) in enumerate(CAPITALS[:3])]
    write_jsonl(folder / "testset.jsonl", [json.dumps(r) for r in rows])
    write_jsonl(folder / "negatives.jsonl", [
        json.dumps({"question": "Capital of France?", "context": "Paris is the capital of France.", "answer": "Paris",
                    "context_relevance": 1, "answer_faithfulness": 1}),
        json.dumps({"question": "Capital of France?", "context": "Rome is the capital of Italy.",
                    "context_relevance": 0}),
        json.dumps({"question": "Capital of France?", "context": "Paris is the capital of France.",
                    "answer": "Lyon", "answer_faithfulness": 0})])
    pairs = generated_pairs(folder, seed=0)
    assert pairs == generated_pairs(folder, seed=0)
    counts = {(p.judgement, p.label): 0 for p in pairs}
    for p in pairs:
        counts[p.judgement, p.label] += 1
    assert counts == {("context_relevance", 1.0): 1, ("context_relevance", 0.0): 1, ("answer_faithfulness", 1.0): 7,
                      ("answer_faithfulness", 0.0): 10, ("answer_relevance", 1.0): 3, ("answer_relevance", 0.0): 3}
    for i, row in enumerate(rows):  # after negatives.jsonl's 4 pairs: faithful, not, relevant, not, per question
        mine = pairs[4 + 4 * i: 8 + 4 * i]
        assert [p.second == row["reference"] for p in mine] == [True, False, True, False]
    countries = {country for _, country in CAPITALS[:3]}
    for i, row in enumerate(rows):  # then, per question, the swaps: the answer, a sentence, the sentence swapped
        answer, sentence, wrong = pairs[16 + 3 * i: 19 + 3 * i]
        passage = row["reference_docs"][0]["text"]
        assert {p.first for p in (answer, sentence, wrong)} == {passage}
        assert [p.label for p in (answer, sentence, wrong)] == [0.0, 1.0, 0.0]
        assert answer.second in countries and answer.second not in passage  # a bare name: only from elsewhere
        assert sentence.second == passage
        own = passage.rsplit(" ", 1)[1].rstrip(".")
        assert wrong.second.replace(own, "").startswith(row["reference"]) and own not in wrong.second
    with pytest.raises(InputError, match="no testset.jsonl"):
        generated_pairs(tmp_path, seed=0)
    write_jsonl(folder / "testset.jsonl", [json.dumps(rows[0]), json.dumps({"question": "q", "reference": "r"})])
    with pytest.raises(InputError, match=r"testset.jsonl:2: not a row `localeval generate` writes"):
        generated_pairs(folder, seed=0)


def _two_rows(folder: Path, first: tuple[str, str, str], second: tuple[str, str, str]) -> list[Pair]:
    """The pairs of a generate folder of two rows (question, reference, passage): each one's other row is the
    other one, so which negatives are drawn is fixed."""
    folder.mkdir()
    rows = [{"id": str(i), "question": q, "reference": r, "reference_docs": [{"id": str(i), "text": t}]}
            for i, (q, r, t) in enumerate((first, second))]
    where = str(write_jsonl(folder / "testset.jsonl", [json.dumps(r) for r in rows]))
    write_jsonl(folder / "negatives.jsonl", [])
    pairs = generated_pairs(folder, seed=0)
    swaps = swapped_pairs([(r, r["reference_docs"][0]["text"]) for r in rows], where, seed=0)
    assert pairs[len(pairs) - len(swaps):] == swaps
    return pairs[:len(pairs) - len(swaps)]


def test_another_answer_is_a_negative_only_where_it_is_one(tmp_path: Path) -> None:
    both_yes = _two_rows(tmp_path / "yes", ("Is Paris in France?", "Yes.", "Paris is a city in France."),
                         ("Is Rome in Italy?", "yes", "Rome is a city in Italy."))
    assert {(p.judgement, p.label) for p in both_yes} == {("answer_faithfulness", 1.0), ("answer_relevance", 1.0)}
    named = _two_rows(tmp_path / "named", ("Capital of France?", "Paris", "Paris is the capital of France, not Rome."),
                      ("Capital of Italy?", "Rome", "Rome is the capital of Italy."))
    negatives = [(p.judgement, p.first, p.second) for p in named if p.label == 0.0]
    assert negatives == [("answer_relevance", "Capital of France?", "Rome"),  # the passage names Rome: no negative
                         ("answer_faithfulness", "Rome is the capital of Italy.", "Paris"),
                         ("answer_relevance", "Capital of Italy?", "Paris")]


def test_each_distinct_pair_is_trained_once_and_copies_that_disagree_average() -> None:
    a, b = Pair("answer_faithfulness", "c", "s", 1.0, "x"), Pair("answer_faithfulness", "c", "t", 0.0, "x")
    assert distinct_pairs([a, b, a, Pair("answer_faithfulness", "c", "t", 1.0, "y")]) == [
        a, Pair("answer_faithfulness", "c", "t", 0.5, "x")]
    assert distinct_pairs([a, Pair("answer_relevance", "c", "s", 1.0, "x")]) == [
        a, Pair("answer_relevance", "c", "s", 1.0, "x")]


def test_distilled_pairs_take_the_judge_probabilities(tmp_path: Path) -> None:
    row = {"id": "a", "question": "Capital of France?", "answer": "Paris.",
           "contexts": [{"id": "1", "text": "Paris is the capital."}, {"id": "2", "text": "Bananas."}],
           "metrics": {"answer_relevance_rating": 0.9},
           "details": {"passage_relevance": {"passages": [{"id": "1", "rank": 1, "p": 0.8}, {"id": "2", "rank": 2, "p": 0.1}]},
                       "faithfulness": {"against": "contexts", "statements": [{"text": "Paris.", "p": 0.7}]}}}
    path = write_jsonl(tmp_path / "samples.jsonl", [json.dumps(row)])
    pairs = list(distilled_pairs(tmp_path))
    assert [(p.judgement, p.second, p.label) for p in pairs] == [
        ("context_relevance", "Paris is the capital.", 0.8), ("context_relevance", "Bananas.", 0.1),
        ("answer_faithfulness", "Paris.", 0.7), ("answer_relevance", "Paris.", 0.9)]
    # a run of an input whose contexts are plain strings keeps them so
    write_jsonl(path, [json.dumps(dict(row, contexts=["Paris is the capital.", "Bananas."]))])
    assert list(distilled_pairs(tmp_path)) == pairs
    write_jsonl(path, [json.dumps({"id": "a", "question": "q", "metrics": {}, "details": {}})])
    with pytest.raises(InputError, match="no judge verdicts to learn from"):
        list(distilled_pairs(tmp_path))


def _statement(p: object) -> dict[str, object]:
    return {"against": "contexts", "statements": [{"text": "Paris.", "p": p}]}


@pytest.mark.parametrize("row, message", [
    ([1], r"samples.jsonl:1: expected a JSON object"),
    ({"contexts": ["c"], "details": {"faithfulness": _statement(None)}},
     r"samples.jsonl:1: field 'details.faithfulness.statements\[\].p': expected a probability in \[0, 1\], got null"),
    ({"contexts": ["c"], "details": {"faithfulness": _statement(1.7)}}, r"got 1.7"),
    ({"contexts": ["c"], "details": {"faithfulness": _statement(True)}}, r"got true"),
    ({"contexts": ["c"], "details": {"faithfulness": {"against": "contexts", "statements": [{"p": 0.5}]}}},
     r"field 'details.faithfulness.statements': each statement is an object with a string `text`"),
    ({"contexts": [{"id": "1", "text": None}]}, r"field 'contexts': each context is a string or an object"),
    ({"contexts": "c"}, r"field 'contexts': expected a list"),
    ({"contexts": ["c"], "details": {"passage_relevance": {"passages": [{"rank": 1, "p": -0.1}]}}},
     r"field 'details.passage_relevance.passages\[\].p'"),
])
def test_a_damaged_run_to_distill_is_one_line_naming_line_and_field(tmp_path: Path, row: object, message: str) -> None:
    write_jsonl(tmp_path / "samples.jsonl", [json.dumps({"id": "ok", "question": "q", "metrics": {}}), json.dumps(row)])
    with pytest.raises(InputError, match=message.replace("samples.jsonl:1", "samples.jsonl:2")):
        list(distilled_pairs(tmp_path))
