"""The labelled dev sets bench/accuracy.py and bench/verdict_threshold.py read agreement on: samples in
localeval's input format, each set a seeded slice (`limit` pairs or rows) of a file in the dev-data folder
(bench/harness.py's `dev_data`).

- Pairs (the first answer of each should score higher): HaluEval-QA (the right answer vs the hallucinated one;
  `halueval-recall`: the same pairs as reference answers, for context_recall), UHGEval (the first sentence of
  the real continuation vs the hallucinated continuation), answer-relevance pairs built from the dev questions
  (English: a HaluEval question with its right answer vs the right answer of another question, and vs an
  evasive non-answer; Chinese: an UHGEval news lead with the first sentence of its real continuation vs that
  of another article).
- Correctness pairs, each answer against the reference answer: RAGChecker's human pairs (two systems' answers
  to one question, the one people rated better by `correctness_mean`, `completeness_mean` or `overall_mean`
  should score higher; pairs rated equal are left out and counted in the note) and HaluEval-QA
  (`halueval-correctness`: the right vs the hallucinated answer).
- Criteria (your own rubric metrics): ALCE's answers with people's utility rating 1-5 (`alce-utility`, read
  as rank correlations: the shipped `usefulness` criterion, which has no evaluation steps, it with steps
  written by hand and with steps the judge wrote once, beside `answer_relevance_rating`), and the HaluEval
  pairs with the yes/no `correctness` criterion (`halueval-criteria`, as shipped and with judge-written steps).
- Labelled rows (1 = faithful or relevant): FaithBench (faithful = not `is_hallucinated_majority`), RGB-zh
  passage relevance (a query with one of its qrels passages, or with a non-relevant passage that shares the
  most words with it; `rgb-zh-passages-heldout`: the same built from queries outside the first 100, to check a
  prompt chosen on those), Cranfield passage relevance (a query with a document judged relevant with grade
  >= 3, or an unjudged document that shares the most words), passage usefulness for context_precision (a
  question and its reference answer with its own passage, or with another question's that shares the most
  words: HaluEval knowledge passages; UHGEval leads with the first sentence of the real continuation and
  their articles, which hold that sentence word for word).
"""

from __future__ import annotations

import ast
import functools
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from harness import dev_data, read_jsonl

from localeval.text import split_sentences

EVASIVE = {"en": "I am not sure; it depends on many factors, so I cannot say.",
           "zh": "这个问题比较复杂，取决于很多因素，我无法确定。"}


@dataclass
class DevSet:
    """Samples plus how to read agreement off them: `pairs` (good id, bad id) or `labels` (id → 0/1)."""

    name: str
    lang: str
    metrics: tuple[str, ...]
    samples: list[dict[str, Any]]
    pairs: list[tuple[str, str]] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)
    #: id -> a graded human score (ALCE's utility 1-5): read as rank correlations
    ratings: dict[str, float] = field(default_factory=dict)
    note: str = ""




def halueval(limit: int, seed: int) -> DevSet:
    rows = read_jsonl(dev_data("halueval_qa_dev.jsonl"))
    by_pair: dict[str, dict[int, dict]] = {}
    for row in rows:
        by_pair.setdefault(row["pair_id"], {})[int(row["is_hallucinated"])] = row
    chosen = random.Random(seed).sample(sorted(p for p, v in by_pair.items() if len(v) == 2), limit)
    samples, pairs = [], []
    for pair_id in chosen:
        for row in (by_pair[pair_id][0], by_pair[pair_id][1]):
            samples.append({k: row[k] for k in ("id", "question", "answer", "contexts", "reference")})
        pairs.append((by_pair[pair_id][0]["id"], by_pair[pair_id][1]["id"]))
    return DevSet("halueval", "en", ("faithfulness", "grounding"), samples, pairs=pairs,
                  note="right vs hallucinated answer, same question and knowledge passage")


def halueval_recall(limit: int, seed: int) -> DevSet:
    pairs = halueval(limit, seed)
    return DevSet("halueval-recall", "en", ("context_recall",), [dict(s, reference=s["answer"]) for s in pairs.samples],
                  pairs=pairs.pairs, note="the right vs the hallucinated answer as the reference, same knowledge passage")


def uhgeval_rows() -> list[dict[str, Any]]:
    rows = read_jsonl(dev_data("uhgeval_zh_dev.jsonl"))
    for row in rows:
        if isinstance(row["contexts"], str):  # stored as the repr of a Python list
            row["contexts"] = ast.literal_eval(row["contexts"])
        row["real_first"] = split_sentences(row["real_continuation"])[0]
    return rows


