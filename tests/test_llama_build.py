"""The check of llama-cpp-python's build before any model load (localeval/judge/llama_build.py): a build whose
libraries export their own copy of libstdc++ crashed llama.cpp at its first load beside numpy on the lent GPU
machine (docs/pages/benchmarks/gpu.md), and is refused with one line instead. The libraries here are real
ones, compiled by the machine's g++ the three ways that matter."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from localeval.errors import ModelError
from localeval.judge import llama_build
from localeval.judge.llama_build import exports_cxx_runtime, libraries_with_own_cxx_runtime

SOURCE = """#include <sstream>
#include <string>
extern "C" const char* digits(long v) { static std::string s; std::ostringstream o; o << v; s = o.str(); return s.c_str(); }
"""
#: How each library is linked, and whether it exports a copy of libstdc++.
LINKS = {"shared.so": ([], False), "static.so": (["-static-libstdc++"], True),
         "static-hidden.so": (["-static-libstdc++", "-Wl,--exclude-libs,ALL"], False)}


@pytest.fixture(scope="module")
def libraries(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not shutil.which("g++"):
        pytest.skip("needs g++ (Debian's g++ package), which compiles the libraries these tests read")
    folder = tmp_path_factory.mktemp("libs")
    (folder / "digits.cpp").write_text(SOURCE)
    for name, (flags, _) in LINKS.items():
        subprocess.run(["g++", "-shared", "-fPIC", str(folder / "digits.cpp"), "-o", str(folder / name), *flags],
                       check=True)
    return folder


@pytest.mark.parametrize("name", sorted(LINKS))
def test_a_library_exports_a_copy_of_libstdcxx_only_when_linked_statically_without_hiding_it(libraries: Path,
                                                                                            name: str) -> None:
    assert exports_cxx_runtime(libraries / name) is LINKS[name][1]


def test_what_is_not_a_whole_elf_library_is_not_read(libraries: Path, tmp_path: Path) -> None:
    (tmp_path / "notes.so").write_text("not a library")
    (tmp_path / "empty.so").write_bytes(b"")
    whole = (libraries / "static.so").read_bytes()
    (tmp_path / "cut.so").write_bytes(whole[:len(whole) // 2])  # its section headers are at the end
    assert libraries_with_own_cxx_runtime(tmp_path) == []


def test_each_library_is_named_once_whether_its_versions_are_copies_or_links(libraries: Path, tmp_path: Path) -> None:
    for name in ("libggml-cuda.so", "libggml-cuda.so.0", "libggml-cuda.so.0.25.3"):  # as pip installs them
        (tmp_path / name).write_bytes((libraries / "static.so").read_bytes())
    (tmp_path / "libggml-base.so.0.25.3").write_bytes((libraries / "shared.so").read_bytes())
    (tmp_path / "libggml-base.so").symlink_to("libggml-base.so.0.25.3")
    (tmp_path / "libllama.so.0").symlink_to("libggml-cuda.so.0")
    assert libraries_with_own_cxx_runtime(tmp_path) == ["libggml-cuda.so", "libllama.so"]


def test_the_installed_llama_cpp_python_is_a_sound_build() -> None:
    llama_build.check_llama_build.cache_clear()
    llama_build.check_llama_build()
    assert list(llama_build.llama_library_folder().glob("libllama*"))


def test_a_build_with_its_own_libstdcxx_is_refused_with_one_line_before_the_model_loads(
        libraries: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from localeval.judge.llama_model import LlamaModel

    (tmp_path / "libggml-cuda.so").write_bytes((libraries / "static.so").read_bytes())
    monkeypatch.setattr(llama_build, "llama_library_folder", lambda: tmp_path)
    llama_build.check_llama_build.cache_clear()
    try:
        with pytest.raises(ModelError) as raised:  # the file need not exist: the check comes first
            LlamaModel(tmp_path / "judge.gguf", "0" * 64)
    finally:
        llama_build.check_llama_build.cache_clear()
    message = str(raised.value)
    assert "\n" not in message and "llama-cpp-python's libggml-cuda.so in" in message and "CXX=/usr/bin/g++" in message
