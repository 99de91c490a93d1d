"""What a GGUF file's header says about the judge before llama.cpp loads it: the weights' quantization
and the size of one token's KV cache.

The batched engine's CPU default depends on both (judge/config.py): generation lanes pay off only where
llama.cpp's tiled matrix multiply takes the weights (K-quants and i-quants), and every sequence in flight
holds a KV stream of --n-ctx tokens. Reading the header costs a fraction of a second and needs no model
load, so `--parallel`'s default is known before the judge opens (the pipeline sizes its windows by it).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO

#: llama.cpp's llama_ftype values whose main weights are K-quants or i-quants: the types ggml-cpu's tiled
#: matrix multiply takes from 8 rows of a micro-batch (vendor ggml-cpu/tiled/tiled.cpp,
#: ggml_tiled_supported: Q2_K..Q6_K, IQ1_S/M, IQ2_XXS/XS/S, IQ3_XXS/S, IQ4_XS). Q4_0, Q4_1, Q8_0, IQ4_NL
#: and the float types are not among them.
TILED_FTYPES = frozenset({10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 26, 27, 28, 29, 30, 31})

# GGUF's scalar value types (gguf.md) with their struct formats; 8 is a string, 9 an array.
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
#: The header key holding the tokenizer's vocabulary, one string per token.
TOKENS = "tokenizer.ggml.tokens"


@dataclass(frozen=True)
class GgufHeader:
    """The few header values the engine's defaults read; None where the file does not say."""

    file_type: int | None
    kv_bytes_per_token: int | None  # f16 K and V of every layer, as llama.cpp allocates them by default

    @property
    def tiled(self) -> bool:
        return self.file_type in TILED_FTYPES


def read_header(path: Path) -> GgufHeader:
    """The header of the GGUF file at `path`; an unreadable or foreign file gives a header that says
    nothing (llama.cpp's own load reports what is wrong with it)."""
    try:
        stat = path.stat()
        return _read_header(str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    except (OSError, ValueError, struct.error, UnicodeDecodeError):
        return GgufHeader(None, None)


@lru_cache(maxsize=8)
def _read_header(path: str, size: int, mtime_ns: int) -> GgufHeader:
    meta = _metadata(path, size)
    if meta is None:
        return GgufHeader(None, None)
    arch = meta.get("general.architecture")
    file_type = meta.get("general.file_type")
    return GgufHeader(file_type if isinstance(file_type, int) else None, _kv_bytes(meta, arch))


def vocabulary(path: Path) -> set[str] | None:
    """The judge's tokens as text (`tokenizer.ggml.tokens`), read from the header with no model load; None
    when the file does not say. A criterion's levels are checked against it (metrics/criteria.py)."""
    try:
        stat = path.stat()
        return _vocabulary(str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    except (OSError, ValueError, struct.error, UnicodeDecodeError):
        return None


@lru_cache(maxsize=2)
def _vocabulary(path: str, size: int, mtime_ns: int) -> set[str] | None:
    tokens = (_metadata(path, size, keep=TOKENS) or {}).get(TOKENS)
    return set(tokens) if isinstance(tokens, list) else None


def _metadata(path: str, size: int, keep: str | None = None) -> dict[str, Any] | None:
    """The header's key-value pairs, arrays read past, except the one named `keep`, which comes back whole
    and ends the reading; None for a file that is not GGUF version 2 or later."""
    with open(path, "rb") as handle:
        reader = _Reader(handle, size)
        if handle.read(4) != b"GGUF":
            return None
        version, _tensors, n_kv = struct.unpack("<IQQ", handle.read(20))
        if version < 2:
            return None
        meta: dict[str, Any] = {}
        for _ in range(n_kv):
            key = reader.string()
            meta[key] = reader.value(struct.unpack("<I", handle.read(4))[0], keep=key == keep)
            if key == keep:
                break
    return meta


def _kv_bytes(meta: dict[str, Any], arch: Any) -> int | None:
    """f16 K and V per token over all layers: layers × (heads_kv × key_length + heads_kv × value_length) × 2."""
    if not isinstance(arch, str):
        return None
    layers, heads, width = (meta.get(f"{arch}.{k}") for k in ("block_count", "attention.head_count", "embedding_length"))
    heads_kv = meta.get(f"{arch}.attention.head_count_kv", heads)
    if not all(isinstance(v, int) and v > 0 for v in (layers, heads, width, heads_kv)):
        return None
    head = width // heads
    key, value = meta.get(f"{arch}.attention.key_length", head), meta.get(f"{arch}.attention.value_length", head)
    return layers * heads_kv * (key + value) * 2


class _Reader:
    """Reads GGUF values from a file of `size` bytes. A length read from a broken file can claim terabytes,
    so none is read or looped over past the file's end."""

    def __init__(self, handle: BinaryIO, size: int) -> None:
        self.handle, self.size = handle, size

    def room(self, length: int) -> None:
        if length > self.size - self.handle.tell():
            raise ValueError("a GGUF header length runs past the end of the file")

    def string(self) -> str:
        (length,) = struct.unpack("<Q", self.handle.read(8))
        self.room(length)
        return self.handle.read(length).decode("utf-8")

    def value(self, kind: int, keep: bool = False) -> Any:
        """One value; an array's items are read past, not kept (the tokenizer's run to 150,000 strings),
        unless `keep` (an array of strings comes back as a list)."""
        if kind in _SCALARS:
            fmt = _SCALARS[kind]
            return struct.unpack(fmt, self.handle.read(struct.calcsize(fmt)))[0]
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            item, count = struct.unpack("<IQ", self.handle.read(12))
            if item in _SCALARS:
                length = count * struct.calcsize(_SCALARS[item])
                self.room(length)
                self.handle.seek(length, 1)
            else:
                self.room(count * 8)  # a string or an array takes at least 8 bytes
                if keep:
                    return [self.value(item) for _ in range(count)]
                for _ in range(count):
                    self.value(item)
            return None
        raise ValueError(f"unknown GGUF value type {kind}")
