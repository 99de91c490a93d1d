"""How often the judge metrics agree with people, per dev set, metric and method variant.

One table: judge-vs-label agreement on the dev sets in ../shared/data, with seconds, judge calls and
tokens per sample beside it, so a method is chosen for its accuracy *and* its cost.

- Pairs (ties count 1/2; the tie rate is reported): HaluEval-QA (the right answer should score higher
  than the hallucinated one; `halueval-recall`: the same pairs as reference answers, for context_recall),
  UHGEval (the first sentence of the real continuation vs the hallucinated continuation), answer-relevance
  pairs built from the dev questions (English: a HaluEval question with its right answer vs the right
  answer of another question, and vs an evasive non-answer; Chinese: an UHGEval news lead with the first
  sentence of its real continuation vs that of another article).
- Correctness pairs, each answer against the reference answer: RAGChecker's human pairs (two systems'
  answers to one question, the one people rated better by `correctness_mean`, `completeness_mean` or
  `overall_mean` should score higher; pairs rated equal are left out and counted in the note) and HaluEval-QA
  (`halueval-correctness`: the right vs the hallucinated answer).
- Criteria (your own rubric metrics): ALCE's answers with people's utility rating 1-5 (`alce-utility`:
  Spearman and Kendall of the shipped `usefulness` criterion, which has no evaluation steps, of it with steps
  written by hand and with steps the judge wrote once, beside `answer_relevance_rating`), and the HaluEval
  pairs with the yes/no `correctness` criterion (`halueval-criteria`, as shipped and with judge-written steps).
- Labelled rows (balanced accuracy at the 0.5 threshold and at a cross-fitted one, AUROC): FaithBench (faithful = not
  `is_hallucinated_majority`), RGB-zh passage relevance (a query with one of its qrels passages, or with
  a non-relevant passage that shares the most words with it; `rgb-zh-passages-heldout`: the same built from
  queries outside the first 100, to check a prompt chosen on those), Cranfield passage relevance (a query with
  a document judged relevant with grade >= 3, or an unjudged document that shares the most words),
  passage usefulness for context_precision (a question and its reference answer with its own passage, or
  with another question's that shares the most words: HaluEval knowledge passages; UHGEval leads with the
  first sentence of the real continuation and their articles, which hold that sentence word for word).

Every row set is a seeded slice (--limit pairs or rows per set). Agreement runs share one judge cache
(--cache), so variants that ask the same question pay once and an interrupted run resumes; seconds and
tokens per sample come from separate runs of the first --timing samples with an empty cache. Every
model run takes /tmp/localeval-model.lock, so other model processes never overlap it.

    .venv/bin/python bench/accuracy.py --limit 40                       # every set, default methods
    .venv/bin/python bench/accuracy.py --sets halueval --variants default,faith-sentences --limit 80
"""

from __future__ import annotations

import argparse
import ast
import fcntl
import json
import random
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any, Callable, Iterator

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from localeval import JudgeOptions, MetricOptions, evaluate  # noqa: E402
from localeval.text import split_sentences  # noqa: E402

DATA = REPO.parent / "shared" / "data"
LOCK = Path("/tmp/localeval-model.lock")
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


# ---- dev sets ---------------------------------------------------------------------------------------

def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def halueval(limit: int, seed: int) -> DevSet:
    rows = read_jsonl(DATA / "halueval_qa_dev.jsonl")
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
    rows = read_jsonl(DATA / "uhgeval_zh_dev.jsonl")
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
    rows = [r for r in read_jsonl(DATA / "halueval_qa_dev.jsonl") if int(r["is_hallucinated"]) == 0]
    rng = random.Random(seed)
    return _relevance_pairs("relevance-en", "en", rng.sample(rows, limit), "answer", rng,
                            "HaluEval question: its right answer vs another question's right answer, and vs an evasive reply")


