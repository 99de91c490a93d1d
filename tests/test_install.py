"""localeval installs like any Python tool: a built wheel in a fresh venv, outside the repository, finds
its prompts, registry and example, installs models, scores, and picks up a third-party plugin package
(a metric, a judge backend and a criteria file).

The fresh venv sees the project venv's site-packages through a .pth line, so pip resolves the
dependencies as already installed instead of downloading gigabytes (and no index is needed); localeval itself comes only from
the wheel (the project's editable install is not active there: .pth files of an added directory are not
processed).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from localeval import models

REPO = Path(__file__).resolve().parent.parent
TINY = "smollm2-135m-instruct-q4_1"
EMBEDDER = "all-minilm-l6-v2"
# The venv fixture links both models into its models folder; the scoring test runs the tiny judge.
pytestmark = [pytest.mark.install, pytest.mark.model(TINY, EMBEDDER)]

PLUGIN = '''
from localeval import Measurement, Metric, register_metric
from localeval.judge.llama_sequential import SequentialLlamaBackend


@register_metric
class AnswerWords(Metric):
    """Words in the answer (a plugin's metric)."""

    name = "answer_words"
    requires = ("answer",)
    columns = ("answer_words",)
    groups = ("lengths",)

    def settings(self):
        return {"unit": "whitespace-separated words"}

    def measure(self, samples):
        return [Measurement({"answer_words": float(len(s.answer.split()))}) for s in samples]


class SiteEngine(SequentialLlamaBackend):
    """A site's own way of running the judge (here: llama.cpp one call at a time, under its own name)."""

    name = "site-engine"
    engine = "the site's engine"
'''

PLUGIN_PYPROJECT = '''
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "localeval-answer-words"
version = "0.1.0"

[project.entry-points."localeval.metrics"]
answer_words = "localeval_answer_words:AnswerWords"

[project.entry-points."localeval.backends"]
site_engine = "localeval_answer_words:SiteEngine"

[project.entry-points."localeval.criteria"]
site_criteria = "localeval_answer_words.criteria"

[tool.setuptools]
packages = ["localeval_answer_words", "localeval_answer_words.criteria"]

[tool.setuptools.package-data]
"localeval_answer_words.criteria" = ["*.toml"]
'''

#: A site's criterion, shipped in the plugin package's criteria module (entry-point group localeval.criteria).
PLUGIN_CRITERION = '''
name = "cites_policy"
criterion = "The answer names the policy number it relies on."
reads = ["answer"]
scale = "yes/no"

[zh]
criterion = "回答写明了它所依据的政策编号。"
'''


def run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Path]:
    """(the fresh venv's bin folder, its environment, a working folder outside the repo)."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"  # a copy, so that the build writes nothing into the repository
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "localeval", source / "localeval", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "prompts", source / "prompts")
    (source / "models").mkdir()
    shutil.copy2(REPO / "models" / "registry.json", source / "models" / "registry.json")
    dist = root / "dist"
    run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-w", str(dist), "-q"],
        cwd=root)
    (wheel,) = dist.glob("localeval-*.whl")
    env_dir = root / "venv"
    # No pip or setuptools of its own: those of the project venv (through the .pth line) run the installs,
    # and the old setuptools a venv would bundle cannot shadow the one torch's metadata asks for.
    run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], cwd=root)
    bin_dir = env_dir / "bin"
    site = Path(subprocess.run([str(bin_dir / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "project-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCALEVAL_", "PYTHONPATH"))}
    env.update(LOCALEVAL_MODELS=str(root / "models"), LOCALEVAL_CACHE=str(root / "cache" / "judge.sqlite"),
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    run([str(bin_dir / "python"), "-m", "pip", "install", "-q", "--no-index", str(wheel)], cwd=root, env=env)
    plugin = root / "plugin"
    (plugin / "localeval_answer_words").mkdir(parents=True)
    (plugin / "localeval_answer_words" / "__init__.py").write_text(PLUGIN, encoding="utf-8")
    (plugin / "localeval_answer_words" / "criteria").mkdir()
    (plugin / "localeval_answer_words" / "criteria" / "__init__.py").write_text("", encoding="utf-8")
    (plugin / "localeval_answer_words" / "criteria" / "cites_policy.toml").write_text(PLUGIN_CRITERION, encoding="utf-8")
    (plugin / "pyproject.toml").write_text(PLUGIN_PYPROJECT, encoding="utf-8")
    run([str(bin_dir / "python"), "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation", str(plugin)],
        cwd=root, env=env)
    # The models folder holds the same bytes as the project's (links, not a download): `models install`
    # finds them through the packaged registry and verifies them by sha256.
    for name in (TINY, EMBEDDER):
        source = models.find(name).path()
        target = root / "models" / source.name
        if source.is_dir():
            shutil.copytree(source, target, copy_function=os.link)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(source, target)
    work = root / "work"
    work.mkdir()
    return bin_dir, env, work


def test_the_wheel_carries_prompts_registry_and_example(venv: tuple[Path, dict[str, str], Path]) -> None:
    bin_dir, env, work = venv
    code = ("import localeval, localeval.resources as r; print(localeval.__file__); print(r.prompts_dir()); "
            "print(r.registry_file()); print(r.example_file())")
    out = run([str(bin_dir / "python"), "-c", code], cwd=work, env=env).stdout.split()
    assert all(str(REPO) not in line and "site-packages" in line for line in out), out
    assert all(Path(p).exists() for p in out[1:])
    # pyproject lists the packages (two are mapped from outside localeval/): none of the tree's may be missing
    installed = Path(out[0]).parent
    for init in (REPO / "localeval").rglob("__init__.py"):
        assert (installed / init.relative_to(REPO / "localeval")).is_file(), f"the wheel lacks {init.parent}"


def test_models_install_and_list_from_the_wheel(venv: tuple[Path, dict[str, str], Path]) -> None:
    bin_dir, env, work = venv
    done = run([str(bin_dir / "localeval"), "models", "install", TINY, EMBEDDER], cwd=work, env=env)
    assert f"{TINY}: " in done.stdout and f"{EMBEDDER}: " in done.stdout
    listed = run([str(bin_dir / "localeval"), "models", "list"], cwd=work, env=env).stdout
    assert f"{TINY}" in listed and "installed" in listed


def test_metrics_lists_the_plugin(venv: tuple[Path, dict[str, str], Path]) -> None:
    bin_dir, env, work = venv
    listed = run([str(bin_dir / "localeval"), "metrics"], cwd=work, env=env).stdout
    assert "answer_words" in listed and "[plugin localeval_answer_words]" in listed
    assert "lengths: answer_words" in listed and "faithfulness" in listed
    # the plugin's criteria file joins the shipped ones
    assert "criteria.cites_policy" in listed and "criteria.conciseness" in listed


def test_score_the_bundled_example_with_a_judge_metric_and_the_plugin(venv: tuple[Path, dict[str, str], Path]) -> None:
    bin_dir, env, work = venv
    run([str(bin_dir / "localeval"), "models", "install", TINY, EMBEDDER], cwd=work, env=env)
    example = Path(run([str(bin_dir / "python"), "-c", "import localeval.resources as r; print(r.example_file())"],
                       cwd=work, env=env).stdout.strip())
    # Three of the wheel's example samples (a right answer, a wrong one, a Chinese one, so the wheel's Chinese
    # prompts are read too): each judged sample costs the tiny judge seconds.
    three = work / "three.jsonl"
    lines = example.read_text(encoding="utf-8").splitlines(keepends=True)
    three.write_text("".join(lines[i] for i in (0, 2, 4)), encoding="utf-8")
    # the judge runs on the plugin's backend, found through the entry-point group localeval.backends
    run([str(bin_dir / "localeval"), "score", str(three), "--metrics", "mrr,faithfulness,answer_words,criteria.cites_policy",
         "--judge", TINY,
         "--threads", "1", "--judge-backend", "site-engine", "--out", "out", "-q"], cwd=work, env=env)
    summary = json.loads((work / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["metrics"]["faithfulness"]["n"] + summary["metrics"]["faithfulness"]["n_skipped"] == 3
    assert summary["metrics"]["answer_words"]["n"] == 3 and summary["metrics"]["answer_words"]["mean"] > 3
    assert summary["settings"]["answer_words"] == {"unit": "whitespace-separated words"}
    assert summary["metrics"]["criteria.cites_policy"]["n"] == 3  # the plugin's criterion, judged
    assert "policy number" in json.dumps(summary["settings"]["criteria.cites_policy"])
    assert summary["judge"]["judge_model"] == f"{TINY}.gguf" and summary["judge"]["engine"] == "the site's engine"
    # the report's page assets (template, style, scripts) come from the wheel too
    run([str(bin_dir / "localeval"), "report", "out", "-o", "report.html", "--n-boot", "100"], cwd=work, env=env)
    html = (work / "report.html").read_text(encoding="utf-8")
    assert 'id="report-data"' in html and "function drilldown(" in html and "Plotly" in html
    run([str(bin_dir / "localeval"), "check", "out", "--min", "mrr=0"], cwd=work, env=env)
