"""A faiss index over corpus chunks, saved beside the generated test set so it can be reused.

Vectors are the embedder's unit vectors, so inner product = cosine. The default is faiss's exact
`IndexFlatIP` (a corpus of up to a few hundred thousand chunks searches fast enough exactly); "hnsw"
(IndexHNSWFlat, inner product) trades exactness for speed on large corpora. Search results are ordered
by score, ties by insertion order, so a run is reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ..atomic import AtomicFiles
from ..data.loading import iter_jsonl
from ..errors import InputError, OutputError
from ..files import dumps
from .corpus import Chunk

INDEX_FILE = "chunks.faiss"
CHUNKS_FILE = "chunks.jsonl"
KINDS = ("flat", "hnsw")


@dataclass
class ChunkIndex:
    chunks: list[Chunk]
    index: object  # faiss.Index
    kind: str
    #: the embedder that wrote the vectors (a registry name or an absolute folder), which a search must use;
    #: None in an index written before it was recorded
    embedder: str | None = None

    @classmethod
    def build(cls, chunks: list[Chunk], vectors: np.ndarray, kind: str = "flat",
              embedder: str | None = None) -> "ChunkIndex":
        import faiss

        if kind not in KINDS:
            raise InputError("--index", None, None, f"'{kind}' is not an index kind; use one of {', '.join(KINDS)}")
        dim = vectors.shape[1]
        index = faiss.IndexFlatIP(dim) if kind == "flat" else faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
        threads = faiss.omp_get_max_threads()
        if kind == "hnsw":  # built on several threads, the graph depends on their timing (faiss #983)
            faiss.omp_set_num_threads(1)
        try:
            index.add(np.ascontiguousarray(vectors, dtype=np.float32))
        finally:
            faiss.omp_set_num_threads(threads)
        return cls(chunks, index, kind, embedder)

    def search(self, queries: np.ndarray, k: int) -> list[list[tuple[Chunk, float]]]:
        """Top-k chunks per query vector, best first."""
        k = min(k, len(self.chunks))
        scores, ids = self.index.search(np.ascontiguousarray(queries, dtype=np.float32), k)  # type: ignore[attr-defined]
        return [[(self.chunks[i], float(s)) for s, i in zip(row_s, row_i) if i >= 0] for row_s, row_i in zip(scores, ids)]

    def save(self, folder: Path) -> None:
        """Write the index into `folder` (both files replaced together)."""
        with AtomicFiles(folder) as files:
            self.write_into(files)
            files.commit()

    def write_into(self, files: AtomicFiles, subfolder: str = "") -> None:
        """Add the index's two files to a set of result files (see atomic.py) under `subfolder`."""
        import faiss

        prefix = f"{subfolder}/" if subfolder else ""
        target = files.temp(prefix + INDEX_FILE)
        try:
            faiss.write_index(self.index, str(target))
        except RuntimeError as exc:
            raise OutputError(f"cannot write {target}: {str(exc).splitlines()[0]}") from None
        with files.open(prefix + CHUNKS_FILE) as handle:
            for chunk in self.chunks:
                handle.write(dumps({"id": chunk.id, "doc_id": chunk.doc_id, "text": chunk.text, "index": self.kind,
                                    **({"embedder": self.embedder} if self.embedder else {})}) + "\n")

    @classmethod
    def load(cls, folder: Path) -> "ChunkIndex":
        import faiss

        if not (folder / INDEX_FILE).is_file() or not (folder / CHUNKS_FILE).is_file():
            raise InputError(str(folder), None, None, f"holds no index; expected {INDEX_FILE} and {CHUNKS_FILE} "
                             "(written by `localeval generate`)")
        chunks, kind, embedder = [], "flat", None
        source = str(folder / CHUNKS_FILE)
        for line, row in iter_jsonl(folder / CHUNKS_FILE):
            if not isinstance(row, dict) or not all(isinstance(row.get(k), str) for k in ("id", "doc_id", "text")):
                raise InputError(source, line, None, "expected {id, doc_id, text, index} as `localeval generate` writes it")
            chunks.append(Chunk(row["id"], row["doc_id"], row["text"]))
            kind = row.get("index", kind)
            embedder = row.get("embedder", embedder)
        try:
            index = faiss.read_index(str(folder / INDEX_FILE))
        except RuntimeError as exc:
            raise InputError(str(folder / INDEX_FILE), None, None, f"is not a faiss index: {str(exc).splitlines()[0]}") from None
        if index.ntotal != len(chunks):
            raise InputError(str(folder), None, None, f"{INDEX_FILE} holds {index.ntotal} vectors but {CHUNKS_FILE} "
                             f"{len(chunks)} chunks; rebuild it with `localeval generate`")
        return cls(chunks, index, kind, embedder if isinstance(embedder, str) else None)


def doc_rank(hits: Sequence[tuple[Chunk, float]], doc_id: str) -> int | None:
    """1-based rank of the first chunk of `doc_id` among the hits, or None."""
    return next((rank for rank, (chunk, _) in enumerate(hits, start=1) if chunk.doc_id == doc_id), None)
