"""Is the installed llama-cpp-python a build that can load a model in localeval's process?

A shared library linked by a compiler that links libstdc++ statically (the CUDA image of our lent GPU
machine sets CC, CXX and CUDAHOSTCXX to one) carries its own copy of the C++ standard library and exports
its symbols. Once another copy is in the process (numpy and PyTorch load the system's libstdc++.so.6,
and localeval imports numpy before any model), calls between the copies mix their locale state and
llama.cpp dies with SIGSEGV in its first model load (docs/pages/benchmarks/gpu.md). A segmentation
fault says nothing a user can act on, so the libraries are read before the load and such a build is
refused with one line saying how to rebuild it.
"""

from __future__ import annotations

import functools
import struct
from pathlib import Path

from ..errors import ModelError

#: Symbols only a copy of libstdc++ defines: std::locale, std::ostream, std::ios_base's initialiser.
CXX_RUNTIME_PREFIXES = (b"_ZNSt6locale", b"_ZNSo", b"_ZNSt8ios_base4Init")
SHT_DYNSYM = 11
SHN_UNDEF = 0


def exports_cxx_runtime(path: Path) -> bool:
    """Whether an ELF shared library defines libstdc++'s own symbols in its dynamic symbol table (so that
    they can take the place of, or be taken by, another copy's). Anything that is not a 64-bit
    little-endian ELF file, as on macOS or Windows, is not read and answers False."""
    try:
        with path.open("rb") as f:
            head = f.read(64)
            if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return False
            shoff, = struct.unpack_from("<Q", head, 0x28)
            shentsize, shnum = struct.unpack_from("<HH", head, 0x3A)
            if shentsize != 64:
                return False
            f.seek(shoff)
            table = f.read(shentsize * shnum)
            sections = [struct.unpack_from("<IIQQQQIIQQ", table, i * shentsize) for i in range(shnum)]
            for _, kind, _, _, offset, size, link, _, _, entsize in sections:
                if kind != SHT_DYNSYM or not entsize or link >= len(sections):
                    continue
                f.seek(offset)
                symbols = f.read(size)
                f.seek(sections[link][4])
                names = f.read(sections[link][5])
                for i in range(size // entsize):
                    name_at, _, _, shndx = struct.unpack_from("<IBBH", symbols, i * entsize)
                    if shndx != SHN_UNDEF and names.startswith(CXX_RUNTIME_PREFIXES, name_at):
                        return True
    except struct.error:  # a truncated file: llama.cpp's own load will say what is wrong with it
        return False
    return False


def libraries_with_own_cxx_runtime(folder: Path) -> list[str]:
    """The shared libraries in `folder` that export a libstdc++ copy, each named once as `libX.so` (pip
    installs libX.so, libX.so.0 and libX.so.0.25.3 as copies, or links, of one file)."""
    found: dict[str, Path] = {}
    for path in sorted(folder.glob("*.so*")):
        if path.is_file():  # the glob's ".so" is in every name
            found.setdefault(path.name[:path.name.index(".so") + 3], path)
    return sorted(name for name, path in found.items() if exports_cxx_runtime(path))


def llama_library_folder() -> Path:
    """Where llama-cpp-python keeps llama.cpp's shared libraries."""
    import llama_cpp

    return Path(llama_cpp.__file__).parent / "lib"


@functools.cache
def check_llama_build() -> None:
    """Raises ModelError, before any model load, when llama-cpp-python's libraries carry an exported copy
    of libstdc++; a sound build is read once per process."""
    folder = llama_library_folder()
    if not folder.is_dir():
        return
    bad = libraries_with_own_cxx_runtime(folder)
    if bad:
        raise ModelError(
            f"llama-cpp-python's {', '.join(bad)} in {folder} carry their own copy of the C++ standard library (their "
            "compiler links libstdc++ statically), and llama.cpp crashes at its first model load beside numpy's: "
            "reinstall llama-cpp-python built by the system's compilers, e.g. CC=/usr/bin/gcc CXX=/usr/bin/g++ "
            "CUDAHOSTCXX=/usr/bin/g++ (docs/pages/judge/index.md#gpu)")
