"""Throughput of localeval's retrieval metrics against ranx, and exactness against trec_eval on Cranfield.

Part 1 builds a synthetic run and qrels (distinct scores, graded judgments 1-3, every query with at
least one relevant document so that no query is skipped), times localeval building `Sample`s and
measuring them in batches, times ranx building its `Qrels`/`Run` and evaluating, and checks that the
two agree per query. ranx compiles with numba on first use; that is timed once, separately.

Part 2 ranks Cranfield with a small BM25 written here (top 100 per query), writes it as a TREC run to
a temporary file, and evaluates that file against qrels.tsv with localeval (localeval.trec) and with
ir_measures' pytrec_eval provider (trec_eval itself), per query, to 1e-12. Cranfield is read from the
dev-data folder (--cranfield). No model runs; it prints its figures and writes no results file.

    .venv/bin/python bench/retrieval_bench.py --queries 100000 --depth 100 --seed 0

Exit status 1 if any comparison disagrees. ranx and ir_measures are dev dependencies (`pip install -e .[dev]`).
"""

from __future__ import annotations

import csv
import math
import re
import sys
import tempfile
import time
import warnings
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import harness
import numpy as np

from localeval.data.records import Context, Sample
from localeval.data.trec import read_qrels, read_run, samples_from_trec
from localeval.metrics import MetricOptions, build_metrics
from localeval.metrics.base import Measurement

# localeval name -> ranx name; both evaluate the whole ranking for mrr and ap.
RANX_NAMES = {
    "precision@10": "precision@10",
    "recall@10": "recall@10",
    "hit@10": "hit_rate@10",
    "mrr": "mrr",
    "ap": "map",
    "ndcg@10": "ndcg@10",
}


def synthetic(queries: int, depth: int, seed: int) -> tuple[list[str], list[list[str]], list[list[float]], list[dict[str, int]]]:
    """Query ids, ranked doc ids with descending distinct scores, and qrels with 1-20ish graded docs each.

    Relevant documents are denser near the top of the ranking, some are never retrieved, and each
    query gets at least one relevant document that is not retrieved, so no query is skipped.
    """
    rng = np.random.default_rng(seed)
    n_docs = max(1_000_000, 100 * depth)
    stride = n_docs // (depth * 4)
    # Unique within a row: one step of `stride` per rank, plus jitter smaller than the stride.
    starts = rng.integers(0, n_docs, size=(queries, 1))
    docs = (starts + np.arange(depth) * stride + rng.integers(0, stride, size=(queries, depth))) % n_docs
    scores = -np.sort(-rng.random((queries, depth)), axis=1)
    relevant = rng.random((queries, depth)) < 0.4 * np.exp(-np.arange(depth) / 15.0)
    grades = rng.integers(1, 4, size=(queries, depth))
    unretrieved = rng.integers(1, 6, size=queries)

    # Fixed-width ids: ranx compiles per string width, so its warm-up on a slice then matches the whole.
    # Fresh string objects per query, laid out in memory the way parsing an input file leaves them.
    width = len(str(n_docs - 1))
    qids = [f"q{q}" for q in range(queries)]
    ranked = [[f"d{j:0{width}d}" for j in row] for row in docs.tolist()]
    qrels: list[dict[str, int]] = []
    for q, (row, mask, grade_row) in enumerate(zip(ranked, relevant.tolist(), grades.tolist())):
        judged = {doc: g for doc, m, g in zip(row, mask, grade_row) if m}
        for extra in range(unretrieved[q]):
            judged[f"u{q:0{width - 1}d}{extra}"] = int(grade_row[extra % depth])
        qrels.append(judged)
    return qids, ranked, scores.tolist(), qrels


def bench_localeval(qids, ranked, qrels, batch: int) -> tuple[float, float, dict[str, np.ndarray]]:
    start = time.perf_counter()
    samples = [
        Sample(id=qid, question=qid, contexts=tuple([Context("", doc) for doc in row]), relevance=judged)
        for qid, row, judged in zip(qids, ranked, qrels)
    ]
    built = time.perf_counter() - start

    metrics = build_metrics(list(RANX_NAMES), MetricOptions())
    values = {m.name: np.empty(len(samples)) for m in metrics}
    start = time.perf_counter()
    for lo in range(0, len(samples), batch):
        chunk = samples[lo : lo + batch]
        for metric in metrics:
            outcomes = metric.measure(chunk)
            values[metric.name][lo : lo + len(chunk)] = [
                o.values[metric.name] if isinstance(o, Measurement) else math.nan for o in outcomes
            ]
    measured = time.perf_counter() - start
    return built, measured, values


def _ranx_build(qids, ranked, scores, qrels):
    import ranx

    run_dict = {qid: dict(zip(row, score_row)) for qid, row, score_row in zip(qids, ranked, scores)}
    return ranx.Qrels(dict(zip(qids, qrels))), ranx.Run(run_dict)


