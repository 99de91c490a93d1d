"""What the report embeds per sample (texts, contexts with ranks and grades, the judge's details, labels),
and which samples it embeds when a run is too large to embed whole.

Big runs: a browser opens a 100,000-sample report only if the file stays in the tens of megabytes, so at
most `max_samples` samples per run are embedded: the lowest-scoring ones, taking each metric column's
worst in turn (the "worst first" view a reviewer starts from is then exact for every column), after the
samples the comparison tables point at. Charts, the summary and the comparison always use every sample;
the page says how many were embedded. Each text is cut at MAX_TEXT characters (said on the page too).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..data.loading import iter_jsonl
from ..data.records import OUTPUT_KEYS, Context, Sample, sample_from_record
from ..errors import InputError
from ..results.runs import ScoredRun, samples_path
from ..metrics.base import ChunkDetails
from ..results.verdicts import chunk_metrics, chunk_probabilities
from ..text import has_cjk, split_sentences

#: Characters of one text (question, answer, one context, ...) embedded; the rest is left to samples.jsonl.
MAX_TEXT = 4_000
#: Keys of a metric's details that are bookkeeping, shown as the sample's judge work instead.
USAGE_KEY = "judge"


def select_ids(run: ScoredRun, columns: Sequence[str], cap: int, lower_better: Iterable[str] = (),
               first: Iterable[str] = ()) -> set[str] | None:
    """The ids to embed, or None for all of them (the run fits under `cap`)."""
    if len(run.ids) <= cap:
        return None
    chosen: dict[str, None] = dict.fromkeys(i for i in first if i in run.index)
    worse_is_higher = set(lower_better)
    orders = []
    for column in columns:
        values = run.columns.get(column)
        if values is None:
            continue
        scored = np.flatnonzero(~np.isnan(values))
        key = -values[scored] if column in worse_is_higher else values[scored]
        orders.append(scored[np.argsort(key, kind="stable")])
    depth = 0
    while len(chosen) < cap and any(depth < len(order) for order in orders):
        for order in orders:
            if depth < len(order) and len(chosen) < cap:
                chosen.setdefault(run.ids[order[depth]])
        depth += 1
    for sample_id in run.ids:  # samples no column scored: file order, if room is left
        if len(chosen) >= cap:
            break
        chosen.setdefault(sample_id)
    return set(list(chosen)[:cap])


def embedded_samples(run: ScoredRun, columns: Sequence[str], selected: set[str] | None,
                     labels: Mapping[str, Mapping[str, int]] | None = None) -> tuple[list[dict[str, Any]], int]:
    """The drill-down entries of the selected samples, in file order, and how many texts were cut."""
    entries, cut = [], 0
    path = samples_path(Path(run.source))
    chunks = chunk_metrics()  # once for the report, not per sample
    for line, row in iter_jsonl(path):
        sample_id = str(row.get("id")) if isinstance(row, dict) else None
        if sample_id is None or (selected is not None and sample_id not in selected):
            continue
        entry, n_cut = sample_entry(row, columns, chunks, str(path), line)
        human = {column: by_id[sample_id] for column, by_id in (labels or {}).items() if sample_id in by_id}
        if human:
            entry["lab"] = human
        cut += n_cut
        entries.append(entry)
    return entries, cut


def sample_entry(row: dict[str, Any], columns: Sequence[str], chunks: Mapping[str, ChunkDetails],
                 source: str = "<row>", line: int | None = None) -> tuple[dict[str, Any], int]:
    """One row of samples.jsonl as the page shows it (short keys: the file holds thousands of these), and how
    many of its texts were cut; `chunks` are the metrics with a judge P per chunk (results.verdicts)."""
    sample = _sample(row, source, line)
    metrics = row.get("metrics") or {}
    raw_details = row.get("details") or {}
    if not isinstance(raw_details, dict):
        raise InputError(source, line, "details", "must be an object of metric → details, as `localeval score` "
                                                  "writes it")
    details = {name: {k: v for k, v in d.items() if k != USAGE_KEY} for name, d in raw_details.items()
               if isinstance(d, dict)}
    texts = _Texts()
    relevance = details.get("context_relevance") or {}
    listed = relevance.get("needed") or ()
    # an edited file's "needed" that is no list of sentence numbers marks none, rather than failing the page
    needed = {n for n in listed if isinstance(n, int)} if isinstance(listed, list) else set()
    counted = relevance.get("sentences")
    entry: dict[str, Any] = {
        "id": sample.id,
        "q": texts.cap(sample.question),
        "a": texts.cap(sample.answer),
        "ref": texts.cap(sample.reference),
        "lang": _lang(sample, details),
        "v": [metrics.get(c) for c in columns],
        "sk": row.get("skipped") or {},
        "d": details,
        "jw": _judge_work(raw_details),
    }
    if sample.contexts is not None:
        entry["ctx"] = _contexts(sample, needed, counted if isinstance(counted, int) else None, details, texts,
                                 chunks)
    if sample.relevance:
        retrieved = {c.id for c in sample.contexts or ()}
        entry["unretrieved"] = [doc for doc, grade in sample.relevance.items() if grade > 0 and doc not in retrieved]
    if sample.reference_docs:
        entry["refdocs"] = [{"id": d.id, "text": texts.cap(d.text)} for d in sample.reference_docs]
    return entry, texts.cut


def needed_spans(contexts: Sequence[Context], needed: set[int], counted: int | None = None) -> list[list[list[int]]]:
    """Per context, the [start, end) spans (in UTF-16 units, as the page slices) of the sentences the judge
    listed as needed.

    Sentences are numbered across the contexts in rank order with the splitter context_relevance used
    (text.split_sentences), so the numbers in its `needed` list point at the same sentences here. Where the
    run counted another number of sentences (`counted`: it was scored by a localeval that split them
    otherwise), the numbers would point at other sentences, so none is marked.
    """
    out, number = [], 0
    for context in contexts:
        spans, pos = [], 0
        for sentence in split_sentences(context.text):
            number += 1
            at = context.text.find(sentence, pos)
            if at < 0:  # cannot happen with the splitter's stripped pieces; leave the sentence unmarked if it does
                continue
            if number in needed:  # in UTF-16 code units, as the page's String.slice counts (an emoji is two)
                spans.append([_utf16(context.text, at), _utf16(context.text, at + len(sentence))])
            pos = at + len(sentence)
        out.append(spans)
    if counted is not None and counted != number:
        return [[] for _ in out]
    return out


def _utf16(text: str, index: int) -> int:
    """The offset in JavaScript's string units of the character at `index` of `text`."""
    return index + sum(1 for ch in text[:index] if ord(ch) > 0xFFFF)


