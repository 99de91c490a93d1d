"""A baseline retriever over the index `localeval generate` builds, so a baseline RAG pipeline can be
scored end to end."""

from __future__ import annotations

from pathlib import Path

from ..atomic import write_text_atomic
from ..data.loading import read_samples, validate_file
from ..files import check_output_file, dumps
from ..judge.config import JudgeOptions
from ..model_kit import ModelKit
from .index import ChunkIndex


def retrieve(testset: Path, index_dir: Path, out: Path, k: int = 5, embedder: str | None = None) -> int:
    """Fill `contexts` with the index's top-k chunks ({id: document id, text}), a baseline retriever."""
    check_output_file(out)
    kit = ModelKit.of(JudgeOptions(embedder=embedder))
    kit.check(embedder=True, judge=False)  # before anything loads
    validate_file(testset)
    index = ChunkIndex.load(index_dir)
    samples = list(read_samples(testset))
    hits = index.search(kit.embedder.encode([s.question for s in samples]), k)
    rows = []
    for sample, found in zip(samples, hits):
        record = dict(sample.record)
        record["contexts"] = [{"id": c.doc_id, "text": c.text, "chunk_id": c.id, "score": round(s, 6)} for c, s in found]
        rows.append(dumps(record) + "\n")
    write_text_atomic(out, "".join(rows))
    return len(samples)
