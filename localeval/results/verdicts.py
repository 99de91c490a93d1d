"""The judge's probability for each retrieved chunk of a scored run, beside the relevance that the
sample's own `reference_doc_ids` give that chunk.

`context_precision` counts a chunk as useful, and `passage_relevance` as relevant, at P ≥ the verdict
threshold. How far 0.5 is from the right threshold depends on the language and the rubric (README, *How
accurate is the judge?*). A test set that names its relevant documents already labels every retrieved
chunk, so `localeval calibrate` can fit `--verdict-threshold` on those labels, with no labels file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..data.loading import iter_jsonl
from ..data.records import OUTPUT_KEYS, sample_from_record
from ..errors import InputError
from .runs import samples_path

#: Metric → (its details key, each entry's key for the probability). context_precision's entries follow
#: the contexts in order; passage_relevance's carry the chunk's rank (it leaves out chunks with no text).
CHUNK_DETAILS = {"context_precision": ("useful", "p"), "passage_relevance": ("passages", "p")}


@dataclass
class ChunkVerdicts:
    """One metric's chunk probabilities and 0/1 relevance (grade > 0 in reference_doc_ids), paired."""

    metric: str
    p: list[float] = field(default_factory=list)
    relevant: list[int] = field(default_factory=list)
    samples: int = 0


def chunk_verdicts(run: Path) -> dict[str, ChunkVerdicts]:
    """Per chunk-judging metric in the run: every chunk that has an id, of a sample whose reference_doc_ids
    name at least one relevant document (a sample with none is unjudged, as trec_eval leaves it out)."""
    path = samples_path(run)
    source = str(path)
    found: dict[str, ChunkVerdicts] = {}
    for line, record in iter_jsonl(path):
        details = record.get("details") if isinstance(record, dict) else None
        if not isinstance(details, dict) or not any(m in details for m in CHUNK_DETAILS):
            continue
        sample = sample_from_record({k: v for k, v in record.items() if k not in OUTPUT_KEYS}, source, line)
        if not sample.contexts or not sample.relevance or not any(g > 0 for g in sample.relevance.values()):
            continue
        for metric, (key, p_key) in CHUNK_DETAILS.items():
            if metric not in details:
                continue
            fail = _failing(source, line, f"details.{metric}.{key}")
            pairs = _chunk_probabilities(details[metric], key, p_key, len(sample.contexts), fail)
            chunks = [(p, sample.contexts[i].id) for i, p in pairs if sample.contexts[i].id is not None]
            if not chunks:
                continue
            verdicts = found.setdefault(metric, ChunkVerdicts(metric))
            verdicts.samples += 1
            for p, doc_id in chunks:
                verdicts.p.append(p)
                verdicts.relevant.append(int(sample.relevance.get(doc_id, 0) > 0))
    return found


def _chunk_probabilities(block: Any, key: str, p_key: str, n_contexts: int,
                         fail: Callable[[str], InputError]) -> list[tuple[int, float]]:
    """(context index, P) for each entry of a metric's per-chunk details."""
    entries = block.get(key) if isinstance(block, dict) else None
    if not isinstance(entries, list):
        raise fail("missing or not a list; was this run written by `localeval score`?")
    if key == "useful" and len(entries) != n_contexts:
        raise fail(f"has {len(entries)} entries for {n_contexts} contexts")
    out = []
    for i, entry in enumerate(entries):
        p = entry.get(p_key) if isinstance(entry, dict) else None
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p) or not 0 <= p <= 1:
            raise fail(f"entry {i}: '{p_key}' must be a probability, got {p!r}")
        rank = i + 1 if key == "useful" else entry.get("rank")
        if isinstance(rank, bool) or not isinstance(rank, int) or not 1 <= rank <= n_contexts:
            raise fail(f"entry {i}: 'rank' must be a rank among the {n_contexts} contexts, got {entry.get('rank')!r}")
        out.append((rank - 1, float(p)))
    return out


def _failing(source: str, line: int, where: str) -> Callable[[str], InputError]:
    return lambda message: InputError(source, line, where, message)