def relevance_zh(limit: int, seed: int) -> DevSet:
    rng = random.Random(seed)
    return _relevance_pairs("relevance-zh", "zh", rng.sample(uhgeval_rows(), limit), "real_first", rng,
                            "UHGEval lead: first sentence of its real continuation vs another article's, and vs an evasive reply")


def faithbench(limit: int, seed: int) -> DevSet:
    rows = random.Random(seed).sample(read_jsonl(DATA / "faithbench_dev.jsonl"), limit)
    samples = [{k: row[k] for k in ("id", "question", "answer", "contexts")} for row in rows]
    labels = {row["id"]: 1 - int(row["is_hallucinated_majority"]) for row in rows}
    return DevSet("faithbench", "en", ("faithfulness", "grounding"), samples, labels=labels,
                  note="label 1 = faithful (majority of experts found no hallucination)")


def _tokens(text: str) -> set[str]:
    from localeval.metrics.rouge import _TOKEN_RE  # the CJK-aware tokenizer ROUGE-L uses

    return set(_TOKEN_RE.findall(text.lower()))


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
    queries, corpus, qrels = _collection(DATA / "rgb_zh_retrieval")
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
            for r in read_jsonl(DATA / "halueval_qa_dev.jsonl") if int(r["is_hallucinated"]) == 0]
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
    queries, corpus, qrels = _collection(DATA / "cranfield")
    return _passage_set("cranfield-passages", "en", queries, corpus, qrels, 3, limit, seed,
                        "query with a document of grade >= 3 (1) or the most word-sharing unjudged document (0)")


CORRECTNESS = ("answer_correctness", "token_f1", "exact_match", "answer_rouge_l", "answer_similarity")


def halueval_correctness(limit: int, seed: int) -> DevSet:
    pairs = halueval(limit, seed)
    return DevSet("halueval-correctness", "en", CORRECTNESS, pairs.samples, pairs=pairs.pairs,
                  note="right vs hallucinated answer, each against the reference answer")


def ragchecker(label: str) -> Callable[[int, int], DevSet]:
    """RAGChecker's human pairs, read by one of its labels (correctness, completeness, overall): the answer
    people rated better should score higher; pairs people rated equal (mean 0) are left out."""
    def build(limit: int, seed: int) -> DevSet:
        rows = read_jsonl(DATA / "ragchecker_pairs_dev.jsonl")
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
#: Evaluation steps written by hand for the usefulness criterion (the shipped file has none).
HAND_STEPS = ["Work out what the person asking wants to know.",
              "Check whether the answer tells them that, and whether what it says is plausible and clear.",
              "Pick the level whose description fits best."]


def alce(limit: int, seed: int) -> DevSet:
    rows = read_jsonl(DATA / "alce_utility_dev.jsonl")
    rows = random.Random(seed).sample(rows, min(limit, len(rows)))
    return DevSet("alce-utility", "en", USEFULNESS, [{k: r[k] for k in ("id", "question", "answer")} for r in rows],
                  ratings={r["id"]: float(r["utility_score"]) for r in rows},
                  note="answers of 8 ASQA/ELI5 system runs with people's utility rating 1-5; rank correlation")


def halueval_criteria(limit: int, seed: int) -> DevSet:
    pairs = halueval(limit, seed)
    return DevSet("halueval-criteria", "en", ("criteria.correctness", "criteria.correctness_judgesteps"),
                  pairs.samples, pairs=pairs.pairs, note="right vs hallucinated answer, the correctness criterion "
                  "reading the question, the reference and the answer")