def bench_ranx(qids, ranked, scores, qrels, threads: int) -> tuple[float, float, float, dict[str, np.ndarray]]:
    import numba
    import ranx

    warnings.filterwarnings("ignore", module="ranx")  # numba's uint64 -> int64 cast warnings
    warnings.filterwarnings("ignore", category=numba.NumbaWarning)
    # numba compiles (or loads from its cache) on first use; do that on a slice of the same data.
    start = time.perf_counter()
    head = slice(0, min(len(qids), 256))
    warm_qrels, warm_run = _ranx_build(qids[head], ranked[head], scores[head], qrels[head])
    ranx.evaluate(warm_qrels, warm_run, list(RANX_NAMES.values()), return_mean=False, save_results_in_run=False, threads=threads)
    warmup = time.perf_counter() - start

    start = time.perf_counter()
    ranx_qrels, ranx_run = _ranx_build(qids, ranked, scores, qrels)
    built = time.perf_counter() - start

    start = time.perf_counter()
    raw = ranx.evaluate(ranx_qrels, ranx_run, list(RANX_NAMES.values()), return_mean=False, save_results_in_run=False, threads=threads)
    measured = time.perf_counter() - start
    # ranx orders per-query arrays by its own (sorted) query ids; put them back in our order.
    position = {qid: i for i, qid in enumerate(ranx_run.get_query_ids())}
    order = np.array([position[qid] for qid in qids])
    values = {ours: np.asarray(raw[theirs])[order] for ours, theirs in RANX_NAMES.items()}
    return warmup, built, measured, values


def part_synthetic(args: Any) -> bool:
    import numba

    print(f"== synthetic: {args.queries} queries x {args.depth} docs, seed {args.seed}, batches of {args.batch}")
    t0 = time.perf_counter()
    qids, ranked, scores, qrels = synthetic(args.queries, args.depth, args.seed)
    print(f"   (data generated in {time.perf_counter() - t0:.1f} s; not timed below)")
    l_built, l_measured, ours = bench_localeval(qids, ranked, qrels, args.batch)
    threads = args.ranx_threads or numba.config.NUMBA_NUM_THREADS
    r_warm, r_built, r_measured, theirs = bench_ranx(qids, ranked, scores, qrels, threads)

    n = args.queries
    rows = [
        ("localeval build Samples", l_built),
        ("localeval measure (6 metrics)", l_measured),
        ("localeval total", l_built + l_measured),
        ("ranx build Qrels+Run", r_built),
        ("ranx evaluate (6 metrics)", r_measured),
        ("ranx total", r_built + r_measured),
    ]
    print(f"   {'step':32} {'seconds':>9} {'queries/s':>12}")
    for label, seconds in rows:
        print(f"   {label:32} {seconds:9.3f} {n / seconds:12,.0f}")
    print(f"   ranx numba warm-up (once per process, excluded above): {r_warm:.2f} s; "
          f"ranx threads: {numba.get_num_threads()}; localeval: 1 thread")
    measure_ratio = r_measured / l_measured
    total_ratio = (r_built + r_measured) / (l_built + l_measured)
    print(f"   speed ratio ranx time / localeval time: measure {measure_ratio:.2f}x, total {total_ratio:.2f}x "
          "(>1 means localeval is faster)")

    ok = True
    print(f"   {'metric':14} {'localeval mean':>16} {'ranx mean':>16} {'max |diff| per query':>22}")
    for name in RANX_NAMES:
        diff = float(np.max(np.abs(ours[name] - theirs[name])))
        agree = diff <= 1e-9 and not np.isnan(ours[name]).any()
        ok &= agree
        print(f"   {name:14} {np.mean(ours[name]):16.12f} {np.mean(theirs[name]):16.12f} {diff:22.3g} {'ok' if agree else 'DIFFERENT'}")
    return ok


# --- Cranfield ---------------------------------------------------------------------------------------

TOKEN = re.compile(r"[a-z0-9]+")


def bm25_run(
    corpus: list[tuple[str, str]], queries: list[tuple[str, str]], depth: int = 100, k1: float = 0.9, b: float = 0.4
) -> dict[str, list[tuple[str, float]]]:
    """Okapi BM25 with Lucene's idf, log(1 + (N - df + 0.5) / (df + 0.5)); k1/b are Anserini's defaults.

    Top `depth` per query by score, ties by docno ascending (the TREC file then carries the scores and
    trec_eval's own tie rule decides the evaluated order).
    """
    postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
    lengths = []
    for index, (_, text) in enumerate(corpus):
        counts = Counter(TOKEN.findall(text.lower()))
        lengths.append(sum(counts.values()))
        for term, tf in counts.items():
            postings[term].append((index, tf))
    n = len(corpus)
    average = sum(lengths) / n
    norm = [k1 * (1 - b + b * length / average) for length in lengths]
    run = {}
    for qid, text in queries:
        scores: dict[int, float] = defaultdict(float)
        for term in TOKEN.findall(text.lower()):  # repeated query terms count again, as in Lucene
            plist = postings.get(term)
            if not plist:
                continue
            idf = math.log(1 + (n - len(plist) + 0.5) / (len(plist) + 0.5))
            for index, tf in plist:
                scores[index] += idf * tf * (k1 + 1) / (tf + norm[index])
        top = sorted(scores.items(), key=lambda item: (-item[1], corpus[item[0]][0]))[:depth]
        run[qid] = [(corpus[index][0], score) for index, score in top]
    return run