def uhgeval(limit: int, seed: int) -> DevSet:
    rows = random.Random(seed).sample(uhgeval_rows(), limit)
    samples, pairs = [], []
    for row in rows:
        base = {"question": row["question"], "contexts": row["contexts"]}
        samples.append({"id": f"{row['id']}-real", "answer": row["real_first"], **base})
        samples.append({"id": f"{row['id']}-hallucinated", "answer": row["answer"], **base})
        pairs.append((f"{row['id']}-real", f"{row['id']}-hallucinated"))
    return DevSet("uhgeval", "zh", ("faithfulness", "grounding"), samples, pairs=pairs,
                  note="first sentence of the real continuation vs the hallucinated continuation, same contexts")


def _relevance_pairs(name: str, lang: str, rows: list[dict[str, Any]], answer: str, rng: random.Random,
                     note: str) -> DevSet:
    """Each question with its own answer, vs the answer of another (random) question, and vs an evasive reply."""
    samples, pairs = [], []
    for i, row in enumerate(rows):
        other = rows[(i + 1 + rng.randrange(len(rows) - 1)) % len(rows)]
        good = {"id": f"{row['id']}-own", "question": row["question"], "answer": row[answer]}
        off = {"id": f"{row['id']}-other", "question": row["question"], "answer": other[answer]}
        evasive = {"id": f"{row['id']}-evasive", "question": row["question"], "answer": EVASIVE[lang]}
        samples += [good, off, evasive]
        pairs += [(good["id"], off["id"]), (good["id"], evasive["id"])]
    return DevSet(name, lang, ("answer_relevance", "answer_relevance_rating"), samples, pairs=pairs, note=note)


def relevance_en(limit: int, seed: int) -> DevSet:
    rows = [r for r in read_jsonl(dev_data("halueval_qa_dev.jsonl")) if int(r["is_hallucinated"]) == 0]
    rng = random.Random(seed)
    return _relevance_pairs("relevance-en", "en", rng.sample(rows, limit), "answer", rng,
                            "HaluEval question: its right answer vs another question's right answer, and vs an evasive reply")


def relevance_zh(limit: int, seed: int) -> DevSet:
    rng = random.Random(seed)
    return _relevance_pairs("relevance-zh", "zh", rng.sample(uhgeval_rows(), limit), "real_first", rng,
                            "UHGEval lead: first sentence of its real continuation vs another article's, and vs an evasive reply")


def faithbench(limit: int, seed: int) -> DevSet:
    rows = random.Random(seed).sample(read_jsonl(dev_data("faithbench_dev.jsonl")), limit)
    samples = [{k: row[k] for k in ("id", "question", "answer", "contexts")} for row in rows]
    labels = {row["id"]: 1 - int(row["is_hallucinated_majority"]) for row in rows}
    return DevSet("faithbench", "en", ("faithfulness", "grounding"), samples, labels=labels,
                  note="label 1 = faithful (majority of experts found no hallucination)")


def _tokens(text: str) -> set[str]:
    """Words and CJK characters, lower-cased: ROUGE-L's tokens without stemming."""
    return set(_tokenizer().tokenize(text))


@functools.cache
def _tokenizer() -> Any:
    from localeval.metrics.rouge import CJKTokenizer

    return CJKTokenizer(use_stemmer=False)



def _passage_set(name: str, lang: str, queries: dict[str, str], corpus: dict[str, str], qrels: dict[str, dict[str, int]],
                 min_grade: int, limit: int, seed: int, note: str) -> DevSet:
    """Half the rows a query with one of its relevant passages, half with the most word-sharing passage
    that is not judged relevant (a hard negative, as a retriever would return it)."""
    rng = random.Random(seed)
    usable = sorted(q for q, docs in qrels.items() if q in queries and any(g >= min_grade for g in docs.values()))
    chosen = rng.sample(usable, min(limit, len(usable)))
    corpus_tokens = {doc: _tokens(text) for doc, text in corpus.items()}
    samples, labels = [], {}
    for i, qid in enumerate(chosen):
        if i % 2 == 0:
            doc = rng.choice(sorted(d for d, g in qrels[qid].items() if g >= min_grade and d in corpus))
            label = 1
        else:
            words = _tokens(queries[qid])
            doc = max((d for d in corpus if d not in qrels[qid]), key=lambda d: (len(words & corpus_tokens[d]), d))
            label = 0
        sample_id = f"{qid}-{doc}"
        samples.append({"id": sample_id, "question": queries[qid], "contexts": [{"id": doc, "text": corpus[doc]}]})
        labels[sample_id] = label
    return DevSet(name, lang, ("context_relevance", "passage_relevance"), samples, labels=labels, note=note)