def criteria_variants(judge: JudgeOptions) -> None:
    """Copies of the shipped usefulness and correctness criteria under other names, registered as metrics:
    with steps written by hand (usefulness), and with steps the judge writes once from the criterion, G-Eval's
    method (bench/prompt_variants/criterion-steps)."""
    import tomllib

    from localeval.judge.kit import JudgeKit
    from localeval.metrics.criteria import load_criteria, packaged_criteria, parse_criterion

    folder = Path(tempfile.mkdtemp(prefix="localeval-criteria-"))
    shipped = {p.stem: p.read_text(encoding="utf-8") for p in packaged_criteria()}
    kit = JudgeKit(replace(judge, prompts_dir=str(REPO / "bench" / "prompt_variants" / "criterion-steps")))
    with model_lock():
        for name in ("usefulness", "correctness"):
            data = tomllib.loads(shipped[name])
            english = parse_criterion(shipped[name], name).wording["en"]
            written, _ = kit.judge.json(kit.prompt("criterion_steps", "en", criterion=english.criterion,
                                                   levels=list(english.levels)))
            variants = {"judgesteps": written["steps"], **({"handsteps": HAND_STEPS} if name == "usefulness" else {})}
            for suffix, steps in variants.items():
                (folder / f"{name}_{suffix}.toml").write_text(_toml(
                    {**{k: v for k, v in data.items() if k not in ("steps", "zh")}, "name": f"{name}_{suffix}",
                     "steps": steps}), encoding="utf-8")
    kit.close()
    load_criteria([folder])


def _toml(data: dict[str, Any]) -> str:
    """The few shapes a criterion file has: strings, lists of strings, one table of levels."""
    lines, tables = [], []
    for key, value in data.items():
        if isinstance(value, dict):
            tables += [f"[{key}]", *(f"{k} = {json.dumps(v, ensure_ascii=False)}" for k, v in value.items())]
        else:
            lines.append(f"{key} = {json.dumps(value, ensure_ascii=False)}")
    return "\n".join(lines + tables) + "\n"


SETS: dict[str, Callable[[int, int], DevSet]] = {
    "halueval": halueval, "halueval-recall": halueval_recall, "uhgeval": uhgeval, "relevance-en": relevance_en,
    "relevance-zh": relevance_zh, "faithbench": faithbench, "rgb-zh-passages": rgb_zh, "rgb-zh-passages-heldout": rgb_zh_heldout,
    "cranfield-passages": cranfield, "halueval-passages": halueval_passages,
    "uhgeval-passages": uhgeval_passages, "halueval-correctness": halueval_correctness,
    "ragchecker-correctness": ragchecker("correctness"), "ragchecker-completeness": ragchecker("completeness"),
    "ragchecker-overall": ragchecker("overall"), "alce-utility": alce, "halueval-criteria": halueval_criteria,
}

# ---- method variants: metric option values (each run through localeval as a user would) -------------

VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "faith-sentences": {"faithfulness_statements": "sentences"},
    "faith-judge": {"faithfulness_statements": "judge"},
    "faith-both": {"faithfulness_statements": "both"},
    "faith-selected": {"faithfulness_evidence": "selected"},
    "faith-3way": {"faithfulness_verdict": "three-way"},
    "faith-sentences-selected": {"faithfulness_statements": "sentences", "faithfulness_evidence": "selected"},
    "faith-question-beside": {"faithfulness_question": "beside"},
    "faith-sentences-3way": {"faithfulness_statements": "sentences", "faithfulness_verdict": "three-way"},
    "faith-sentences-selected-3way": {"faithfulness_statements": "sentences", "faithfulness_evidence": "selected",
                                      "faithfulness_verdict": "three-way"},
    "ctx-probability": {"context_relevance_method": "probability"},
    "recall-sentences": {"context_recall_statements": "sentences"},
    "recall-judge": {"context_recall_statements": "judge"},
    "correct-judge": {"correctness_statements": "judge"},
}
#: Which metric each variant changes (a variant is only run with the metrics it changes).
AFFECTS = {"faith": ("faithfulness",), "ctx": ("context_relevance",), "recall": ("context_recall",),
           "correct": ("answer_correctness",)}


def applies(variant: str, metric: str) -> bool:
    prefix = variant.split("-")[0]
    return variant == "default" or metric in AFFECTS.get(prefix, ())


def variant_options(name: str) -> dict[str, Any]:
    if name not in VARIANTS:
        raise SystemExit(f"unknown variant '{name}'; known: {', '.join(VARIANTS)}")
    return VARIANTS[name]


