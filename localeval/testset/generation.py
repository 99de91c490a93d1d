"""Test-set generation from a document corpus (the seed scheme, with ARES's retrieval filter).

corpus → sentence-aware chunks → embeddings → faiss index (saved) → a seeded sample of chunks, at most
one per document → the judge writes one question and its answer from the chunk alone, or declines →
ARES filter: the question is kept only if retrieving with it from the index returns its source document
within the top k → negatives for judge calibration (a hard negative: the nearest chunk of another
document, else another chunk of the same document; a random chunk of another document; optionally a
contradictory answer written by the judge).

Everything is deterministic for a seed (greedy judge, exact index, seeded numpy Generator) and
resumable through the judge cache.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..atomic import AtomicFiles, one_run_at_a_time
from ..errors import JudgeError
from ..files import check_output_dir, dumps
from ..judge.config import JudgeOptions
from ..judge.prompts import detect_lang
from ..model_kit import ModelKit
from ..progress import Progress
from .corpus import Chunk, chunk_documents, read_corpus
from .index import ChunkIndex, doc_rank

TESTSET_FILE = "testset.jsonl"
NEGATIVES_FILE = "negatives.jsonl"
REPORT_FILE = "generation.json"
INDEX_DIR = "index"


class Kept(NamedTuple):
    """A question kept in this window, and its labelled negatives (a contradiction may still join them)."""

    sample_id: str
    question: str
    answer: str
    lang: str
    chunk: Chunk
    rows: list[dict[str, Any]]


@dataclass(frozen=True)
class GenerateOptions:
    n: int | None = None  # questions to attempt (chunks sampled); None = one per document
    seed: int = 0
    top_k: int = 5
    chunk_size: int = 1000
    overlap: int = 1
    index: str = "flat"
    contradictions: bool = False
    judge: JudgeOptions = field(default_factory=JudgeOptions)


def generate(corpus: Path, out_dir: Path, options: GenerateOptions, progress: bool = False) -> dict[str, Any]:
    """Write testset.jsonl, negatives.jsonl, generation.json and index/ into out_dir; return the report."""
    check_output_dir(out_dir, (TESTSET_FILE, NEGATIVES_FILE, REPORT_FILE))
    kit = ModelKit.of(options.judge)
    with one_run_at_a_time(out_dir):
        try:
            return _generated(corpus, out_dir, options, kit, progress)
        finally:
            kit.close()


def _generated(corpus: Path, out_dir: Path, options: GenerateOptions, kit: ModelKit, progress: bool) -> dict[str, Any]:
    """generate, in the output folder it holds."""
    docs = read_corpus(corpus)
    chunks = chunk_documents(docs, options.chunk_size, options.overlap)
    texts = [c.text for c in chunks]
    # one embedder for the whole index, and the one the scoring metrics give Chinese where any chunk is
    # Chinese (the registry's multilingual model reads English too): an English-only model's vectors of
    # Chinese text are near random, and would drop good questions at the retrieval filter
    language = corpus_lang(texts, options.judge.lang)
    kit.check(embedder=True, lang=language)  # every option checked before the embedder and the judge load
    named = kit.embedder_choice(language)
    embedder = kit.embedder_for(language)
    index = ChunkIndex.build(chunks, embedder.encode(texts), options.index, named)
    # a chunk longer than the embedder reads is indexed by its start: counted, so a user can cut smaller
    indexed_in_part = sum(embedder.cut(texts))
    rng = np.random.default_rng(options.seed)
    sampled = _sample(chunks, options.n, rng)
    meter = Progress(len(sampled), label="generating") if progress else None
    kept: list[dict[str, Any]] = []
    negatives: list[dict[str, Any]] = []
    counts = {"sampled": len(sampled), "declined": 0, "judge_errors": 0, "filtered_by_retrieval": 0, "kept": 0,
              "contradiction_errors": 0}
    first_error: JudgeError | None = None
    window = max(1, kit.config.parallel)  # one judge call per window: a batched backend fills its lanes
    for start in range(0, len(sampled), window):
        batch = sampled[start:start + window]
        asked: list[Kept] = []
        for chunk, qa in zip(batch, _questions_for(kit, batch)):
            if qa is None or isinstance(qa, JudgeError):  # a reply cut off, a prompt too long: that chunk only
                counts["declined" if qa is None else "judge_errors"] += 1
                first_error = first_error or (qa if isinstance(qa, JudgeError) else None)
                continue
            question, answer, lang = qa
            vector = embedder.encode([question])
            hits = index.search(vector, options.top_k)[0]
            rank = doc_rank(hits, chunk.doc_id)
            if rank is None:
                counts["filtered_by_retrieval"] += 1
                continue
            sample_id = f"gen-{len(kept) + 1}"
            kept.append({
                "id": sample_id, "question": question, "reference": answer, "reference_doc_ids": [chunk.doc_id],
                "reference_docs": [{"id": chunk.doc_id, "text": chunk.text}], "source_chunk": chunk.id,
                "source_rank": rank, "lang": lang,
            })
            asked.append(Kept(sample_id, question, answer, lang, chunk,
                              _negatives(sample_id, question, chunk, _nearest_elsewhere(index, vector, chunk),
                                         chunks, rng)))
        if options.contradictions:
            counts["contradiction_errors"] += _add_contradictions(kit, asked)
        negatives.extend(row for kept_one in asked for row in kept_one.rows)
        if meter:
            meter.advance(len(batch))
    if meter:
        meter.close()
    counts["kept"] = len(kept)
    if not kept and first_error is not None:  # an empty test set would pass for a corpus with nothing to ask
        raise JudgeError(f"the judge could not answer for {counts['judge_errors']} of {counts['sampled']} chunks and no "
                         f"question was kept (first: {first_error}); give a larger --n-ctx or a smaller --chunk-size")
    report = {
        "corpus": str(corpus), "documents": len(docs), "chunks": len(chunks), "embedder": named,
        "chunks_indexed_in_part": indexed_in_part,
        **counts,
        "options": {k: v for k, v in asdict(options).items() if k != "judge"}, "judge": options.judge.settings(),
        **kit.model_info(), "prompts": {"generate_question": kit.prompt_version("generate_question", "en")},
        "judge_usage": kit.judge.totals.as_dict(),
    }
    for row in kept:
        row["provenance"] = {"model": report.get("judge_model"), "prompt": report["prompts"], "seed": options.seed}
    _write(out_dir, kept, negatives, report, index)
    return report


def corpus_lang(texts: list[str], forced: str | None = None) -> str | None:
    """"zh" when any text is Chinese (or --lang zh), else None (the embedder's default language)."""
    if forced is not None:
        return forced if forced == "zh" else None
    return "zh" if any(detect_lang(text) == "zh" for text in texts) else None


def _sample(chunks: list[Chunk], n: int | None, rng: np.random.Generator) -> list[Chunk]:
    """A seeded shuffle, then the first chunk met of each document, up to n."""
    seen: set[str] = set()
    picked: list[Chunk] = []
    for i in rng.permutation(len(chunks)):
        chunk = chunks[int(i)]
        if chunk.doc_id not in seen:
            seen.add(chunk.doc_id)
            picked.append(chunk)
    return picked if n is None else picked[:n]


def _questions_for(kit: ModelKit, chunks: list[Chunk]) -> list[tuple[str, str, str] | JudgeError | None]:
    """(question, answer, lang) the judge wrote from each chunk alone, None where it declined, or the error
    where it could not answer (the chunk is left out and counted; the run goes on)."""
    from ..judge.facade import Ask
    from ..judge.prompts import detect_lang

    langs = [detect_lang(chunk.text, kit.options.lang) for chunk in chunks]
    answers = kit.judge.ask([Ask.json(kit.prompt("generate_question", lang, passage=chunk.text))
                             for chunk, lang in zip(chunks, langs)])
    written: list[tuple[str, str, str] | JudgeError | None] = []
    for answer, lang in zip(answers, langs):
        if answer.error is not None:
            written.append(answer.error)
            continue
        value = answer.unwrap()
        question, reply = value["question"].strip(), value["answer"].strip()
        written.append((question, reply, lang) if value["can_ask"] and question and reply else None)
    return written


def _negatives(sample_id: str, question: str, source: Chunk, hard: Chunk | None, chunks: list[Chunk],
               rng: np.random.Generator) -> list[dict[str, Any]]:
    """Labelled (question, context) rows for calibrating or training a judge, as ARES trains its judges."""
    rows = [{"id": f"{sample_id}-pos", "question": question, "context": source.text, "context_id": source.id,
             "kind": "positive", "context_relevance": 1}]
    if hard is not None:
        rows.append({"id": f"{sample_id}-hard", "question": question, "context": hard.text, "context_id": hard.id,
                     "kind": "hard_negative", "context_relevance": 0})
    pool = [c for c in chunks if c.doc_id != source.doc_id]
    if pool:
        rand = pool[int(rng.integers(len(pool)))]
        rows.append({"id": f"{sample_id}-random", "question": question, "context": rand.text, "context_id": rand.id,
                     "kind": "random_negative", "context_relevance": 0})
    return rows


def _nearest_elsewhere(index: ChunkIndex, vector: np.ndarray, source: Chunk) -> Chunk | None:
    """The chunk of another document nearest the question, whose text is not the source's (a document
    copied under two ids would make the positive its own negative): searched wider until one turns up, so
    `--top-k 1`, which finds only the source, still gets one. None when no other document has one."""
    k = 8
    while True:
        hits = index.search(vector, k)[0]
        for chunk, _ in hits:
            if chunk.doc_id != source.doc_id and _folded(chunk.text) != _folded(source.text):
                return chunk
        if k >= len(index.chunks):
            return None
        k *= 4


def _folded(text: str) -> str:
    """Text as compared for sameness: case, punctuation and spacing aside."""
    return re.sub(r"[\W_]+", "", text.casefold())


def _add_contradictions(kit: ModelKit, asked: list[Kept]) -> int:
    """A wrong answer the judge writes per question (one call for the window): the source passage with the
    right answer is faithful, with the wrong one it is not. Returns the judge errors (those questions get no
    contradiction)."""
    from ..judge.facade import Ask

    answers = kit.judge.ask([Ask.json(kit.prompt("contradict", lang, passage=chunk.text, question=question,
                                                 answer=answer))
                             for _, question, answer, lang, chunk, _ in asked])
    errors = 0
    for (sample_id, question, answer, _, chunk, rows), reply in zip(asked, answers):
        if reply.error is not None:
            errors += 1
            continue
        wrong = reply.unwrap()["answer"].strip()
        if wrong and _folded(wrong) != _folded(answer):  # "In 1889" is the answer "In 1889." again
            rows.append({"id": f"{sample_id}-contradicted", "question": question, "context": chunk.text,
                         "context_id": chunk.id, "answer": wrong, "kind": "contradicted_answer",
                         "answer_faithfulness": 0})
            rows[0].update(answer=answer, answer_faithfulness=1)
    return errors


def _write(out_dir: Path, kept: list[dict], negatives: list[dict], report: dict, index: ChunkIndex) -> None:
    """All files replaced together (atomic.py), so a failed run leaves the previous test set whole."""
    with AtomicFiles(out_dir) as files:
        index.write_into(files, INDEX_DIR)
        for name, rows in ((TESTSET_FILE, kept), (NEGATIVES_FILE, negatives)):
            with files.open(name) as handle:
                for row in rows:
                    handle.write(dumps(row) + "\n")
        with files.open(REPORT_FILE) as handle:
            handle.write(dumps(report, indent=2) + "\n")
        files.commit()
