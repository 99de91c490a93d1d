"""A model of the same architecture, shapes and types as another, small enough to carry: a GGUF judge, or an
embedder folder whose weights are one model.safetensors.

The lent GPU machine (docs/benchmarks/gpu.md) takes at most 64 MiB per call, and the default judge is
1.1 GB. Speed does not depend on the weights' values, so `pack` keeps the model's whole header (metadata,
tokenizer, tensor table) and, of each tensor, its first quantisation blocks or values; `unpack` writes a file
of the original's exact size and layout in which every tensor repeats its own first blocks (an embedder's
other files are copied as they are). Every scale in it is one of the model's, so the outputs stay finite;
they are nonsense, and the file's sha256 is not the model's. Figures measured on it are throughput figures
only, and results files say which file gave them.

    .venv/bin/python bench/same_shape.py pack models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf out/kit
    python3 bench/same_shape.py unpack out/kit /tmp/judge-same-shape.gguf     # on the other machine
    .venv/bin/python bench/same_shape.py pack models/all-minilm-l6-v2 out/kit-embedder
    python3 bench/same_shape.py unpack out/kit-embedder /tmp/all-minilm-l6-v2  # a folder
"""

from __future__ import annotations

import argparse
import json
import struct
from pathlib import Path
from typing import BinaryIO

#: ggml type id -> (values per block, bytes per block), for the types K-quant GGUFs hold.
BLOCKS = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34), 10: (256, 84),
          11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210), 30: (1, 2)}
SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
STRING, ARRAY = 8, 9


def _read(handle: BinaryIO, fmt: str) -> int | float:
    return struct.unpack("<" + fmt, handle.read(struct.calcsize(fmt)))[0]


def _skip_value(handle: BinaryIO, kind: int) -> int | None:
    """Moves past one metadata value; returns it when it is an unsigned integer (general.alignment)."""
    if kind == STRING:
        handle.seek(int(_read(handle, "Q")), 1)
    elif kind == ARRAY:
        inner, count = int(_read(handle, "I")), int(_read(handle, "Q"))
        if inner in SCALARS:
            handle.seek(struct.calcsize(SCALARS[inner]) * count, 1)
        else:
            for _ in range(count):
                _skip_value(handle, inner)
    else:
        value = _read(handle, SCALARS[kind])
        return int(value) if kind in (4, 10) else None
    return None


def tensor_table(path: Path) -> tuple[int, list[dict[str, int | str]]]:
    """The offset where tensor data starts, and each tensor's name, type and offset in file order."""
    with path.open("rb") as handle:
        if handle.read(4) != b"GGUF" or _read(handle, "I") != 3:
            raise SystemExit(f"{path}: not a version 3 GGUF")
        n_tensors, n_kv = int(_read(handle, "Q")), int(_read(handle, "Q"))
        alignment = 32
        for _ in range(n_kv):
            key = handle.read(int(_read(handle, "Q"))).decode()
            value = _skip_value(handle, int(_read(handle, "I")))
            if key == "general.alignment" and value:
                alignment = value
        tensors = []
        for _ in range(n_tensors):
            name = handle.read(int(_read(handle, "Q"))).decode()
            handle.seek(8 * int(_read(handle, "I")), 1)
            kind, offset = int(_read(handle, "I")), int(_read(handle, "Q"))
            if kind not in BLOCKS:
                raise SystemExit(f"{path}: tensor {name} has ggml type {kind}, which this script does not know")
            tensors.append({"name": name, "type": kind, "offset": offset})
        start = -(-handle.tell() // alignment) * alignment
    return start, sorted(tensors, key=lambda t: int(t["offset"]))


#: safetensors dtype -> bytes per value
DTYPES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


def safetensors_table(path: Path) -> tuple[int, list[dict[str, int | str]]]:
    """As tensor_table, for a .safetensors file (its type is the bytes per value, its block one value)."""
    with path.open("rb") as handle:
        length = int(_read(handle, "Q"))
        header = json.loads(handle.read(length))
    tensors = [{"name": name, "type": DTYPES[spec["dtype"]], "offset": spec["data_offsets"][0]}
               for name, spec in header.items() if name != "__metadata__"]
    return 8 + length, sorted(tensors, key=lambda t: int(t["offset"]))


def pack(model: Path, kit: Path, sample_bytes: int) -> None:
    kit.mkdir(parents=True, exist_ok=True)
    weights = model
    if model.is_dir():  # an embedder folder: its small files as they are, its weights packed
        weights = model / "model.safetensors"
        for f in model.rglob("*"):
            if f.is_file() and f != weights:
                (kit / "files" / f.relative_to(model)).parent.mkdir(parents=True, exist_ok=True)
                (kit / "files" / f.relative_to(model)).write_bytes(f.read_bytes())
    gguf = weights.suffix == ".gguf"
    start, tensors = tensor_table(weights) if gguf else safetensors_table(weights)
    size = weights.stat().st_size
    with weights.open("rb") as source, (kit / "samples.bin").open("wb") as samples:
        (kit / "header.bin").write_bytes(source.read(start))
        for i, tensor in enumerate(tensors):
            end = int(tensors[i + 1]["offset"]) if i + 1 < len(tensors) else size - start
            block = BLOCKS[int(tensor["type"])][1] if gguf else int(tensor["type"])
            region = end - int(tensor["offset"])
            tensor["region"] = region
            tensor["sample"] = min(region, max(block, sample_bytes // block * block))
            source.seek(start + int(tensor["offset"]))
            samples.write(source.read(int(tensor["sample"])))
    (kit / "tensors.json").write_text(json.dumps({"source": model.name, "size": size, "data_start": start,
                                                  "folder": weights != model, "tensors": tensors}))
    print(f"{kit}: header {start} bytes, {len(tensors)} tensors, samples {(kit / 'samples.bin').stat().st_size} bytes")


def unpack(kit: Path, out: Path) -> None:
    table = json.loads((kit / "tensors.json").read_text())
    if table.get("folder"):
        for f in (kit / "files").rglob("*"):
            if f.is_file():
                (out / f.relative_to(kit / "files")).parent.mkdir(parents=True, exist_ok=True)
                (out / f.relative_to(kit / "files")).write_bytes(f.read_bytes())
        out = out / "model.safetensors"
    with (kit / "samples.bin").open("rb") as samples, out.open("wb") as target:
        target.write((kit / "header.bin").read_bytes())
        for tensor in table["tensors"]:
            sample = samples.read(tensor["sample"])
            whole, rest = divmod(tensor["region"], len(sample))
            target.seek(table["data_start"] + tensor["offset"])
            target.write(sample * whole + sample[:rest])
    if out.stat().st_size != table["size"]:
        raise SystemExit(f"{out}: {out.stat().st_size} bytes, expected {table['size']}")
    print(f"{out}: {table['size']} bytes, the shapes and types of {table['source']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)
    packing = verbs.add_parser("pack")
    packing.add_argument("model", type=Path)
    packing.add_argument("kit", type=Path)
    packing.add_argument("--sample-bytes", type=int, default=16384)
    unpacking = verbs.add_parser("unpack")
    unpacking.add_argument("kit", type=Path)
    unpacking.add_argument("out", type=Path)
    args = parser.parse_args()
    if args.verb == "pack":
        pack(args.model, args.kit, args.sample_bytes)
    else:
        unpack(args.kit, args.out)


if __name__ == "__main__":
    main()
