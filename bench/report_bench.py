"""How large a report gets and how long headless chromium takes to open it, on synthetic runs.

Synthesises a run folder in `localeval score`'s output format (written with its own ResultWriter and
Summary, so the files are exactly what a real run writes) without any model: N samples with five ranked
contexts each, retrieval, ROUGE-L and judge-metric columns, and judge details (statements with their
probabilities, generated questions, chosen context sentences, P(useful) per context, per-sample judge
usage), a quarter of the questions in Chinese. Then builds the report and loads it in headless chromium
(tests/browser.py) a few times, reporting the file size, the build time and the load time: navigation
start to the page's ready marker (every chart drawn), split at the moment plotly.js finished parsing.
Also times a text search over the embedded samples. `--run DIR` measures an existing run folder too. No
model runs. Results go to bench/results/report-<date>[-<tag>].json (or --out).

    .venv/bin/python bench/report_bench.py --run out/demo --samples 10000 --samples 100000
"""

from __future__ import annotations

import datetime as dt
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import harness
import numpy as np

from localeval.report import DEFAULT_MAX_SAMPLES, build_report
from localeval.results.aggregate import Summary
from localeval.results.writer import ResultWriter
from localeval.text import split_sentences
from tests.browser import chromium, open_report

METRICS = {
    "precision@10": ["precision@10"], "recall@10": ["recall@10"], "mrr": ["mrr"], "ndcg@10": ["ndcg@10"],
    "rouge_l": ["rouge_l.precision", "rouge_l.recall", "rouge_l.f"], "faithfulness": ["faithfulness", "faithfulness.share"],
    "answer_relevance": ["answer_relevance"], "context_relevance": ["context_relevance"],
    "context_precision": ["context_precision"],
}
EN_WORDS = ("tower river museum energy cell protein novel author water pressure altitude century bridge harbour "
            "engine railway mountain forest language treaty").split()
ZH_SENTENCES = ["长城是中国古代的军事防御工程。", "现存的长城遗迹主要为明朝时期修建的明长城。", "中国是茶的故乡。",
                "光合作用是植物利用光能的过程。", "植物通过根吸收水分。", "黄河是中国第二长的河流。"]


def sentence(rng: np.random.Generator, zh: bool) -> str:
    if zh:
        return str(rng.choice(ZH_SENTENCES))
    words = rng.choice(EN_WORDS, size=int(rng.integers(8, 16)))
    return " ".join(words).capitalize() + "."


def synthetic_row(i: int, rng: np.random.Generator) -> tuple[dict[str, Any], dict[str, dict[str, float]], dict[str, str]]:
    """One row as `localeval score` writes it, and its values per metric (for the summary) and skips."""
    zh = i % 4 == 3
    sep = "" if zh else " "
    contexts = [{"id": f"d{int(rng.integers(0, 50_000))}", "text": sep.join(sentence(rng, zh) for _ in range(3))} for _ in range(5)]
    relevant = {contexts[int(rng.integers(0, 5))]["id"]: 1} if rng.random() < 0.8 else {"d-missing": 1}
    answer = sep.join(sentence(rng, zh) for _ in range(2))
    ranks = [k for k, c in enumerate(contexts, start=1) if c["id"] in relevant]
    rr = 1 / ranks[0] if ranks else 0.0
    p_statements = rng.beta(4, 1.5, size=int(rng.integers(2, 6)))
    useful = rng.beta(2, 2, size=5)
    n_sentences = sum(len(split_sentences(c["text"])) for c in contexts)
    needed = sorted(int(x) for x in rng.choice(np.arange(1, n_sentences + 1), size=int(rng.integers(1, 5)), replace=False))
    cosines = rng.uniform(0.4, 1.0, size=3)
    usage = {"calls": 4, "prompt_tokens": int(rng.integers(800, 1600)), "cached_tokens": 300, "generated_tokens": 60,
             "seconds": round(float(rng.uniform(2, 9)), 3), "cache_hits": 0}
    values = {
        "precision@10": {"precision@10": len(ranks) / 10}, "recall@10": {"recall@10": float(bool(ranks))},
        "mrr": {"mrr": rr}, "ndcg@10": {"ndcg@10": 1 / np.log2(ranks[0] + 1) if ranks else 0.0},
        "rouge_l": {"rouge_l.precision": float(rng.uniform(0, 0.4)), "rouge_l.recall": float(rng.uniform(0.2, 1)),
                    "rouge_l.f": float(rng.uniform(0, 0.5))},
        "faithfulness": {"faithfulness": float(p_statements.mean()), "faithfulness.share": float(np.mean(p_statements >= 0.5))},
        "answer_relevance": {"answer_relevance": float(cosines.mean())},
        "context_relevance": {"context_relevance": len(needed) / n_sentences},
        "context_precision": {"context_precision": float(np.mean(useful >= 0.5))},
    }
    skipped = {"rouge_l": "missing field 'reference'"} if i % 50 == 7 else {}
    for metric in skipped:
        values.pop(metric)
    details = {
        "faithfulness": {"statements": [{"text": sentence(rng, zh), "p": round(float(p), 6), "supported": bool(p >= 0.5)}
                                        for p in p_statements], "against": "contexts", "windows": 1,
                         "lang": "zh" if zh else "en", "judge": usage},
        "answer_relevance": {"questions": [{"text": sentence(rng, zh).rstrip(".。") + ("？" if zh else "?"),
                                            "cosine": round(float(c), 6)} for c in cosines],
                             "noncommittal": False, "lang": "zh" if zh else "en", "judge": usage},
        "context_relevance": {"sentences": n_sentences, "needed": needed, "windows": 1, "lang": "zh" if zh else "en",
                              "judge": usage},
        "context_precision": {"useful": [{"p": round(float(p), 6), "relevant": bool(p >= 0.5)} for p in useful],
                              "against": "reference", "lang": "zh" if zh else "en", "judge": usage},
    }
    row = {"id": f"s{i:06d}", "question": sentence(rng, zh).rstrip(".。") + ("？" if zh else "?"), "answer": answer,
           "contexts": contexts, "reference": answer if i % 50 != 7 else None, "reference_doc_ids": relevant,
           "metrics": {k: v for m in values.values() for k, v in m.items()}, "details": details, "skipped": skipped}
    if row["reference"] is None:
        del row["reference"]
    return row, values, skipped


