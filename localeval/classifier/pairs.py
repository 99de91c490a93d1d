"""Training pairs for a classifier judge, from the three sources ARES uses:

- a folder `localeval generate` wrote (`--data DIR`): its negatives.jsonl labels a question with its source
  passage relevant and with a retrieved or random passage of another document not; with --contradictions
  the source passage with the generated answer is faithful and with the judge's contradicting answer not.
  From testset.jsonl: each question's answer is faithful to its passage and answers its question, and the
  answer of another question (drawn with the seed) goes beyond the passage and does not answer it; the
  answer with one name or number swapped is not faithful, and one sentence of the passage is, while the
  same sentence with a name or number swapped is not (FactCC's transformations, swaps.py);
- human labels in the same form (`--data FILE`): JSONL rows with `question`, `context` (or `contexts`) and
  `answer` as the judgement needs them, and any of `context_relevance`, `answer_faithfulness`,
  `answer_relevance` as 0/1 (ARES's label names);
- a scored run (`--distill RUN_DIR`): the GGUF judge's probabilities in its samples.jsonl, as soft labels:
  passage_relevance's per passage, faithfulness's per statement (against the contexts it was checked
  against), answer_relevance_rating's score.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from ..data.loading import iter_jsonl
from ..errors import InputError
from ..files import check_readable
from .judgements import JUDGEMENTS
from .swaps import sentences, spans, swapped

GENERATED = ("testset.jsonl", "negatives.jsonl")


@dataclass(frozen=True)
class Pair:
    judgement: str
    first: str
    second: str
    label: float  # 0/1, or the GGUF judge's probability when distilled
    source: str


def read_pairs(data: Sequence[Path], distill: Sequence[Path] = (), seed: int = 0) -> list[Pair]:
    """Every pair of every source, in a fixed order (the order of the sources, then of their rows)."""
    pairs: list[Pair] = []
    for path in data:
        if path.is_dir():
            pairs += generated_pairs(path, seed)
        else:
            check_readable(path)
            pairs += list(labelled_pairs(path, str(path)))
    for run in distill:
        pairs += list(distilled_pairs(run))
    return pairs


def generated_pairs(folder: Path, seed: int) -> list[Pair]:
    """The pairs of a `localeval generate` folder (see the module doc)."""
    for name in GENERATED:
        if not (folder / name).is_file():
            raise InputError(str(folder), None, None, f"no {name}; give a folder `localeval generate` wrote, "
                             "or a JSONL file of labelled rows")
    source = str(folder / GENERATED[1])
    pairs = list(labelled_pairs(folder / GENERATED[1], source))
    where = str(folder / GENERATED[0])
    rows = [_generated_row(row, where, line) for line, row in iter_jsonl(folder / GENERATED[0])]
    if len(rows) < 2:
        return pairs
    rng = np.random.default_rng(seed)
    for i, (row, passage) in enumerate(rows):
        other, _ = rows[(i + 1 + int(rng.integers(len(rows) - 1))) % len(rows)]  # any row but this one
        own, borrowed = row["reference"], other["reference"]
        # Another question's answer is a negative only where it is one: not when it is this answer too ("Yes",
        # "1995"), nor, for faithfulness, when the passage itself says it (a bare name it holds is supported).
        differs = _folded(borrowed) != _folded(own)
        pairs.append(Pair("answer_faithfulness", passage, own, 1.0, where))
        if differs and not _names(passage, borrowed):
            pairs.append(Pair("answer_faithfulness", passage, borrowed, 0.0, where))
        pairs.append(Pair("answer_relevance", row["question"], own, 1.0, where))
        if differs:
            pairs.append(Pair("answer_relevance", row["question"], borrowed, 0.0, where))
    return pairs + swapped_pairs(rows, where, seed)


def _folded(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip(".。")


def _names(passage: str, text: str) -> bool:
    """Whether the passage says `text` as words of its own ("2012" does not name "12", "eyes" not "yes");
    Chinese, written without spaces, by characters."""
    wanted = _folded(text)
    return re.search(rf"(?<!\w){re.escape(wanted)}(?!\w)", _folded(passage)) is not None if wanted.isascii() \
        else wanted in _folded(passage)


def distinct_pairs(pairs: Sequence[Pair]) -> list[Pair]:
    """Each (judgement, first, second) once, in first-seen order, so no copy of a training pair is among the
    held-out ones (generate's negatives.jsonl and its testset.jsonl both give a passage with its answer, and
    one file given twice gives every pair twice). Copies that disagree (two people's labels) become one
    pair with their mean as a soft label."""
    groups: dict[tuple[str, str, str], list[Pair]] = {}
    for pair in pairs:
        groups.setdefault((pair.judgement, pair.first, pair.second), []).append(pair)
    return [same[0] if len(same) == 1 else Pair(*key, float(np.mean([p.label for p in same])), same[0].source)
            for key, same in groups.items()]


def swapped_pairs(rows: Sequence[tuple[dict[str, Any], str]], source: str, seed: int) -> list[Pair]:
    """Per row, the answer with a name or number swapped (not faithful), and a sentence of the passage that
    has one (faithful) beside the same sentence swapped (not): negatives that differ from a faithful
    statement in one fact, not in topic (swaps.py). Drawn with their own generator, so the other pairs
    stay as they were."""
    rng = np.random.default_rng([seed, 1])
    everywhere = list(dict.fromkeys(span for _, passage in rows for span in spans(passage)))
    pairs = []
    for row, passage in rows:
        wrong = swapped(row["reference"], passage, everywhere, rng)
        if wrong is not None:
            pairs.append(Pair("answer_faithfulness", passage, wrong, 0.0, source))
        candidates = [s for s in sentences(passage) if spans(s) and s != row["reference"]]
        for i in rng.permutation(len(candidates)):
            wrong = swapped(candidates[int(i)], passage, everywhere, rng)
            if wrong is not None:
                pairs += [Pair("answer_faithfulness", passage, candidates[int(i)], 1.0, source),
                          Pair("answer_faithfulness", passage, wrong, 0.0, source)]
                break
    return pairs


def _generated_row(row: Any, source: str, line: int) -> tuple[dict[str, Any], str]:
    """A testset.jsonl row as generate writes it, and its source passage; InputError for another shape."""
    try:
        passage = row["reference_docs"][0]["text"]
        if all(isinstance(v, str) and v.strip() for v in (row["question"], row["reference"], passage)):
            return row, passage
    except (KeyError, IndexError, TypeError):
        pass
    raise InputError(source, line, None, "not a row `localeval generate` writes (question, reference and "
                     "reference_docs[0].text, all non-empty)")


def labelled_pairs(path: Path, source: str) -> Iterator[Pair]:
    """Rows with ARES's label fields (generate's negatives.jsonl, or people's labels in that form)."""
    for line, row in iter_jsonl(path):
        if not isinstance(row, dict):
            raise InputError(source, line, None, "expected a JSON object with a question and labels")
        labels = [name for name in JUDGEMENTS if name in row]
        if not labels:
            raise InputError(source, line, None, f"no label; a row labels one or more of {', '.join(JUDGEMENTS)} "
                             "with 0 or 1")
        for name in labels:
            label = row[name]
            if isinstance(label, bool) or label not in (0, 1):
                raise InputError(source, line, name, f"expected 0 or 1, got {json.dumps(label)}")
            first, second = _texts(row, name, source, line)
            yield Pair(name, first, second, float(label), source)


def _texts(row: dict[str, Any], judgement: str, source: str, line: int) -> tuple[str, str]:
    context = row.get("context")
    if context is None and isinstance(row.get("contexts"), list):
        context = "\n\n".join(_context_text(c, source, line) for c in row["contexts"])
    needs = JUDGEMENTS[judgement].row_fields
    values = {"question": row.get("question"), "context": context, "answer": row.get("answer")}
    for field in needs:
        if not isinstance(values[field], str) or not values[field].strip():
            raise InputError(source, line, field, f"a {judgement} label needs a non-empty {field}"
                             + (" (or `contexts`)" if field == "context" else ""))
    return values[needs[0]], values[needs[1]]


def _context_text(context: Any, source: str, line: int | None) -> str:
    """A context as a row gives it (a run keeps its input's as they came): an object with a text, or a string."""
    text = context.get("text") if isinstance(context, dict) else context
    if not isinstance(text, str):
        raise InputError(source, line, "contexts", "each context is a string or an object with a string `text`")
    return text


def distilled_pairs(run: Path) -> Iterator[Pair]:
    """The GGUF judge's verdicts in a scored run, as soft labels (see the module doc)."""
    path = run / "samples.jsonl" if run.is_dir() else run
    check_readable(path)
    source = str(path)
    found = False
    for line, row in iter_jsonl(path):
        if not isinstance(row, dict):
            raise InputError(source, line, None, "expected a JSON object: a row of a run's samples.jsonl")
        details = row.get("details") or {}
        contexts = [_context_text(c, source, line) for c in _list(row, "contexts", source, line)]
        question = row.get("question") or ""
        for passage in _list(_object(details, "passage_relevance", source, line), "passages", source, line):
            rank = passage.get("rank") if isinstance(passage, dict) else None
            if isinstance(rank, int) and 0 < rank <= len(contexts):
                found = True
                yield Pair("context_relevance", question, contexts[rank - 1],
                           _probability(passage.get("p"), "details.passage_relevance.passages[].p", source, line), source)
        faithfulness = _object(details, "faithfulness", source, line)
        if faithfulness.get("against") == "contexts" and contexts:
            for statement in _list(faithfulness, "statements", source, line):
                if not isinstance(statement, dict) or not isinstance(statement.get("text"), str):
                    raise InputError(source, line, "details.faithfulness.statements",
                                     "each statement is an object with a string `text` and a probability `p`")
                found = True
                yield Pair("answer_faithfulness", "\n\n".join(contexts), statement["text"],
                           _probability(statement.get("p"), "details.faithfulness.statements[].p", source, line), source)
        score = (row.get("metrics") or {}).get("answer_relevance_rating")
        if isinstance(score, float) and isinstance(row.get("answer"), str) and row["answer"]:
            found = True
            yield Pair("answer_relevance", question, row["answer"],
                       _probability(score, "metrics.answer_relevance_rating", source, line), source)
    if not found:
        raise InputError(source, None, None, "no judge verdicts to learn from (--distill); score the unlabelled "
                         "samples with -m passage_relevance,faithfulness,answer_relevance_rating first")


def _object(parent: dict[str, Any], key: str, source: str, line: int) -> dict[str, Any]:
    value = parent.get(key) or {}
    if not isinstance(value, dict):
        raise InputError(source, line, key, "expected a JSON object, as `localeval score` writes it")
    return value


def _list(parent: dict[str, Any], key: str, source: str, line: int) -> list[Any]:
    value = parent.get(key) or []
    if not isinstance(value, list):
        raise InputError(source, line, key, "expected a list, as `localeval score` writes it")
    return value


def _probability(p: Any, field: str, source: str, line: int) -> float:
    """A soft label: a number in [0, 1] (a probability the judge gave), never a NaN or a boolean."""
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise InputError(source, line, field, f"expected a probability in [0, 1], got {json.dumps(p)}")
    return float(p)


def data_sha256(pairs: Sequence[Pair]) -> str:
    """A hash of the training pairs (the manifest's record of what the classifier learned from)."""
    digest = hashlib.sha256()
    for pair in pairs:
        digest.update(json.dumps([pair.judgement, pair.first, pair.second, pair.label], ensure_ascii=False).encode())
    return digest.hexdigest()
