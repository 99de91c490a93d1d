"""The malformed-input corpus: every file in tests/corpus/files is run through the real CLI entry point
(`localeval.cli.main`, the console script's function) as a user would type it, and must end as
tests/corpus/cases.json says — exit 2 with exactly one line on stderr holding the expected fragment, or
exit 0 for odd inputs that are valid — and never with a traceback.

A case is {"name", "args", "exit", "message"} plus optional checks:
  setup: {"mkdir": [...], "mkfifo": [...], "write": {path: text}, "readonly": [folder, ...]}
  unchanged: files that must keep their content (previous results after a failed run)
  absent: paths that must not exist afterwards (no output folder, no stale temp files)
  not_message: a fragment the error must not contain (e.g. an internal temp file name)
  check_output: {path: fragment} for successful runs

The cases run in-process (seconds for all of them); `test_console_script_matches_in_process` runs a few
through the installed `localeval` script to show the two agree.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from localeval.cli import main

CORPUS = Path(__file__).resolve().parent / "corpus"
CASES = json.loads((CORPUS / "cases.json").read_text(encoding="utf-8"))["cases"]
#: Cases whose error is found only after the model files were checked (present, the registry's size): they
#: need those files, though nothing is loaded.
TINY_CHECKED = ["labels_checked_before_the_judge_loads", "cache_parent_is_a_file", "cache_is_a_folder",
                "cache_is_not_sqlite", "embedder_unknown_name", "prompts_folder_missing", "prompts_malformed_file",
                "prompts_template_syntax_error"]
MARKS = {**{name: [pytest.mark.model("smollm2-135m-instruct-q4_1")] for name in TINY_CHECKED},
         **{name: [pytest.mark.default_judge, pytest.mark.model("all-minilm-l6-v2")]
            for name in ("generate_corpus_deep_nesting", "generate_corpus_long_id", "generate_corpus_missing")},
         **{name: [pytest.mark.model("all-minilm-l6-v2")] for name in ("retrieve_no_index", "retrieve_corrupt_index")}}


def test_corpus_is_large_and_covers_every_command() -> None:
    assert len(CASES) >= 60
    assert {c["args"][0] for c in CASES} >= {"score", "calibrate", "compare", "generate", "retrieve"}
    assert sum(c["exit"] == 0 for c in CASES) >= 5  # odd but valid inputs must still be accepted


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the corpus files as the current folder, with the judge cache kept inside it."""
    work = tmp_path / "work"
    shutil.copytree(CORPUS / "files", work)
    monkeypatch.chdir(work)
    monkeypatch.setenv("LOCALEVAL_CACHE", str(work / ".cache" / "judge.sqlite"))
    return work


@pytest.mark.parametrize("case", [pytest.param(c, marks=MARKS.get(c["name"], []), id=c["name"]) for c in CASES])
def test_corpus_case(case: dict[str, Any], workspace: Path, monkeypatch: pytest.MonkeyPatch,
                     capsys: pytest.CaptureFixture[str]) -> None:
    with _setup(case.get("setup", {}), workspace):
        code = run_main(case["args"], monkeypatch)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert code == case["exit"], f"exit {code}; stderr: {err}"
    if case["exit"] == 2:
        assert err.startswith("error: ") and err.count("\n") == 1, f"not one line: {err!r}"
        assert case["message"] in err, err
        if case.get("not_message"):
            assert case["not_message"] not in err
    for path, fragment in case.get("check_output", {}).items():
        assert fragment in (workspace / path).read_text(encoding="utf-8")
    for path in case.get("unchanged", []):
        assert (workspace / path).read_bytes() == (CORPUS / "files" / path).read_bytes()
    for path in case.get("absent", []):
        assert not (workspace / path).exists()
    assert not [p for p in workspace.rglob("*.tmp")], "temp files left behind"


def run_main(args: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    """`localeval ARGS` in this process; any exception other than SystemExit is a traceback (fails)."""
    monkeypatch.setattr(sys, "argv", ["localeval", *args])
    with pytest.raises(SystemExit) as done:
        main()
    code = done.value.code
    return code if isinstance(code, int) else (0 if code is None else 1)


class _setup:
    """Prepare the workspace for a case; a read-only folder is a read-only tmpfs when we may mount one
    (root), else a folder without write permission (anyone else). Undone on exit."""

    def __init__(self, spec: dict[str, Any], work: Path) -> None:
        self.spec, self.work, self.mounts = spec, work, []

    def __enter__(self) -> None:
        for path in self.spec.get("mkdir", []):
            (self.work / path).mkdir(parents=True)
        for path in self.spec.get("mkfifo", []):
            os.mkfifo(self.work / path)
        for path, text in self.spec.get("write", {}).items():
            (self.work / path).write_text(text, encoding="utf-8")
        for path in self.spec.get("readonly", []):
            folder = self.work / path
            folder.mkdir()
            if os.geteuid() == 0:
                done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(folder)],
                                      capture_output=True)
                if done.returncode == 0:
                    self.mounts.append(folder)
            else:
                folder.chmod(0o555)
            if os.access(folder, os.W_OK):
                pytest.skip("cannot make a read-only folder here (root without mount permission)")

    def __exit__(self, *exc: object) -> None:
        for folder in self.mounts:
            subprocess.run(["umount", str(folder)], check=False)
        for path in self.spec.get("readonly", []):
            if (self.work / path).exists():
                (self.work / path).chmod(0o755)


@pytest.mark.parametrize("name", ["jsonl_deep_nesting", "csv_quote_never_closed", "usage_unknown_option",
                                  "out_under_a_file", "jsonl_duplicate_id_with_control_chars"])
def test_console_script_matches_in_process(name: str, workspace: Path) -> None:
    case = next(c for c in CASES if c["name"] == name)
    script = Path(sys.executable).with_name("localeval")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "localeval"]
    done = subprocess.run(command + case["args"], capture_output=True, text=True, cwd=workspace, timeout=120)
    assert "Traceback" not in done.stdout + done.stderr
    assert done.returncode == case["exit"]
    assert done.stderr.count("\n") == 1 and case["message"] in done.stderr