def synthesise(folder: Path, n: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    summary = Summary(METRICS)
    with ResultWriter(folder) as writer:
        for i in range(n):
            row, values, skipped = synthetic_row(i, rng)
            writer.write_row(row)
            for metric, v in values.items():
                summary.add_values(metric, v)
            for metric, reason in skipped.items():
                summary.add_skip(metric, reason)
            summary.n_samples += 1
        writer.commit({"input": f"synthetic ({n:,} samples, seed {seed})", "n_samples": n, "metrics": summary.as_dict(),
                       "settings": {m: {"synthetic": True} for m in METRICS}, "versions": {"localeval": "bench"},
                       "judge": {"judge_model": "synthetic.gguf", "judge_sha256": "0" * 64, "engine": "none (bench)",
                                 "usage": {}}})


def measure(folder: Path, label: str, loads: int, out: Path) -> dict[str, Any]:
    """Build the report of a run folder and load it `loads` times in headless chromium."""
    start = time.perf_counter()
    written = build_report([folder], out)
    built = time.perf_counter() - start
    ready, parsed, search = [], [], []
    with chromium(timeout_ms=600_000) as browser:
        for _ in range(loads):
            visit = open_report(browser, out, timeout_ms=600_000)
            if visit.errors or visit.outside_requests(out.resolve().as_uri()):
                raise SystemExit(f"report of {label}: {visit.errors} {visit.requests}")
            ready.append(visit.ready_ms)
            parsed.append(visit.page.evaluate("window.localevalStartMs"))
            search.append(visit.page.evaluate("""() => { const box = document.getElementById('sample-search');
              const t = performance.now(); box.value = 'tower river'; box.dispatchEvent(new Event('input'));
              return performance.now() - t; }"""))
            visit.page.close()
    return {"run": label, "samples": written["runs"][0]["n_samples"],
            "samples_jsonl_mb": round((folder / "samples.jsonl").stat().st_size / 1e6, 1),
            "report_build_s": round(built, 1), "report_mb": round(written["bytes"] / 1e6, 1),
            "embedded": written["runs"][0], "load_to_ready_ms": round(statistics.median(ready)),
            "load_to_ready_all_ms": [round(x) for x in ready], "plotly_parsed_ms": round(statistics.median(parsed)),
            "search_ms": round(statistics.median(search), 1)}


def main() -> None:
    parser = harness.parser(__doc__, "tag")
    parser.add_argument("--samples", type=int, action="append", help="synthetic run sizes (repeatable; default 10000)")
    parser.add_argument("--run", type=Path, action="append", default=[], help="also an existing run folder (repeatable)")
    parser.add_argument("--loads", type=int, default=3, help="browser loads per report (the median is reported)")
    parser.add_argument("--out", type=Path, default=None, help="the results file (default: bench/results/report-...)")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        jobs = [(folder, str(folder)) for folder in args.run] + [(None, n) for n in args.samples or ([] if args.run else [10_000])]
        for folder, label in jobs:
            if folder is None:
                folder = Path(tmp) / f"run-{label}"
                start = time.perf_counter()
                synthesise(folder, label)
                print(f"synthesised {label:,} samples in {time.perf_counter() - start:.0f} s", flush=True)
                label = f"synthetic {label:,}"
            result = measure(folder, label, args.loads, Path(tmp) / "report.html")
            results.append(result)
            print(f"{label}: samples.jsonl {result['samples_jsonl_mb']} MB, report {result['report_mb']} MB "
                  f"({result['embedded']['n']:,} of {result['samples']:,} samples embedded), built in "
                  f"{result['report_build_s']} s; chromium ready in {result['load_to_ready_ms']:,} ms (plotly.js parsed "
                  f"at {result['plotly_parsed_ms']:,} ms), search {result['search_ms']} ms", flush=True)
    harness.write_json(args.out or harness.results_path("report", args.tag),
                       {"date": str(dt.date.today()), "max_samples": DEFAULT_MAX_SAMPLES,
                        "machine": "2 CPU cores, headless Debian chromium, software rendering", "results": results})


if __name__ == "__main__":
    main()
