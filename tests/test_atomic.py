"""All-or-nothing result files (localeval/atomic.py): a failure at any point, even in the last rename,
leaves the previous results exactly as they were; temp files of dead processes are swept; a kill between
the final renames is finished by the next run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from localeval.atomic import JOURNAL_PREFIX, AtomicFiles, one_run_at_a_time, recover_journals, sweep_stale
from localeval.cli import cli
from localeval.errors import InputError, OutputError

from .conftest import write_jsonl

OLD = {"a.txt": "old a\n", "b.txt": "old b\n", "c.txt": "old c\n"}


def previous(folder: Path) -> Path:
    folder.mkdir()
    for name, text in OLD.items():
        (folder / name).write_text(text)
    return folder


def contents(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.iterdir())}


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped), so it is certainly not running."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_set_replaces_every_file_and_leaves_nothing_else(tmp_path: Path) -> None:
    folder = previous(tmp_path / "out")
    with AtomicFiles(folder) as files:
        for name in OLD:
            with files.open(name) as handle:
                handle.write(f"new {name}\n")
        files.commit()
    assert contents(folder) == {name: f"new {name}\n" for name in OLD}


def test_a_failed_rename_restores_every_previous_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The third of three renames fails (as it does for a file made immutable, or a disk error): the two
    files already replaced get their previous content back, and no temp, backup or journal is left."""
    folder = previous(tmp_path / "out")
    with pytest.raises(OutputError, match=r"cannot write .*c\.txt: Operation not permitted; the previous results"):
        commit_failing_at(folder, monkeypatch, 3, PermissionError(1, "Operation not permitted"))
    assert contents(folder) == OLD


def commit_failing_at(folder: Path, monkeypatch: pytest.MonkeyPatch, nth: int, error: BaseException) -> None:
    """Commit a new set of OLD's files into `folder`, the `nth` rename into place raising `error`."""
    real_replace = os.replace
    renamed = []

    def failing(src, dst):  # noqa: ANN001
        if str(src).endswith(".tmp"):
            renamed.append(dst)
            if len(renamed) == nth:
                raise error
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing)
    with AtomicFiles(folder) as files:
        for name in OLD:
            with files.open(name) as handle:
                handle.write("new\n")
        files.commit()


