"""A faiss index over corpus chunks, saved beside the generated test set so it can be reused.

Vectors are the embedder's unit vectors, so inner product = cosine. The default is faiss's exact
`IndexFlatIP` (a corpus of up to a few hundred thousand chunks searches fast enough exactly); "hnsw"
(IndexHNSWFlat, inner product) trades exactness for speed on large corpora. Search results are ordered
by score, ties by insertion order, so a run is reproducible.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import InputError
from .corpus import Chunk

INDEX_FILE = "chunks.faiss"
CHUNKS_FILE = "chunks.jsonl"
KINDS = ("flat", "hnsw")


@dataclass
class ChunkIndex:
    chunks: list[Chunk]
    index: object  # faiss.Index
    kind: str

    @classmethod
    def build(cls, chunks: list[Chunk], vectors: np.ndarray, kind: str = "flat") -> "ChunkIndex":
        import faiss

        if kind not in KINDS:
            raise InputError("--index", None, None, f"'{kind}' is not an index kind; use one of {', '.join(KINDS)}")
        dim = vectors.shape[1]
        index = faiss.IndexFlatIP(dim) if kind == "flat" else faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
        index.add(np.ascontiguousarray(vectors, dtype=np.float32))
        return cls(chunks, index, kind)

    def search(self, queries: np.ndarray, k: int) -> list[list[tuple[Chunk, float]]]:
        """Top-k chunks per query vector, best first."""
        k = min(k, len(self.chunks))
        scores, ids = self.index.search(np.ascontiguousarray(queries, dtype=np.float32), k)  # type: ignore[attr-defined]
        return [[(self.chunks[i], float(s)) for s, i in zip(row_s, row_i) if i >= 0] for row_s, row_i in zip(scores, ids)]

    def save(self, folder: Path) -> None:
        import faiss

        folder.mkdir(parents=True, exist_ok=True)
        faiss.write_index(self.index, str(folder / INDEX_FILE))
        with (folder / CHUNKS_FILE).open("w", encoding="utf-8") as handle:
            for chunk in self.chunks:
                handle.write(json.dumps({"id": chunk.id, "doc_id": chunk.doc_id, "text": chunk.text, "index": self.kind},
                                        ensure_ascii=False) + "\n")

    @classmethod
    def load(cls, folder: Path) -> "ChunkIndex":
        import faiss

        if not (folder / INDEX_FILE).exists() or not (folder / CHUNKS_FILE).exists():
            raise InputError(str(folder), None, None, f"holds no index; expected {INDEX_FILE} and {CHUNKS_FILE} "
                             "(written by `localeval generate`)")
        rows = [json.loads(line) for line in (folder / CHUNKS_FILE).read_text(encoding="utf-8").splitlines()]
        chunks = [Chunk(r["id"], r["doc_id"], r["text"]) for r in rows]
        return cls(chunks, faiss.read_index(str(folder / INDEX_FILE)), rows[0]["index"] if rows else "flat")


def doc_rank(hits: Sequence[tuple[Chunk, float]], doc_id: str) -> int | None:
    """1-based rank of the first chunk of `doc_id` among the hits, or None."""
    return next((rank for rank, (chunk, _) in enumerate(hits, start=1) if chunk.doc_id == doc_id), None)
