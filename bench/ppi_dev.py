"""Prediction-powered estimates on the ARES gold dev set: 100 human labels correct the judge on the rest.

The dev file (ares_gold_dev.jsonl in the dev-data folder, read only) holds 206 samples with human 0/1 labels for
context_relevance, answer_faithfulness and answer_relevance. A seeded split takes `--n-labels` samples
as the labelled set; the rest play the unlabelled run, whose true label mean is known here and printed
beside the estimate. Per metric: PPI++ estimate and 95% interval, the labels-only interval, the naive
judge mean, and the true label mean of the rest. `--repeats R` also redoes the split R times and counts
how often each interval covers the rest's true mean (a check on one small data set, not a proof).

Judge scores come from a run of `localeval score` on the dev file (`--run RUN_DIR`, ids matching). Until
the judge metrics exist, `--proxy` scores every sample with a deterministic classical stand-in and says
so in its output; the pipeline (samples.jsonl → labels file → calibration) is the product's own. No model
runs; it prints its figures and writes no results file.

    .venv/bin/python bench/ppi_dev.py --proxy
    .venv/bin/python bench/ppi_dev.py --run out/ares-dev --label-column faithfulness=answer_faithfulness
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from statistics import NormalDist

import harness
import numpy as np

from localeval.data.labels import load_labels
from localeval.results.runs import load_run
from localeval.settings import parse_pairs
from localeval.stats.calibration import calibration_report
from localeval.stats.ppi import ppi_mean_ci

LABEL_KEYS = ("context_relevance", "answer_faithfulness", "answer_relevance")
#: Proxy column → (reference text, covering text): ROUGE-L recall = LCS / tokens(reference).
PROXIES = {
    "context_relevance": ("question", "contexts"),   # how much of the question the passage covers
    "answer_faithfulness": ("answer", "contexts"),   # how much of the answer is found in the passage
    "answer_relevance": ("question", "answer"),      # how much of the question the answer echoes
}


def proxy_run(gold: list[dict], folder: Path) -> Path:
    """Write a RUN_DIR like `localeval score` would, with ROUGE-L-recall proxies in place of judge scores."""
    from rouge_score import rouge_scorer

    from localeval.metrics.rouge import CJKTokenizer

    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=CJKTokenizer())
    with (folder / "samples.jsonl").open("w", encoding="utf-8") as handle:
        for record in gold:
            texts = {"question": record["question"], "answer": record.get("answer") or "",
                     "contexts": "\n".join(c if isinstance(c, str) else c["text"] for c in record["contexts"])}
            metrics = {column: scorer.score(texts[ref], texts[cover])["rougeL"].recall
                       for column, (ref, cover) in PROXIES.items()}
            handle.write(json.dumps({"id": record["id"], "metrics": metrics, "details": {}, "skipped": {}}) + "\n")
    return folder


def main() -> int:
    parser = harness.parser(__doc__, "seed")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--run", type=Path, help="RUN_DIR from `localeval score` on the dev file (judge metrics)")
    source.add_argument("--proxy", action="store_true", help="use ROUGE-L-recall proxies instead of a judge (a stand-in)")
    parser.add_argument("--gold", type=Path, default=harness.dev_data("ares_gold_dev.jsonl"))
    parser.add_argument("--n-labels", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=200, help="random splits for the coverage check (0: none)")
    parser.add_argument("--label-column", action="append", default=[], metavar="COLUMN=KEY",
                        help="run column → gold label key, e.g. faithfulness=answer_faithfulness")
    args = parser.parse_args()

    gold = harness.read_jsonl(args.gold)
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = proxy_run(gold, Path(tmp)) if args.proxy else args.run
        run = load_run(run_dir)
        rng = np.random.default_rng(args.seed)
        order = rng.permutation(len(gold))
        labelled, rest = order[: args.n_labels], order[args.n_labels:]
        labels_path = Path(tmp) / "labels.jsonl"
        with labels_path.open("w", encoding="utf-8") as handle:
            for i in labelled:
                handle.write(json.dumps({"id": gold[i]["id"], **{k: gold[i][k] for k in LABEL_KEYS}}) + "\n")
        mapping = parse_pairs(args.label_column, "--label-column", "COLUMN=KEY")
        labels = load_labels(labels_path, run, mapping)
        report = calibration_report(run, labels)

    key_of = {column: mapping.get(column, column) for column in report}
    print(f"ARES gold dev: {len(gold)} samples, {len(labelled)} labelled (seed {args.seed}), {len(rest)} unlabelled")
    if args.proxy:
        print("JUDGE = PROXY: ROUGE-L recall (" + "; ".join(f"{c}: {r} covered by {v}" for c, (r, v) in PROXIES.items())
              + "), not an LLM judge; these numbers exercise the PPI pipeline, they do not measure a judge.")
    print(f"\n{'metric':<22}{'estimate':>9}  {'PPI 95% CI':<18}{'labels-only 95% CI':<20}{'lambda':>7}"
          f"{'naive':>8}{'true(rest)':>11}  {'bacc@0.5':>8} {'t*':>6} {'bacc@t*':>8}")
    for column, entry in report.items():
        if "error" in entry or "error" in entry["ppi"]:
            print(f"{column:<22}{entry.get('error') or entry['ppi']['error']}")
            continue
        p, a = entry["ppi"], entry["agreement"]
        truth = np.mean([gold[i][key_of[column]] for i in rest])
        print(f"{column:<22}{p['estimate']:>9.4f}  [{p['ci'][0]:.4f}, {p['ci'][1]:.4f}]  "
              f"[{p['classical_ci'][0]:.4f}, {p['classical_ci'][1]:.4f}]    {p['lambda']:>7.3f}"
              f"{p['naive_judge_mean']:>8.4f}{truth:>11.4f}  {a['at_0.5']['balanced_accuracy']:>8.4f} "
              f"{a['threshold']:>6.3f} {a['at_chosen']['balanced_accuracy']:>8.4f}")
    if args.repeats:
        coverage_check(run, gold, key_of, args.n_labels, args.repeats, args.seed)
    return 0


def coverage_check(run, gold: list[dict], key_of: dict[str, str], n_labels: int, repeats: int, seed: int) -> None:
    """Over many random splits: how often each interval covers the unlabelled part's true label mean."""
    rng = np.random.default_rng(seed + 1)
    print(f"\nover {repeats} random splits ({n_labels} labelled): coverage of the rest's true mean, mean width")
    for column, key in key_of.items():
        f = run.values(column, [str(r["id"]) for r in gold])
        y = np.array([r[key] for r in gold], dtype=float)
        ppi_hits, classical_hits, ppi_w, classical_w = 0, 0, [], []
        for _ in range(repeats):
            order = rng.permutation(len(gold))
            lab, rest = order[:n_labels], order[n_labels:]
            result = ppi_mean_ci(y[lab], f[lab], f[rest])
            truth = y[rest].mean()
            ppi_hits += result.ppi.low <= truth <= result.ppi.high
            classical_hits += result.classical.low <= truth <= result.classical.high
            ppi_w.append(result.ppi.width)
            classical_w.append(result.classical.width)
        print(f"  {column:<22} PPI {ppi_hits / repeats:.3f} (width {np.mean(ppi_w):.4f})   "
              f"labels-only {classical_hits / repeats:.3f} (width {np.mean(classical_w):.4f})")
    # The intervals target the population mean; the rest's mean is itself a sample of N, so even an exact
    # interval covers it only with probability 2Φ(z / √(1 + n/N)) − 1 (≈ 0.84 for n = 100, N = 106).
    n_rest = len(gold) - n_labels
    expected = 2 * NormalDist().cdf(NormalDist().inv_cdf(0.975) / np.sqrt(1 + n_labels / n_rest)) - 1
    print(f"  (an exact 95% interval for the population mean covers the mean of {n_rest} other samples only "
          f"~{expected:.2f} of the time)")


if __name__ == "__main__":
    raise SystemExit(main())