def part_cranfield(directory: Path) -> bool:
    import ir_measures
    from ir_measures import AP, RR, R, P, Success, nDCG

    print(f"== Cranfield ({directory}): BM25 top 100, localeval vs ir_measures/pytrec_eval")
    if not (directory / "qrels.tsv").exists():
        print(f"   skipped: {directory / 'qrels.tsv'} not found (pass --cranfield DIR)")
        return True
    corpus = [(d["_id"], f"{d.get('title', '')} {d['text']}") for d in harness.read_jsonl(directory / "corpus.jsonl")]
    queries = [(q["_id"], q["text"]) for q in harness.read_jsonl(directory / "queries.jsonl")]
    run = bm25_run(corpus, queries)

    with tempfile.TemporaryDirectory() as tmp:
        run_path = Path(tmp) / "bm25.run"
        with run_path.open("w", encoding="utf-8") as out:
            for qid, docs in run.items():
                for rank, (docno, score) in enumerate(docs, start=1):
                    out.write(f"{qid} Q0 {docno} {rank} {score!r} bm25\n")
        samples, counts = samples_from_trec(read_run(run_path), read_qrels(directory / "qrels.tsv"))
        irm_run = list(ir_measures.read_trec_run(str(run_path)))
    # The reference side reads qrels.tsv on its own, not through localeval.trec.
    with (directory / "qrels.tsv").open(encoding="utf-8", newline="") as handle:
        irm_qrels = [ir_measures.Qrel(r["query-id"], r["corpus-id"], int(r["score"])) for r in csv.DictReader(handle, delimiter="\t")]

    measures = {"precision@10": P @ 10, "recall@10": R @ 10, "hit@10": Success @ 10, "mrr": RR, "ap": AP, "ndcg@10": nDCG @ 10}
    theirs: dict[str, dict[str, float]] = defaultdict(dict)
    names = {m: name for name, m in measures.items()}
    for row in ir_measures.pytrec_eval.iter_calc(list(measures.values()), irm_qrels, irm_run):
        theirs[names[row.measure]][row.query_id] = row.value

    print(f"   {len(samples)} queries evaluated; {counts['run_only']} only in the run, {counts['qrels_only']} only in the qrels")
    print(f"   {'metric':14} {'localeval':>14} {'trec_eval':>14} {'max |diff|':>11}  skipped")
    ok = True
    for name in measures:
        outcomes = build_metrics(name)[0].measure(samples)
        mine = {s.id: o.values[name] for s, o in zip(samples, outcomes) if isinstance(o, Measurement)}
        skipped = len(samples) - len(mine)
        diff = max(abs(v - theirs[name][qid]) for qid, v in mine.items())
        # trec_eval's mean also covers skipped (no relevant document) queries, which it scores 0.
        others = [theirs[name][s.id] for s in samples if s.id not in mine]
        agree = diff <= 1e-12 and all(v == 0.0 for v in others)
        ok &= agree
        their_mean = float(np.mean([theirs[name][s.id] for s in samples if s.id in mine]))
        verdict = "exact" if agree else "DIFFERENT"
        print(f"   {name:14} {np.mean(list(mine.values())):14.10f} {their_mean:14.10f} {diff:11.2g}  {skipped:7d}  {verdict}")
    return ok


def main() -> int:
    parser = harness.parser(__doc__, "seed")
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--batch", type=int, default=1024, help="samples per measure() call")
    parser.add_argument("--cranfield", type=Path, default=harness.dev_data("cranfield"),
                        help="BEIR-style Cranfield directory")
    parser.add_argument("--ranx-threads", type=int, default=0, help="numba threads for ranx (default: all cores)")
    parser.add_argument("--skip-synthetic", action="store_true")
    parser.add_argument("--skip-cranfield", action="store_true")
    args = parser.parse_args()
    if args.queries < 1 or args.depth < 1 or args.batch < 1:
        parser.error("--queries, --depth and --batch must be positive")
    ok = True
    if not args.skip_synthetic:
        ok &= part_synthetic(args)
    if not args.skip_cranfield:
        ok &= part_cranfield(args.cranfield)
    print("all comparisons agree" if ok else "SOME COMPARISONS DISAGREE")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