# ---- agreement ------------------------------------------------------------------------------------

def pair_agreement(scores: dict[str, float], pairs: list[tuple[str, str]]) -> dict[str, Any]:
    wins = ties = n = 0
    for good, bad in pairs:
        if good in scores and bad in scores:
            n += 1
            if scores[good] > scores[bad]:
                wins += 1
            elif scores[good] == scores[bad]:
                ties += 1
    return {"n": n, "pair_accuracy": (wins + ties / 2) / n if n else None, "tie_rate": ties / n if n else None}


def rank_agreement(scores: dict[str, float], ratings: dict[str, float]) -> dict[str, Any]:
    """Spearman's rho and Kendall's tau-b of the scores with people's graded ratings (ties averaged)."""
    from scipy.stats import kendalltau, spearmanr

    ids = [i for i in ratings if i in scores]
    ours, theirs = [scores[i] for i in ids], [ratings[i] for i in ids]
    return {"n": len(ids), "spearman": float(spearmanr(ours, theirs).statistic),
            "kendall": float(kendalltau(ours, theirs).statistic)}


def label_agreement(scores: dict[str, float], labels: dict[str, int]) -> dict[str, Any]:
    ids = [i for i in labels if i in scores]
    pos = [scores[i] for i in ids if labels[i] == 1]
    neg = [scores[i] for i in ids if labels[i] == 0]
    if not pos or not neg:
        return {"n": len(ids), "balanced_accuracy": None, "auroc": None}
    # AUROC as the Mann-Whitney statistic: P(a positive outscores a negative), ties 1/2
    auc = sum(1.0 if p > q else 0.5 if p == q else 0.0 for p in pos for q in neg) / (len(pos) * len(neg))
    return {"n": len(ids), "balanced_accuracy": balanced_accuracy(scores, labels, ids, 0.5), "auroc": auc,
            "balanced_accuracy_crossfit": crossfit(scores, labels, sorted(ids))}


def balanced_accuracy(scores: dict[str, float], labels: dict[str, int], ids: list[str], threshold: float) -> float:
    """Mean of the recall of positives (score >= threshold) and of negatives (below it); 0.5 without either."""
    pos = [scores[i] >= threshold for i in ids if labels[i] == 1]
    neg = [scores[i] < threshold for i in ids if labels[i] == 0]
    if not pos or not neg:
        return 0.5
    return (sum(pos) / len(pos) + sum(neg) / len(neg)) / 2


def crossfit(scores: dict[str, float], labels: dict[str, int], ids: list[str]) -> float:
    """Balanced accuracy at a threshold the scores do not see: the rows split in two (alternate ids), the best
    threshold of each half applied to the other, the two results averaged. For a score with no natural
    threshold (a likelihood), this is what a user gets by calibrating on their own labels first."""
    halves = (ids[0::2], ids[1::2])
    results = [balanced_accuracy(scores, labels, held, best_threshold(scores, labels, fit))
               for fit, held in (halves, halves[::-1])]
    return sum(results) / 2


def best_threshold(scores: dict[str, float], labels: dict[str, int], ids: list[str]) -> float:
    """The score of `ids` that, as a threshold, gives them the highest balanced accuracy (the lowest on a tie)."""
    return max(sorted({scores[i] for i in ids}), key=lambda t: balanced_accuracy(scores, labels, ids, t))


@contextmanager
def model_lock() -> Iterator[None]:
    with LOCK.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def score(samples: list[dict[str, Any]], metric: str, variant: dict[str, Any], judge: JudgeOptions) -> tuple[Any, float]:
    with model_lock():
        started = time.perf_counter()
        result = evaluate(samples, [metric], MetricOptions(judge=judge, **variant))
        return result, time.perf_counter() - started


