"""A baseline retriever over the index `localeval generate` builds, so a baseline RAG pipeline can be
scored end to end."""

from __future__ import annotations

from pathlib import Path

from ..atomic import write_text_atomic
from ..data.loading import read_samples, validate_file
from ..errors import OptionError
from ..files import check_output_file, dumps
from ..judge.config import JudgeOptions
from ..model_kit import ModelKit
from .index import ChunkIndex


def retrieve(testset: Path, index_dir: Path, out: Path, k: int = 5, embedder: str | None = None) -> int:
    """Fill `contexts` with the index's top-k chunks ({id: document id, text}), a baseline retriever."""
    check_output_file(out)
    index = ChunkIndex.load(index_dir)
    # the index's own embedder unless one is named: its vectors are that model's
    kit = ModelKit.of(JudgeOptions(embedder=embedder or index.embedder))
    kit.check(embedder=True, judge=False)  # before any model loads
    validate_file(testset)
    samples = list(read_samples(testset))
    queries = kit.embedder.encode([s.question for s in samples])
    size = index.index.d  # type: ignore[attr-defined]
    if queries.shape[1] != size:
        what = f"--embedder {embedder}" if embedder else f"the embedder {kit.embedder.name}"
        fix = (f"leave --embedder out to search with the one it was built with ({index.embedder})" if index.embedder
               else "give --embedder the one it was built with")
        raise OptionError(f"{what} writes vectors of {queries.shape[1]} numbers, but the index in {index_dir} holds "
                          f"vectors of {size}: {fix}")
    hits = index.search(queries, k)
    rows = []
    for sample, found in zip(samples, hits):
        record = dict(sample.record)
        record["contexts"] = [{"id": c.doc_id, "text": c.text, "chunk_id": c.id, "score": round(s, 6)} for c, s in found]
        rows.append(dumps(record) + "\n")
    write_text_atomic(out, "".join(rows))
    return len(samples)