@pytest.mark.parametrize("files", [1, 3])
def test_ctrl_c_during_the_commit_leaves_the_previous_files_and_no_temp(tmp_path: Path, files: int,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """KeyboardInterrupt while a large temp is flushed to disk (before any rename): the previous files stay,
    and the temps written so far are removed, not left for the next run's sweep."""
    import localeval.atomic as atomic

    folder = previous(tmp_path / "out")
    real_fsync = atomic._fsync

    def interrupted_second(path):  # noqa: ANN001
        if path.name.startswith("." + sorted(OLD)[min(1, files - 1)]):
            raise KeyboardInterrupt
        real_fsync(path)

    monkeypatch.setattr(atomic, "_fsync", interrupted_second)
    with pytest.raises(KeyboardInterrupt):
        with AtomicFiles(folder) as written:
            for name in sorted(OLD)[:files]:
                with written.open(name) as handle:
                    handle.write("new\n")
            written.commit()
    assert contents(folder) == OLD


def test_ctrl_c_between_the_renames_of_a_python_caller_rolls_back(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A Python caller keeps the default SIGINT handler, so nothing holds Ctrl-C during the renames: one that
    lands after the first rename puts the previous file back, and leaves no temp, backup or journal."""
    folder = previous(tmp_path / "out")
    with pytest.raises(KeyboardInterrupt):
        commit_failing_at(folder, monkeypatch, 2, KeyboardInterrupt())
    assert contents(folder) == OLD


def test_a_signal_held_through_the_commit_still_removes_the_previous_runs_leftovers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C during the renames is held until they are done; the previous run's calibration.json and a
    table not written this time go in the same held step, so the new results never sit beside them."""
    import signal

    import localeval.atomic as atomic
    from localeval import interrupts
    from localeval.interrupts import Interrupted, stop_on_signals
    from localeval.pipeline import score_file

    data = write_jsonl(tmp_path / "a.jsonl", [{"id": "1", "question": "q?", "answer": "a", "reference": "a"}])
    out = tmp_path / "out"
    assert CliRunner().invoke(cli, ["score", str(data), "-m", "exact_match", "-o", str(out), "--table", "csv",
                                    "-q"]).exit_code == 0
    (out / "calibration.json").write_text('{"metrics": {}}')
    real_renames = atomic._renames

    def signalled(folder, pairs):  # noqa: ANN001
        os.kill(os.getpid(), signal.SIGINT)  # held by signals_held until the renames are done
        real_renames(folder, pairs)

    monkeypatch.setattr(atomic, "_renames", signalled)
    monkeypatch.setattr(interrupts, "_state", {"raised": False, "holding": 0, "pending": None})
    handlers = {signum: signal.getsignal(signum) for signum in interrupts.SIGNALS}
    try:
        stop_on_signals()
        with pytest.raises(Interrupted):
            score_file(data, out, "exact_match")
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    assert sorted(p.name for p in out.iterdir()) == ["samples.jsonl", "summary.csv", "summary.json"]
    assert json.loads((out / "summary.json").read_text())["tables"] == []


def test_temps_of_files_a_dead_run_wrote_and_this_one_does_not_are_swept(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "a.jsonl", [{"id": "1", "question": "q?", "answer": "a", "reference": "a"}])
    out = tmp_path / "out"
    out.mkdir()
    dead = dead_pid()
    for name in ("samples.parquet", "samples.csv", "calibration.json"):
        (out / f".{name}.{dead}.tmp").write_text("x")
    assert CliRunner().invoke(cli, ["score", str(data), "-m", "exact_match", "-o", str(out), "-q"]).exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == ["samples.jsonl", "summary.csv", "summary.json"]


def test_an_immutable_result_file_leaves_the_old_set(tmp_path: Path) -> None:
    """The same with a real obstacle: `chattr +i` on the last file (skipped where chattr is not allowed)."""
    folder = previous(tmp_path / "out")
    if subprocess.run(["chattr", "+i", str(folder / "c.txt")], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here (needs root on ext4/xfs)")
    try:
        with pytest.raises(OutputError, match="c.txt"):
            with AtomicFiles(folder) as files:
                for name in OLD:
                    with files.open(name) as handle:
                        handle.write("new\n")
                files.commit()
    finally:
        subprocess.run(["chattr", "-i", str(folder / "c.txt")], check=True)
    assert contents(folder) == OLD


def test_score_into_a_folder_with_an_immutable_summary_keeps_the_previous_results(tmp_path: Path) -> None:
    """End to end: the previous run's three files survive a run whose last rename fails."""
    data = write_jsonl(tmp_path / "in.jsonl", [{"id": 1, "question": "q", "contexts": [{"id": "d", "text": "t"}],
                                                 "reference_doc_ids": ["d"]}])
    out = tmp_path / "out"
    assert CliRunner().invoke(cli, ["score", str(data), "-o", str(out), "-m", "mrr", "-q"]).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    data.write_text(data.read_text().replace('"q"', '"changed"'))
    if subprocess.run(["chattr", "+i", str(out / "summary.csv")], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        result = CliRunner().invoke(cli, ["score", str(data), "-o", str(out), "-m", "mrr", "-q"])
    finally:
        subprocess.run(["chattr", "-i", str(out / "summary.csv")], check=True)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "summary.csv" in result.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_stale_temps_of_dead_processes_are_swept_and_live_ones_kept(tmp_path: Path) -> None:
    folder = previous(tmp_path / "out")
    dead, alive = dead_pid(), os.getppid()
    stale = [folder / f".a.txt.{dead}.tmp", folder / f".a.txt.{dead}.bak"]
    kept = [folder / f".a.txt.{alive}.tmp", folder / ".a.txt.notapid.tmp", folder / f".other.{dead}.tmp"]
    for path in stale + kept:
        path.write_text("x")
    sweep_stale(folder / "a.txt")
    assert not any(p.exists() for p in stale)
    assert all(p.exists() for p in kept)  # a live writer's file, and names we do not own, are left alone


def test_a_kill_between_the_renames_is_finished_by_the_next_run(tmp_path: Path) -> None:
    """A process died after writing its journal and renaming one of three files: the next writer into the
    folder completes the set from the journal, so the folder never stays a mix of old and new."""
    folder = previous(tmp_path / "out")
    pid = dead_pid()
    for name in OLD:
        (folder / f".{name}.{pid}.tmp").write_text(f"new {name}\n")
        os.link(folder / name, folder / f".{name}.{pid}.bak")
    renames = [[f".{name}.{pid}.tmp", name] for name in OLD]
    (folder / f"{JOURNAL_PREFIX}{pid}.json").write_text(json.dumps({"renames": renames}))
    os.replace(folder / f".a.txt.{pid}.tmp", folder / "a.txt")  # the one rename it managed
    recover_journals(folder)
    assert contents(folder) == {name: f"new {name}\n" for name in OLD}


def test_a_journal_cut_short_means_no_rename_started(tmp_path: Path) -> None:
    folder = previous(tmp_path / "out")
    pid = dead_pid()
    (folder / f".a.txt.{pid}.tmp").write_text("half")
    (folder / f"{JOURNAL_PREFIX}{pid}.json").write_text('{"renames": [[".a.t')
    with AtomicFiles(folder) as files:  # the next run: recovers, then sweeps the names it writes
        with files.open("a.txt") as handle:
            handle.write("newest\n")
        files.commit()
    assert contents(folder) == {**OLD, "a.txt": "newest\n"}


def test_a_failed_run_removes_its_temps_and_the_folder_it_created(tmp_path: Path) -> None:
    folder = tmp_path / "fresh"
    with pytest.raises(RuntimeError):
        with AtomicFiles(folder) as files:
            with files.open("a.txt") as handle:
                handle.write("x")
            raise RuntimeError("a metric failed")
    assert not folder.exists()


def test_a_held_folder_refuses_a_second_run_and_a_run_that_wrote_nothing_leaves_nothing(tmp_path: Path) -> None:
    """The run lock (tests/test_faults.py runs two real processes into one folder): a second holder is refused
    with one line, the holder's own commits of several files do not wait on it, and a run stopped by bad
    input removes the folder it created, parents included."""
    out = tmp_path / "new" / "deeper" / "out"
    with pytest.raises(InputError):
        with one_run_at_a_time(out):
            with pytest.raises(OutputError, match=f"^output folder {out} is in use by another localeval run; wait"):
                with one_run_at_a_time(out):
                    pass
            raise InputError("data.jsonl", 3, "question", "is empty")
    assert not (tmp_path / "new").exists()

    with one_run_at_a_time(out):
        with AtomicFiles(out) as files:
            for name in ("a.json", "b.json"):
                with files.open(name) as handle:
                    handle.write("{}")
            files.commit()  # several renames take the folder's commit lock: the run's own lock must not block it
    assert sorted(p.name for p in out.iterdir()) == ["a.json", "b.json"]