def measure(dev: DevSet, metric: str, variant_name: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    variant = variant_options(variant_name)
    judge = JudgeOptions(judge=args.judge, cache=args.cache, n_threads=args.threads, seed=0, parallel=args.parallel,
                         prompts_dir=args.prompts)
    result, _ = score(dev.samples, metric, variant, judge)
    timing: dict[str, Any] = {}
    if args.timing:
        with tempfile.TemporaryDirectory() as tmp:
            fresh = replace(judge, cache=str(Path(tmp) / "t.sqlite"))
            timed, seconds = score(dev.samples[: args.timing], metric, variant, fresh)
        usage = timed.summary.get("judge", {}).get("usage", {}).get(metric, {})
        n = len(timed.rows)
        timing = {"timing_samples": n, "seconds_per_sample": seconds / n,
                  "calls_per_sample": usage.get("calls", 0) / n,
                  "prompt_tokens_per_sample": usage.get("prompt_tokens", 0) / n,
                  "generated_tokens_per_sample": usage.get("generated_tokens", 0) / n}
    out = []
    for column, entry in chunk_columns(result).items():
        scores = {row["id"]: row["metrics"][column] for row in result.rows if column in row["metrics"]}
        figures = (pair_agreement(scores, dev.pairs) if dev.pairs else rank_agreement(scores, dev.ratings)
                   if dev.ratings else label_agreement(scores, dev.labels))
        out.append({"set": dev.name, "lang": dev.lang, "metric": metric, "variant": variant_name, "column": column,
                    "skipped": entry["n_skipped"], **figures, **timing,
                    "scores": scores})
    return out


RAGAS_RUNS: dict[tuple[str, ...], dict[str, Any]] = {}


def measure_ragas(dev: DevSet, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Ragas' factual_correctness on the set's samples, with the same GGUF judge served by llama.cpp from the
    Ragas venv (bench/ragas_compare.py's run_ragas), one sample at a time; a sample that failed (an exception,
    NaN) has no score, and the pair it is in leaves the agreement, counted in `failed`."""
    from ragas_compare import run_ragas

    from localeval import models
    from localeval.settings import physical_cores

    key = tuple(s["id"] for s in dev.samples)
    if key not in RAGAS_RUNS:  # the RAGChecker sets share their samples: Ragas scores them once
        judge = models.resolve(args.judge, "judge")
        embedder = models.resolve(None, "embedder")
        with model_lock(), tempfile.TemporaryDirectory() as tmp:
            RAGAS_RUNS[key] = run_ragas(dev.samples, judge, embedder, 4096, args.threads or physical_cores(), Path(tmp),
                                        metrics="factual_correctness")
    done = RAGAS_RUNS[key]
    samples = done["samples"]
    scores = {s["id"]: s["metrics"]["factual_correctness"] for s in samples
              if s["metrics"].get("factual_correctness") is not None}
    usage = [s["usage"]["factual_correctness"] for s in samples]
    n = len(samples)
    return [{"set": dev.name, "lang": dev.lang, "metric": "ragas:factual_correctness", "variant": "ragas-0.4",
             "column": "ragas:factual_correctness", "skipped": n - len(scores), "failed": n - len(scores),
             **pair_agreement(scores, dev.pairs), "timing_samples": n,
             "seconds_per_sample": sum(u["seconds"] for u in usage) / n,
             "calls_per_sample": sum(u["requests"] for u in usage) / n,
             "prompt_tokens_per_sample": sum(u["prompt_tokens"] for u in usage) / n,
             "generated_tokens_per_sample": sum(u["completion_tokens"] for u in usage) / n,
             "versions": done["versions"], "scores": scores}]


def chunk_columns(result: Any) -> dict[str, Any]:
    """The run's columns, plus `context_precision.p`: on rows of one chunk, that chunk's P(useful) from the
    details (the column itself is 0 or 1 there, so its AUROC is only its balanced accuracy)."""
    columns = dict(result.summary["metrics"])
    if "context_precision" in columns:
        for row in result.rows:
            useful = row["details"].get("context_precision", {}).get("useful", [])
            if len(useful) == 1:
                row["metrics"]["context_precision.p"] = useful[0]["p"]
        columns["context_precision.p"] = {"n_skipped": columns["context_precision"]["n_skipped"]}
    return columns


def table(rows: list[dict[str, Any]]) -> str:
    header = ("set", "column", "variant", "n", "pair acc", "ties", "bacc@0.5", "bacc x-fit", "AUROC", "Spearman",
              "Kendall", "s/sample", "calls", "prompt tok", "gen tok")

    def num(v: Any, digits: int = 3) -> str:
        return "-" if v is None else f"{v:.{digits}f}"

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        lines.append("| " + " | ".join([r["set"], r["column"], r["variant"], str(r["n"]), num(r.get("pair_accuracy")),
                                        num(r.get("tie_rate"), 2), num(r.get("balanced_accuracy")),
                                        num(r.get("balanced_accuracy_crossfit")), num(r.get("auroc")),
                                        num(r.get("spearman")), num(r.get("kendall")),
                                        num(r.get("seconds_per_sample"), 1), num(r.get("calls_per_sample"), 1),
                                        num(r.get("prompt_tokens_per_sample"), 0),
                                        num(r.get("generated_tokens_per_sample"), 0)]) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judge", default=None, help="registry name or .gguf (default: the default judge)")
    parser.add_argument("--sets", default=",".join(SETS), help=f"comma-separated, from: {', '.join(SETS)}")
    parser.add_argument("--metrics", default=None, help="only these metrics (default: each set's own)")
    parser.add_argument("--variants", default="default", help=f"comma-separated, from: {', '.join(VARIANTS)}")
    parser.add_argument("--limit", type=int, default=40, help="pairs or rows per set")
    parser.add_argument("--timing", type=int, default=6, help="samples timed with an empty cache (0: none)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--parallel", type=int, default=None, help="sequences in flight (the judge's default if unset)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", default=str(REPO / ".localeval-cache" / "accuracy.sqlite"))
    parser.add_argument("--prompts", default=None, help="a prompts folder to use instead of the packaged prompts "
                        "(e.g. an earlier commit's, for a before figure)")
    parser.add_argument("--tag", default="", help="suffix of the results file name")
    parser.add_argument("--ragas", action="store_true", help="also Ragas' factual_correctness on the sets that measure "
                        "answer_correctness (needs bench/.venv-ragas; `make bench` makes it)")
    args = parser.parse_args()
    wanted = set(args.metrics.split(",")) if args.metrics else None
    if {"alce-utility", "halueval-criteria"} & set(args.sets.split(",")):
        criteria_variants(JudgeOptions(judge=args.judge, cache=args.cache, n_threads=args.threads, seed=0))
    rows: list[dict[str, Any]] = []
    sets = []
    for name in args.sets.split(","):
        dev = SETS[name](args.limit, args.seed)
        sets.append({"name": dev.name, "lang": dev.lang, "note": dev.note, "samples": len(dev.samples),
                     "pairs": len(dev.pairs), "labels": len(dev.labels)})
        for metric in dev.metrics:
            if wanted and metric not in wanted:
                continue
            for variant in args.variants.split(","):
                if not applies(variant, metric):
                    continue
                found = measure(dev, metric, variant, args)
                rows.extend(found)
                print(table(found), flush=True)
        if args.ragas and "answer_correctness" in dev.metrics:
            found = measure_ragas(dev, args)
            rows.extend(found)
            print(table(found), flush=True)
    print("\n" + table(rows))
    out = REPO / "bench" / "results" / f"accuracy-{date.today()}-{args.judge or 'default'}{'-' + args.tag if args.tag else ''}.json"
    out.write_text(json.dumps({"args": vars(args), "sets": sets, "variants": {v: variant_options(v) for v in args.variants.split(",")},
                               "rows": rows, "table": table(rows)}, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"\nresults in {out}")


if __name__ == "__main__":
    main()