def _collection(folder: Path) -> tuple[dict[str, str], dict[str, str], dict[str, dict[str, int]]]:
    queries = {str(r["_id"]): r["text"] for r in read_jsonl(folder / "queries.jsonl")}
    corpus = {str(r["_id"]): (f"{r['title']}. " if r.get("title") else "") + r["text"] for r in read_jsonl(folder / "corpus.jsonl")}
    qrels: dict[str, dict[str, int]] = {}
    for line in (folder / "qrels.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc, grade = line.split("\t")
        qrels.setdefault(qid, {})[doc] = int(grade)
    return queries, corpus, qrels


def rgb_zh(limit: int, seed: int) -> DevSet:
    queries, corpus, qrels = _collection(dev_data("rgb_zh_retrieval"))
    return _passage_set("rgb-zh-passages", "zh", queries, corpus, qrels, 1, limit, seed,
                        "query with a qrels passage (1) or the most word-sharing unjudged passage (0)")


def rgb_zh_heldout(limit: int, seed: int) -> DevSet:
    """Queries that `rgb-zh-passages` at --limit 100 never shows: prompts are chosen on that slice and
    checked here."""
    chosen = {s["question"] for s in rgb_zh(100, seed).samples}
    every = rgb_zh(300, seed)
    samples = [s for s in every.samples if s["question"] not in chosen][:limit]
    return DevSet("rgb-zh-passages-heldout", "zh", every.metrics, samples,
                  labels={s["id"]: every.labels[s["id"]] for s in samples},
                  note="the rgb-zh-passages rows of queries outside its first 100 (the slice prompts were chosen on)")


def _usefulness_set(name: str, lang: str, rows: list[dict[str, str]], limit: int, seed: int, note: str) -> DevSet:
    """context_precision's own question: is this chunk useful for arriving at the reference answer? Half
    the rows (each with `id`, `question`, `reference`, `passage`) a question with its own passage (1), half
    with the passage of another row that shares the most words with the question and the reference (0: a
    hard negative, as a retriever would return it)."""
    chosen = random.Random(seed).sample(rows, min(limit, len(rows)))
    passages = {row["id"]: row["passage"] for row in rows}
    passage_tokens = {i: _tokens(text) for i, text in passages.items()}
    samples, labels = [], {}
    for i, row in enumerate(chosen):
        if i % 2 == 0:
            doc, label = row["id"], 1
        else:
            words = _tokens(row["question"] + " " + row["reference"])
            doc = max((d for d in passages if d != row["id"]), key=lambda d: (len(words & passage_tokens[d]), d))
            label = 0
        sample_id = f"{row['id']}-{doc}"
        samples.append({"id": sample_id, "question": row["question"], "reference": row["reference"],
                        "contexts": [{"id": doc, "text": passages[doc]}]})
        labels[sample_id] = label
    return DevSet(name, lang, ("context_precision",), samples, labels=labels, note=note)


def halueval_passages(limit: int, seed: int) -> DevSet:
    """A HaluEval question and its right answer as the reference, with knowledge passages."""
    rows = [{"id": r["id"], "question": r["question"], "reference": r["reference"], "passage": " ".join(r["contexts"])}
            for r in read_jsonl(dev_data("halueval_qa_dev.jsonl")) if int(r["is_hallucinated"]) == 0]
    return _usefulness_set("halueval-passages", "en", rows, limit, seed,
                           "question + reference answer with its own knowledge passage (1) or the most word-sharing other one (0)")


def uhgeval_passages(limit: int, seed: int) -> DevSet:
    """An UHGEval lead, the first sentence of its real continuation as the reference, with articles. The
    own article holds that sentence word for word, so this asks whether the judge finds the article that
    states the reference, against another article on a near topic."""
    rows = [{"id": r["id"], "question": r["question"], "reference": r["real_first"], "passage": r["contexts"][1]}
            for r in uhgeval_rows()]
    return _usefulness_set("uhgeval-passages", "zh", rows, limit, seed,
                           "news lead + first sentence of its real continuation with its own article (1) or the "
                           "most word-sharing other one (0)")


def cranfield(limit: int, seed: int) -> DevSet:
    queries, corpus, qrels = _collection(dev_data("cranfield"))
    return _passage_set("cranfield-passages", "en", queries, corpus, qrels, 3, limit, seed,
                        "query with a document of grade >= 3 (1) or the most word-sharing unjudged document (0)")


def cranfield_graded(limit: int, seed: int) -> DevSet:
    """Cranfield read only where people judged: for each query with an abstract graded 3 or 4 (a complete
    answer, or one the work depends on) and one graded 1 (of minimum interest), the first should score
    higher. `cranfield-passages` takes its negatives from the abstracts nobody judged, and the one sharing
    most words with the query is at times plainly on its topic (the collection's judgements are not
    exhaustive); here no pair rests on an unjudged abstract."""
    queries, corpus, qrels = _collection(dev_data("cranfield"))
    rng = random.Random(seed)
    usable = sorted(q for q, docs in qrels.items() if q in queries
                    and any(g >= 3 and d in corpus for d, g in docs.items())
                    and any(g == 1 and d in corpus for d, g in docs.items()))
    samples, pairs = [], []
    for qid in rng.sample(usable, min(limit, len(usable))):
        high = rng.choice(sorted(d for d, g in qrels[qid].items() if g >= 3 and d in corpus))
        low = rng.choice(sorted(d for d, g in qrels[qid].items() if g == 1 and d in corpus))
        for doc in (high, low):
            samples.append({"id": f"{qid}-{doc}", "question": queries[qid], "contexts": [{"id": doc, "text": corpus[doc]}]})
        pairs.append((f"{qid}-{high}", f"{qid}-{low}"))
    return DevSet("cranfield-graded", "en", ("context_relevance", "passage_relevance"), samples, pairs=pairs,
                  note="query with an abstract people graded 3-4 vs one they graded 1 (minimum interest); "
                       "judged abstracts only")


CORRECTNESS = ("answer_correctness", "token_f1", "exact_match", "answer_rouge_l", "answer_similarity")


def halueval_correctness(limit: int, seed: int) -> DevSet:
    pairs = halueval(limit, seed)
    return DevSet("halueval-correctness", "en", CORRECTNESS, pairs.samples, pairs=pairs.pairs,
                  note="right vs hallucinated answer, each against the reference answer")


def ragchecker(label: str) -> Callable[[int, int], DevSet]:
    """RAGChecker's human pairs, read by one of its labels (correctness, completeness, overall): the answer
    people rated better should score higher; pairs people rated equal (mean 0) are left out."""
    def build(limit: int, seed: int) -> DevSet:
        rows = read_jsonl(dev_data("ragchecker_pairs_dev.jsonl"))
        rows = random.Random(seed).sample(rows, min(limit, len(rows)))
        samples, pairs = [], []
        for row in rows:
            ids = (f"{row['id']}-1", f"{row['id']}-2")
            for sample_id, answer in zip(ids, (row["answer_1"], row["answer_2"])):
                samples.append({"id": sample_id, "question": row["question"], "answer": answer,
                                "reference": row["reference"]})
            mean = row[f"{label}_mean"]
            if mean != 0:
                pairs.append(ids[::-1] if mean > 0 else ids)
        metrics = CORRECTNESS if label == "correctness" else CORRECTNESS[:2]
        return DevSet(f"ragchecker-{label}", "en", metrics, samples, pairs=pairs,
                      note=f"two systems' answers against a long reference; the one people rated more {label} should "
                           f"score higher; {len(rows) - len(pairs)} of {len(rows)} pairs rated equal are left out")
    return build


#: The usefulness criterion as shipped, with steps written by hand and with steps the judge wrote once
#: (G-Eval's method): the variants are written and registered by criteria_variants before the sets are scored.
USEFULNESS = ("criteria.usefulness", "criteria.usefulness_handsteps", "criteria.usefulness_judgesteps",
              "answer_relevance_rating")


def alce(limit: int, seed: int) -> DevSet:
    rows = read_jsonl(dev_data("alce_utility_dev.jsonl"))
    rows = random.Random(seed).sample(rows, min(limit, len(rows)))
    return DevSet("alce-utility", "en", USEFULNESS, [{k: r[k] for k in ("id", "question", "answer")} for r in rows],
                  ratings={r["id"]: float(r["utility_score"]) for r in rows},
                  note="answers of 8 ASQA/ELI5 system runs with people's utility rating 1-5; rank correlation")


def halueval_criteria(limit: int, seed: int) -> DevSet:
    pairs = halueval(limit, seed)
    return DevSet("halueval-criteria", "en", ("criteria.correctness", "criteria.correctness_judgesteps"),
                  pairs.samples, pairs=pairs.pairs, note="right vs hallucinated answer, the correctness criterion "
                  "reading the question, the reference and the answer")


SETS: dict[str, Callable[[int, int], DevSet]] = {
    "halueval": halueval, "halueval-recall": halueval_recall, "uhgeval": uhgeval, "relevance-en": relevance_en,
    "relevance-zh": relevance_zh, "faithbench": faithbench, "rgb-zh-passages": rgb_zh, "rgb-zh-passages-heldout": rgb_zh_heldout,
    "cranfield-passages": cranfield, "cranfield-graded": cranfield_graded, "halueval-passages": halueval_passages,
    "uhgeval-passages": uhgeval_passages, "halueval-correctness": halueval_correctness,
    "ragchecker-correctness": ragchecker("correctness"), "ragchecker-completeness": ragchecker("completeness"),
    "ragchecker-overall": ragchecker("overall"), "alce-utility": alce, "halueval-criteria": halueval_criteria,
}
