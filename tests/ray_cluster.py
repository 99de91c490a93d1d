"""A real multi-node Ray cluster on this machine, for tests: each node is its own `ray start --block`
process (its own raylet, CPUs and temporary folder), all on this machine, no dashboard, no usage stats, and
token authentication with a token of its own (Ray >= 2.52 enables it by default; passing the token in
the environment keeps ~/.ray untouched).

Stopping kills exactly the processes these nodes started (the `ray start` processes and everything below
them, worker processes included), never other Ray processes on the machine; `ray stop` would kill them all.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RAY = str(Path(sys.executable).parent / "ray")
STARTED = "Ray runtime started"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ray_env(token: str, **overrides: str) -> dict[str, str]:
    """This process's environment (models folder, offline switches) with the repository importable and the
    cluster's token: for its nodes and for drivers that join it."""
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    env.update(overrides)
    return env


class RayCluster:
    """`head()` first, then `add_node()` for each worker node; `stop()` in a finally."""

    def __init__(self) -> None:
        # Ray's socket paths must stay short (about 100 characters): not under pytest's long tmp paths.
        self.root = Path(tempfile.mkdtemp(prefix="lr", dir="/tmp"))
        self.address = f"127.0.0.1:{free_port()}"
        self.nodes: list[subprocess.Popen[bytes]] = []
        self.token = secrets.token_hex(32)
        self.folders: dict[int, Path] = {}

    def env(self, **overrides: str) -> dict[str, str]:
        """The environment of a driver that joins this cluster."""
        return ray_env(self.token, **overrides)

    def head(self, cpus: int = 1, **env: str) -> str:
        self._start(["--head", "--port", self.address.rsplit(":", 1)[1], "--include-dashboard=false"], cpus, env)
        return self.address

    def add_node(self, cpus: int = 1, **env: str) -> subprocess.Popen[bytes]:
        return self._start(["--address", self.address], cpus, env)

    def _start(self, role: list[str], cpus: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
        folder = self.root / f"n{len(self.folders)}"
        folder.mkdir()
        log = folder / "start.log"
        command = [RAY, "start", *role, "--num-cpus", str(cpus), "--num-gpus", "0",
                   "--object-store-memory", str(256 * 1024 * 1024), "--disable-usage-stats",
                   "--temp-dir", str(folder), "--block"]
        with log.open("wb") as out:
            node = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=self.env(**env),
                                    start_new_session=True)
        self.nodes.append(node)
        self.folders[node.pid] = folder
        deadline = time.monotonic() + 180
        while STARTED not in log.read_text(errors="replace"):
            if node.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray start {' '.join(role)} failed:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.5)
        return node

    def node_id(self, node: subprocess.Popen[bytes]) -> str:
        """The id the node registered under (its session folder names its agents' port files after it)."""
        (port_file,) = (self.folders[node.pid] / "session_latest").glob("metrics_agent_port_*")
        return port_file.name.rsplit("_", 1)[1]

    def stop_node(self, node: subprocess.Popen[bytes]) -> None:
        for pid in [node.pid, *_descendants(node.pid)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        node.wait(timeout=30)
        if node in self.nodes:
            self.nodes.remove(node)

    def stop(self) -> None:
        for node in reversed(self.nodes):
            self.stop_node(node)
        self.nodes.clear()
        shutil.rmtree(self.root, ignore_errors=True)


def _descendants(pid: int) -> list[int]:
    """Every live process below `pid` (Ray's workers run in their own sessions, but stay its descendants)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found
