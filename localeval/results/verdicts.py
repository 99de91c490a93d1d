"""The judge's probability for each retrieved chunk of a scored run, beside the relevance that the
sample's own `reference_doc_ids` give that chunk.

`context_precision` counts a chunk as useful, and `passage_relevance` as relevant, at P ≥ the verdict
threshold. How far 0.5 is from the right threshold depends on the language and the rubric
(docs/pages/benchmarks/accuracy.md). A test set that names its relevant documents already labels every
retrieved chunk, so `localeval calibrate` can fit `--verdict-threshold` on those labels, with no labels file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..data.loading import iter_jsonl
from ..data.records import OUTPUT_KEYS, sample_from_record
from ..errors import InputError
from ..metrics.base import ChunkDetails
from ..metrics.registry import specs
from ..strict_json import finite_number
from .runs import samples_path


def chunk_metrics() -> dict[str, ChunkDetails]:
    """The registered metrics that keep a judge probability per chunk (they declare `chunk_details`), by name."""
    return {spec.name: spec.cls.chunk_details for spec in sorted(specs(), key=lambda spec: spec.name)
            if spec.cls.chunk_details is not None}


@dataclass
class ChunkVerdicts:
    """One metric's chunk probabilities and 0/1 relevance (grade > 0 in reference_doc_ids), paired."""

    p: list[float] = field(default_factory=list)
    relevant: list[int] = field(default_factory=list)
    samples: int = 0


def chunk_verdicts(run: Path) -> dict[str, ChunkVerdicts]:
    """Per chunk-judging metric in the run: every chunk that has an id, of a sample whose reference_doc_ids
    name at least one relevant document (a sample with none is unjudged, as trec_eval leaves it out)."""
    path = samples_path(run)
    source = str(path)
    found: dict[str, ChunkVerdicts] = {}
    declared = chunk_metrics()
    for line, record in iter_jsonl(path):
        details = record.get("details") if isinstance(record, dict) else None
        if not isinstance(details, dict) or not any(m in details for m in declared):
            continue
        sample = sample_from_record({k: v for k, v in record.items() if k not in OUTPUT_KEYS}, source, line)
        if not sample.contexts or not sample.relevance or not any(g > 0 for g in sample.relevance.values()):
            continue
        for metric, chunk_details in declared.items():
            if metric not in details:
                continue
            where = f"details.{metric}.{chunk_details.key}"
            pairs = chunk_probabilities(details[metric], chunk_details, len(sample.contexts),
                                        lambda message: InputError(source, line, where, message))
            chunks = [(p, sample.contexts[i].id) for i, p in pairs if sample.contexts[i].id is not None]
            if not chunks:
                continue
            verdicts = found.setdefault(metric, ChunkVerdicts())
            verdicts.samples += 1
            for p, doc_id in chunks:
                verdicts.p.append(p)
                verdicts.relevant.append(int(sample.relevance.get(doc_id, 0) > 0))
    return found


def chunk_probabilities(block: Any, declared: ChunkDetails, n_contexts: int,
                        fail: Callable[[str], InputError]) -> list[tuple[int, float]]:
    """(context index, P) for each entry of a metric's per-chunk details; `fail` makes the error for a
    malformed entry."""
    key, in_order = declared.key, declared.in_order
    entries = block.get(key) if isinstance(block, dict) else None
    if not isinstance(entries, list):
        raise fail("missing or not a list; was this run written by `localeval score`?")
    if in_order and len(entries) != n_contexts:
        raise fail(f"has {len(entries)} entries for {n_contexts} contexts")
    out = []
    for i, entry in enumerate(entries):
        p = entry.get("p") if isinstance(entry, dict) else None
        if not finite_number(p) or not 0 <= p <= 1:
            raise fail(f"entry {i}: 'p' must be a probability, got {p!r}")
        rank = i + 1 if in_order else entry.get("rank")
        if isinstance(rank, bool) or not isinstance(rank, int) or not 1 <= rank <= n_contexts:
            raise fail(f"entry {i}: 'rank' must be a rank among the {n_contexts} contexts, got {entry.get('rank')!r}")
        out.append((rank - 1, float(p)))
    return out
