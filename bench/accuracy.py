"""How often the judge metrics agree with people, per dev set, metric and method variant.

One table: judge-vs-label agreement on the dev sets (bench/devsets.py), with seconds, judge calls and tokens
per sample beside it, so a method is chosen for its accuracy *and* its cost. Pair sets give pair accuracy
(ties count 1/2; the tie rate is reported), labelled rows balanced accuracy at 0.5 and at a cross-fitted
threshold and AUROC, graded ratings Spearman and Kendall.

Every row set is a seeded slice (--limit pairs or rows per set). Agreement runs share one judge cache
(--cache), so variants that ask the same question pay once and an interrupted run resumes; seconds and
tokens per sample come from separate runs of the first --timing samples with an empty cache. Every model
run holds the model lock. Results: bench/results/accuracy-<date>-<judge>[-<tag>].json; bench/ACCURACY.md
lists the command behind each committed file.

    .venv/bin/python bench/accuracy.py --limit 40                       # every set, default methods
    .venv/bin/python bench/accuracy.py --sets halueval --variants default,faith-sentences --limit 80
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import harness
from devsets import SETS, DevSet

from localeval import JudgeOptions, MetricOptions, evaluate
from localeval.stats.agreement import agreement, auroc, choose_threshold

#: Evaluation steps written by hand for the usefulness criterion (the shipped file has none).
HAND_STEPS = ["Work out what the person asking wants to know.",
              "Check whether the answer tells them that, and whether what it says is plausible and clear.",
              "Pick the level whose description fits best."]


def criteria_variants(judge: JudgeOptions) -> None:
    """Copies of the shipped usefulness and correctness criteria under other names, registered as metrics:
    with steps written by hand (usefulness), and with steps the judge writes once from the criterion, G-Eval's
    method (bench/prompt_variants/criterion-steps)."""
    import tomllib

    from localeval.judge import open_judge
    from localeval.judge.prompts import load_prompt
    from localeval.metrics.criteria import load_criteria, packaged_criteria, parse_criterion

    folder = Path(tempfile.mkdtemp(prefix="localeval-criteria-"))
    shipped = {p.stem: p.read_text(encoding="utf-8") for p in packaged_criteria()}
    prompt = load_prompt("criterion_steps", "en", harness.REPO / "bench" / "prompt_variants" / "criterion-steps")
    with harness.model_lock():
        writer = open_judge(judge)
        for name in ("usefulness", "correctness"):
            data = tomllib.loads(shipped[name])
            english = parse_criterion(shipped[name], name).wording["en"]
            written, _ = writer.json(prompt.render(criterion=english.criterion, levels=list(english.levels)))
            variants = {"judgesteps": written["steps"], **({"handsteps": HAND_STEPS} if name == "usefulness" else {})}
            for suffix, steps in variants.items():
                (folder / f"{name}_{suffix}.toml").write_text(_toml(
                    {**{k: v for k, v in data.items() if k not in ("steps", "zh")}, "name": f"{name}_{suffix}",
                     "steps": steps}), encoding="utf-8")
        writer.close()
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



# ---- method variants: metric option values (each run through localeval as a user would) -------------

VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "faith-sentences": {"faithfulness_statements": "sentences"},
    "faith-judge": {"faithfulness_statements": "judge"},
    "faith-both": {"faithfulness_statements": "both"},
    "faith-selected": {"faithfulness_evidence": "selected"},
    "faith-related": {"faithfulness_evidence": "related"},
    "faith-context": {"faithfulness_evidence": "context"},
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
    """Balanced accuracy at 0.5 and cross-fitted, and AUROC, all by localeval.stats.agreement."""
    ids = [i for i in labels if i in scores]
    if len({labels[i] for i in ids}) < 2:
        return {"n": len(ids), "balanced_accuracy": None, "auroc": None}
    auc = auroc([labels[i] for i in ids], [scores[i] for i in ids])
    return {"n": len(ids), "balanced_accuracy": balanced_accuracy(scores, labels, ids, 0.5), "auroc": auc,
            "balanced_accuracy_crossfit": crossfit(scores, labels, sorted(ids))}


def balanced_accuracy(scores: dict[str, float], labels: dict[str, int], ids: list[str], threshold: float) -> float:
    """localeval's balanced accuracy (localeval.stats.agreement) of the rows `ids` at `threshold`."""
    return agreement([labels[i] for i in ids], [scores[i] for i in ids], threshold).balanced_accuracy


def crossfit(scores: dict[str, float], labels: dict[str, int], ids: list[str]) -> float:
    """Balanced accuracy at a threshold the scores do not see: the rows split in two (alternate ids), the
    threshold `localeval calibrate` would choose on each half (choose_threshold) applied to the other, the two
    results averaged. For a score with no natural threshold (a likelihood), this is what a user gets by
    calibrating on their own labels first."""
    halves = (ids[0::2], ids[1::2])
    results = [balanced_accuracy(scores, labels, held,
                                 choose_threshold([labels[i] for i in fit], [scores[i] for i in fit]).threshold)
               for fit, held in (halves, halves[::-1])]
    return sum(results) / 2


def score(samples: list[dict[str, Any]], metric: str, variant: dict[str, Any], judge: JudgeOptions) -> tuple[Any, float]:
    with harness.model_lock():
        started = time.perf_counter()
        result = evaluate(samples, [metric], MetricOptions(judge=judge, **variant))
        return result, time.perf_counter() - started


def measure(dev: DevSet, metric: str, variant_name: str, args: Any) -> list[dict[str, Any]]:
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


def measure_ragas(dev: DevSet, args: Any) -> list[dict[str, Any]]:
    """Ragas' factual_correctness on the set's samples, with the same GGUF judge served by llama.cpp's server
    (harness.run_peer), one sample at a time; a sample that failed (an exception, NaN) has no
    score, and the pair it is in leaves the agreement, counted in `failed`."""
    from localeval import models
    from localeval.settings import physical_cores

    key = tuple(s["id"] for s in dev.samples)
    if key not in RAGAS_RUNS:  # the RAGChecker sets share their samples: Ragas scores them once
        judge = models.resolve(args.judge, "judge")
        embedder = models.resolve(None, "embedder")
        with harness.model_lock(), tempfile.TemporaryDirectory() as tmp:
            RAGAS_RUNS[key] = harness.run_peer("ragas", dev.samples, judge, embedder, 4096,
                                               args.threads or physical_cores(), Path(tmp), metrics="factual_correctness")
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
    parser = harness.parser(__doc__, "judge", "limit", "threads", "parallel", "seed", "cache", "prompts", "tag",
                            cache=str(harness.CACHE / "accuracy.sqlite"))
    parser.add_argument("--sets", default=",".join(SETS), help=f"comma-separated, from: {', '.join(SETS)}")
    parser.add_argument("--metrics", default=None, help="only these metrics (default: each set's own)")
    parser.add_argument("--variants", default="default", help=f"comma-separated, from: {', '.join(VARIANTS)}")
    parser.add_argument("--timing", type=int, default=6, help="samples timed with an empty cache (0: none)")
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
    harness.write_json(harness.results_path("accuracy", harness.judge_label(args.judge), args.tag),
                       {"args": vars(args), "sets": sets,
                        "variants": {v: variant_options(v) for v in args.variants.split(",")},
                        "rows": rows, "table": table(rows)})


if __name__ == "__main__":
    main()