class _Texts:
    """Caps texts at MAX_TEXT characters and counts the ones it cut."""

    def __init__(self) -> None:
        self.cut = 0

    def cap(self, text: str | None) -> str | None:
        if text is None or len(text) <= MAX_TEXT:
            return text
        self.cut += 1
        return text[:MAX_TEXT] + f" … [{len(text) - MAX_TEXT:,} more characters in samples.jsonl]"


def _sample(row: dict[str, Any], source: str, line: int | None) -> Sample:
    """The row's input fields, validated as `localeval score` validated them; rows of a TREC run carry only
    an id, and stand as a sample whose question is that id."""
    record = {k: v for k, v in row.items() if k not in OUTPUT_KEYS}
    try:
        return sample_from_record(record, source, line)
    except InputError:
        return Sample(id=str(row.get("id")), question=str(row.get("id")))


def _contexts(sample: Sample, needed: set[int], counted: int | None, details: Mapping[str, Any], texts: _Texts,
              chunks: Mapping[str, ChunkDetails]) -> list[dict[str, Any]]:
    contexts = sample.contexts or ()
    shown: dict[int, dict[str, float]] = {}  # context index -> label -> the judge's P
    for metric, declared in chunks.items():
        if metric in details:
            try:
                for i, p in chunk_probabilities(details[metric], declared, len(contexts), _malformed):
                    shown.setdefault(i, {})[declared.label] = p
            except _Malformed:  # a hand-edited row: its chunks go without this metric's P
                continue
    spans = needed_spans(sample.contexts or (), needed, counted)
    out = []
    for rank, (context, marked) in enumerate(zip(sample.contexts or (), spans), start=1):
        entry: dict[str, Any] = {"id": context.id, "rank": rank, "text": texts.cap(context.text)}
        if marked:  # spans past the cut are dropped, one running into it is shortened
            entry["hl"] = [[a, min(b, MAX_TEXT)] for a, b in marked if a < MAX_TEXT]
        if sample.relevance is not None and context.id is not None:
            entry["grade"] = sample.relevance.get(context.id, 0.0)
        entry.update(shown.get(rank - 1, {}))
        out.append(entry)
    return out


class _Malformed(InputError):
    pass


def _malformed(message: str) -> _Malformed:
    return _Malformed("samples.jsonl", None, None, message)


def _lang(sample: Sample, details: Mapping[str, Any]) -> str:
    """The judge's language for the sample where it recorded one, else Chinese when the question has CJK."""
    for d in details.values():
        if isinstance(d.get("lang"), str):
            return d["lang"]
    return "zh" if has_cjk(sample.question) else "en"


def _judge_work(details: Mapping[str, Any]) -> dict[str, float] | None:
    """This sample's judge calls, tokens and seconds, summed over its judge metrics."""
    total: dict[str, float] = {}
    for d in details.values():
        usage = d.get(USAGE_KEY) if isinstance(d, dict) else None
        if isinstance(usage, dict):
            for key, value in usage.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    total[key] = total.get(key, 0) + value
    return {k: round(v, 3) for k, v in total.items()} or None
