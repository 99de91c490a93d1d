"""TREC run and qrels files as `Sample`s, ranked and matched the way trec_eval 9.x does it.

* Run lines are `qid Q0 docno rank score tag`. trec_eval ignores the rank column: it sorts each query's
  documents by score descending, breaking ties by docno in descending strcmp order (`comp_sim_docno`
  in trec_eval's form_res_rels.c), and it stores scores as C `float`, so two scores that are equal in
  single precision are a tie even when their decimal text differs. All of this is reproduced here.
* Qrels lines are `qid iter docno grade`; a TSV with the header `query-id corpus-id score` (the BEIR
  layout) is read too. trec_eval reads grades as integers, so a non-integer grade is an error here
  rather than being silently truncated. A repeated (qid, docno) judgment is an error, as in trec_eval.
* Only queries present in both files become samples (trec_eval without `-c`); how many were in only
  one of them is returned so the caller can report it.

A run that retrieves the same docno twice for a query is kept as it is (trec_eval would refuse it):
the retrieval metrics count the copy once at its best rank and report how many were removed.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import numpy as np

from ..errors import InputError
from ..files import decoded_lines
from ..limits import MAX_GRADE
from .records import Context, Sample, grade_too_large, identifier

TrecRun = dict[str, list[tuple[str, float]]]
Qrels = dict[str, dict[str, float]]

_RUN_FORMAT = "'qid Q0 docno rank score tag'"
_QRELS_FORMAT = "'qid 0 docno grade' (or a TSV with the header 'query-id corpus-id score')"
_TSV_HEADER = ["query-id", "corpus-id", "score"]


def read_run(path: str | os.PathLike[str]) -> TrecRun:
    """{qid: [(docno, score), ...]} in file order; ranking happens in `samples_from_trec`.

    The rank and tag columns are not interpreted (trec_eval ignores them), but must be present.
    """
    source = os.fspath(path)
    run: TrecRun = {}
    for line_no, fields in _lines(source):
        if len(fields) != 6:
            raise InputError(source, line_no, None, f"expected 6 whitespace-separated fields {_RUN_FORMAT}, got {len(fields)}")
        qid, _, docno, _, score_text, _ = fields
        _check_ids(source, line_no, qid, docno)
        try:
            score = float(score_text)
        except ValueError:
            raise InputError(source, line_no, "score", f"must be a number, got {score_text!r}") from None
        if not math.isfinite(score):
            raise InputError(source, line_no, "score", f"must be a finite number, got {score_text!r}")
        run.setdefault(qid, []).append((docno, score))
    if not run:
        raise InputError(source, None, None, f"contains no run lines; expected {_RUN_FORMAT} per line")
    return run


def read_qrels(path: str | os.PathLike[str]) -> Qrels:
    """{qid: {docno: grade}} from TREC qrels or a BEIR-style TSV with a header line."""
    source = os.fspath(path)
    qrels: Qrels = {}
    first_seen: dict[tuple[str, str], int] = {}
    tsv = False
    for line_no, fields in _lines(source):
        if not first_seen and not tsv and fields == _TSV_HEADER:
            tsv = True
            continue
        if tsv:
            if len(fields) != 3:
                message = f"expected 3 fields 'query-id corpus-id score' as in the header, got {len(fields)}"
                raise InputError(source, line_no, None, message)
            qid, docno, grade_text = fields
        else:
            if len(fields) != 4:
                message = f"expected 4 whitespace-separated fields {_QRELS_FORMAT}, got {len(fields)}"
                raise InputError(source, line_no, None, message)
            qid, _, docno, grade_text = fields
        _check_ids(source, line_no, qid, docno)
        grade = _grade(grade_text, source, line_no)
        key = (qid, docno)
        if key in first_seen:
            message = f"duplicate judgment of {docno!r} for query {qid!r} (first on line {first_seen[key]})"
            raise InputError(source, line_no, "docno", message)
        first_seen[key] = line_no
        qrels.setdefault(qid, {})[docno] = grade
    if not qrels:
        raise InputError(source, None, None, f"contains no judgments; expected {_QRELS_FORMAT} per line")
    return qrels


def samples_from_trec(
    run: Mapping[str, Sequence[tuple[str, float]]], qrels: Mapping[str, Mapping[str, float]]
) -> tuple[list[Sample], dict[str, int]]:
    """Samples for the queries in both `run` and `qrels`, in the run's query order, plus counts.

    Each sample has id = question = qid, contexts ranked as trec_eval ranks them (text left empty) and
    relevance = that query's judgments. The counts are {"run_only": n, "qrels_only": m}.
    """
    samples = []
    for qid, docs in run.items():
        judged = qrels.get(qid)
        if judged is None:
            continue
        samples.append(
            Sample(
                id=qid,
                question=qid,
                contexts=tuple(Context(text="", id=docno) for docno in trec_ranking(docs)),
                relevance=dict(judged),
            )
        )
    counts = {
        "run_only": sum(1 for qid in run if qid not in qrels),
        "qrels_only": sum(1 for qid in qrels if qid not in run),
    }
    return samples, counts


def trec_ranking(docs: Sequence[tuple[str, float]]) -> list[str]:
    """Docnos by score descending, ties by docno descending, with scores compared as 32-bit floats.

    Python compares str by code point, which is the byte order of their UTF-8 encoding, i.e. strcmp's.
    """
    if not docs:
        return []
    single = np.asarray([score for _, score in docs], dtype=np.float64).astype(np.float32).tolist()
    ranked = sorted(zip(single, (docno for docno, _ in docs)), reverse=True)
    return [docno for _, docno in ranked]


def _check_ids(source: str, line_no: int, qid: str, docno: str) -> None:
    identifier(qid, lambda message: InputError(source, line_no, "qid", message))
    identifier(docno, lambda message: InputError(source, line_no, "docno", message))


_GRADE = re.compile(r"[+-]?\d+(?:\.0*)?\Z")


def _grade(text: str, source: str, line_no: int) -> float:
    """Integer grades only (trec_eval parses them with atol); "2.0" is accepted as 2. "1e1" and "1_0", which
    Python reads as 10 and atol as 1, are refused rather than read either way."""
    if not _GRADE.match(text):
        raise InputError(source, line_no, "grade", f"must be an integer (trec_eval reads grades as integers), got {text!r}")
    value = float(text)
    if not math.isfinite(value) or value != int(value):
        raise InputError(source, line_no, "grade", f"must be an integer (trec_eval reads grades as integers), got {text!r}")
    if abs(value) > MAX_GRADE:
        raise InputError(source, line_no, "grade", grade_too_large(value))
    return float(int(value))


def _lines(source: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) for each non-blank line; bytes are decoded per line so a bad one is located."""
    for line_no, text in decoded_lines(Path(source)):
        fields = text.split()
        if fields:
            yield line_no, fields
