"""A document corpus for test-set generation: read it, and cut it into sentence-aware chunks.

A corpus is a folder of .txt / .md files (the file's path is the document id) or a JSONL file of
{id, text, title?} (BEIR's `_id` is accepted too). Chunks never cut a sentence: sentences (English and
Chinese punctuation) are packed up to `size` characters, and the last `overlap` sentences of a chunk
start the next one, so a fact that straddles a boundary still appears whole in one chunk.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..data.loading import iter_jsonl
from ..data.records import identifier
from ..errors import InputError
from ..files import read_text
from ..text import join_sentences, split_sentences

TEXT_SUFFIXES = (".txt", ".md")


@dataclass(frozen=True, slots=True)
class Document:
    id: str
    text: str
    title: str | None = None


@dataclass(frozen=True, slots=True)
class Chunk:
    """`id` is "<doc_id>#<n>"; `doc_id` ties it back to its document for the retrieval filter."""

    id: str
    doc_id: str
    text: str


def read_corpus(path: Path) -> list[Document]:
    """Documents from a folder (recursively, sorted, so ids and order are stable) or a JSONL file."""
    if path.is_dir():
        docs = [Document(str(f.relative_to(path)), read_text(f)) for f in sorted(path.rglob("*"))
                if f.is_file() and f.suffix.lower() in TEXT_SUFFIXES]
    else:  # a missing path, a FIFO or an unreadable file is named as such by the reader
        docs = list(_jsonl_documents(path))
    docs = [d for d in docs if d.text.strip()]
    if not docs:
        raise InputError(str(path), None, None, "holds no document with text (.txt/.md files, or JSONL of {id, text})")
    return docs


def chunk_documents(docs: list[Document], size: int = 1000, overlap: int = 1) -> list[Chunk]:
    if size < 50:
        raise InputError("--chunk-size", None, None, f"must be at least 50 characters, got {size}")
    if overlap < 0:
        raise InputError("--overlap", None, None, f"must be 0 or more sentences, got {overlap}")
    chunks: list[Chunk] = []
    for doc in docs:
        for n, text in enumerate(_pack(split_sentences(doc.text), size, overlap)):
            chunks.append(Chunk(f"{doc.id}#{n}", doc.id, text))
    return chunks


#: Where a sentence longer than a chunk is cut, best first: after a clause mark, else at a space.
_CLAUSE_MARKS = re.compile(r"[，,；;、：:]")


def _cut_long(sentence: str, size: int) -> list[str]:
    """A sentence longer than `size` in pieces of at most `size` characters (text with no sentence marks,
    such as Chinese punctuated only with commas, or text pulled from a PDF, would be one chunk of any
    length): after the last clause mark in the second half of the window, else the last space there,
    else at `size` itself."""
    pieces = []
    while len(sentence) > size:
        window = sentence[:size]
        marks = [m.end() for m in _CLAUSE_MARKS.finditer(window) if m.end() > size // 2]
        cut = marks[-1] if marks else (window.rfind(" ") if window.rfind(" ") > size // 2 else size)
        pieces.append(sentence[:cut].strip())
        sentence = sentence[cut:].strip()
    return pieces + ([sentence] if sentence else [])


def _pack(sentences: list[str], size: int, overlap: int) -> Iterator[str]:
    current: list[str] = []
    length = 0
    for sentence in (piece for whole in sentences for piece in _cut_long(whole, size)):
        if current and length + len(sentence) > size:
            yield functools.reduce(join_sentences, current)
            current = current[-overlap:] if overlap and len(current) > overlap else []
            length = sum(len(s) + 1 for s in current)
        current.append(sentence)
        length += len(sentence) + 1
    if current:
        yield functools.reduce(join_sentences, current)


def _jsonl_documents(path: Path) -> Iterator[Document]:
    seen: set[str] = set()
    for line, record in iter_jsonl(path):
        if not isinstance(record, dict):
            raise InputError(str(path), line, None, "expected a JSON object {id, text, title?}")
        raw_id = record.get("id", record.get("_id"))
        if raw_id is None:
            raise InputError(str(path), line, "id", "is required")
        doc_id = identifier(raw_id, lambda message: InputError(str(path), line, "id", message))
        text = record.get("text")
        if not isinstance(text, str):
            raise InputError(str(path), line, "text", "must be a string")
        title = record.get("title")
        if doc_id in seen:
            raise InputError(str(path), line, "id", f"duplicate id '{doc_id}'")
        seen.add(doc_id)
        yield Document(doc_id, text, title if isinstance(title, str) and title.strip() else None)
