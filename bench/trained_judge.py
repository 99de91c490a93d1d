"""A trained classifier judge against the GGUF judge, ARES's protocol: the classifier learns from
`localeval generate` on a corpus alone and is measured on human labels it never sees.

- Cranfield passage relevance: generate on the Cranfield abstracts (the qrels are not read), train the
  context_relevance judgement, then score `passage_relevance` on the dev pairs of bench/devsets.py
  (`cranfield-passages`: a query with an abstract judged relevant with grade >= 3, or the unjudged abstract
  sharing most words with it) with the classifier and with the GGUF judge: AUROC against the qrels. Also
  on `cranfield-graded`, where every abstract was judged (graded 3-4 against graded 1 for one query):
  pair accuracy and AUROC.
- HaluEval faithfulness: generate --contradictions on the HaluEval knowledge passages, train the
  answer_faithfulness judgement, then score `faithfulness` on the HaluEval dev pairs (the right answer vs the
  hallucinated one, same passage) with each: pair agreement and AUROC.
- Distillation (--distill): a third HaluEval classifier learns from the generated pairs plus the GGUF
  judge's faithfulness verdicts on the dev rows that are not measured (their labels unread: the user's own
  unlabelled samples, ARES's and `localeval train --distill`'s second source), then is measured the same way.
- Speed: samples per second of each metric with each judge on an empty cache (the GGUF judge on the first
  --timing rows), and the seconds training took, with its pairs and held-out figures; each classifier is
  trained for the judgement it is measured on, and one more for all three on --time-pairs pairs drawn from
  both generated sets (the training-time figure).

Generated sets and classifiers are kept under --work, so a rerun only measures again (delete it to
regenerate); a classifier is trained again when its pairs or options change. Prints a table and writes
bench/results/trained-judge-DATE.json.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import harness
import numpy as np
from accuracy import label_agreement, pair_agreement, score
from devsets import SETS

from localeval import JudgeOptions, MetricOptions
from localeval.classifier import folder as classifier_folder
from localeval.classifier.folder import MANIFEST
from localeval.classifier.pairs import Pair, data_sha256, distilled_pairs, read_pairs
from localeval.classifier.training import AUTO, TrainOptions, behind_teacher, near_chance, train
from localeval.pipeline import score_file
from localeval.testset.generation import GenerateOptions, generate

WORK = harness.CACHE / "trained-judge"


def halueval_corpus(path: Path) -> Path:
    """The HaluEval dev knowledge passages as a corpus, one document per question pair."""
    rows = harness.read_jsonl(harness.dev_data("halueval_qa_dev.jsonl"))
    docs = {row["pair_id"]: " ".join(row["contexts"]) for row in rows}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"id": str(k), "text": v}) + "\n" for k, v in sorted(docs.items())),
                    encoding="utf-8")
    return path


def generated(corpus: Path, out: Path, n: int, contradictions: bool, judge: JudgeOptions) -> dict[str, Any]:
    if (out / "generation.json").is_file():
        return json.loads((out / "generation.json").read_text(encoding="utf-8"))
    with harness.model_lock():
        return generate(corpus, out, GenerateOptions(n=n, contradictions=contradictions, judge=judge), progress=True)


def trained(pairs: list[Pair], out: Path, args: Any, judgements: tuple[str, ...] | None) -> dict[str, Any]:
    """Train, unless `out` holds a classifier trained from the same pairs with the same options (then its
    manifest's figures, the seconds its training took included)."""
    options = TrainOptions(judgements=judgements, epochs=args.epochs, layers=args.layers, threads=args.threads)
    kept = out / MANIFEST
    manifest = json.loads(kept.read_text(encoding="utf-8")) if kept.is_file() else {}
    wanted = json.loads(json.dumps(options.recorded()))  # as the manifest holds them (a tuple is a list there)
    if (manifest.get("data_sha256") == data_sha256(pairs) and manifest.get("options") == wanted
            and manifest.get("version") == classifier_folder.FORMAT_VERSION):
        seconds = sum(v["seconds"] for v in manifest["judgements"].values())
    else:
        started = time.perf_counter()
        with harness.model_lock():
            manifest = train(pairs, out, options, progress=True)
        seconds = time.perf_counter() - started
    warnings = near_chance(manifest) + behind_teacher(manifest)  # what `localeval train` tells a user
    for line in warnings:
        print(f"warning: {line}", flush=True)
    return {"pairs": sum(p.judgement in manifest["judgements"] for p in pairs), "seconds": round(seconds, 1),
            "judgements": {k: {key: v[key] for key in ("pairs", "layers", "held_out", "teacher", "student", "seconds")
                               if key in v} for k, v in manifest["judgements"].items()},
            "warnings": warnings}


def unlabelled_halueval(measured: set[str], out: Path, judge: JudgeOptions) -> Path:
    """The HaluEval dev rows whose pairs are not among the measured ones, without their labels, scored for
    faithfulness by the GGUF judge into `out` (kept: a rerun reads it)."""
    if (out / "summary.json").is_file():
        return out
    rows = harness.read_jsonl(harness.dev_data("halueval_qa_dev.jsonl"))
    pairs = {row["pair_id"] for row in rows if row["id"] in measured}
    unlabelled = out.parent / f"{out.name}.jsonl"
    unlabelled.write_text("".join(json.dumps({k: row[k] for k in ("id", "question", "answer", "contexts")}) + "\n"
                                  for row in rows if row["pair_id"] not in pairs), encoding="utf-8")
    with harness.model_lock():
        score_file(unlabelled, out, ["faithfulness"], MetricOptions(judge=judge), progress=True)
    return out


def scored(samples: list[dict[str, Any]], metric: str, judge: JudgeOptions) -> tuple[dict[str, float], float, str]:
    """Each sample's value of `metric`, the seconds the run took (accuracy.py's timed run), and the
    classifier's precision (bf16 or fp32; "" for the GGUF judge)."""
    result, seconds = score(samples, metric, {}, judge)
    precision = result.summary["judge"].get("classifier", {}).get("precision", "")
    return {row["id"]: row["metrics"][metric] for row in result.rows if metric in row["metrics"]}, seconds, precision


def rate(samples: list[dict[str, Any]], metric: str, judge: JudgeOptions) -> tuple[float, float]:
    """Samples per second once the judge is loaded (the extra seconds of all rows over one row, on empty
    caches), and end to end with the load."""
    with tempfile.TemporaryDirectory() as tmp:
        _, one, _ = scored(samples[:1], metric, replace(judge, cache=str(Path(tmp) / "one.sqlite")))
        _, every, _ = scored(samples, metric, replace(judge, cache=str(Path(tmp) / "all.sqlite")))
    return (len(samples) - 1) / (every - one), len(samples) / every


def compare(name: str, metric: str, classifier: Path, args: Any, judge: JudgeOptions,
            as_judge: str = "classifier", gguf: bool = True) -> list[dict[str, Any]]:
    """The classifier's figures on the dev set, named `as_judge`, and (with `gguf`) the GGUF judge's."""
    dev = SETS[name](args.limit, args.seed)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        trained_judge = replace(judge, classifier=str(classifier), cache=str(Path(tmp) / "c.sqlite"))
        judges = [(as_judge, trained_judge, dev.samples)]
        if gguf:
            judges.append(("gguf", judge, dev.samples[: args.timing]))
        for who, options, timed in judges:
            scores, _, precision = scored(dev.samples, metric, options)
            loaded, with_load = rate(timed, metric, options)
            labels = dev.labels or {i: label for pair in dev.pairs for i, label in zip(pair, (1, 0))}
            figures = {**label_agreement(scores, labels), **(pair_agreement(scores, dev.pairs) if dev.pairs else {})}
            out.append({"set": dev.name, "metric": metric, "judge": who,
                        **({"precision": precision} if precision else {}), **figures, "timed_samples": len(timed),
                        "samples_per_second": round(loaded, 3), "samples_per_second_with_load": round(with_load, 3)})
    return out


def main() -> None:
    parser = harness.parser(__doc__, "judge", "threads", "limit", "seed", "tag", limit=60)
    parser.add_argument("--work", type=Path, default=WORK, help="generated sets and classifiers (kept)")
    parser.add_argument("--cranfield-n", type=int, default=320, help="Cranfield chunks to generate from")
    parser.add_argument("--halueval-n", type=int, default=200, help="HaluEval passages to generate from")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--layers", type=lambda v: v if v == AUTO else int(v), default=TrainOptions.layers,
                        help="the classifiers' layers (localeval train --layers: auto, or 1-6; 6: no distillation)")
    parser.add_argument("--time-pairs", type=int, default=2000, help="pairs of the training-time run (0: none)")
    parser.add_argument("--timing", type=int, default=16, help="rows the GGUF judge is timed on (empty cache)")
    parser.add_argument("--distill", action="store_true",
                        help="also train and measure a HaluEval classifier with the GGUF judge's verdicts on the "
                             "unmeasured dev rows added to its pairs")
    parser.add_argument("--fp32", action="store_true",
                        help="score with the classifier in float32 even where localeval would pick bfloat16 "
                             "(a CPU with AMX; to compare)")
    args = parser.parse_args()
    if args.fp32:
        classifier_folder._native_bf16 = lambda: False
    judge = JudgeOptions(judge=args.judge, n_threads=args.threads, cache=str(harness.CACHE / "accuracy.sqlite"))
    gen_judge = replace(judge, cache=str(harness.CACHE / "trained-judge.sqlite"))
    work: Path = args.work
    reports = {
        "cranfield": generated(harness.dev_data("cranfield", "corpus.jsonl"), work / "cranfield-gen", args.cranfield_n,
                               False, gen_judge),
        "halueval": generated(halueval_corpus(work / "halueval-corpus.jsonl"), work / "halueval-gen", args.halueval_n,
                              True, gen_judge),
    }
    pairs = {name: read_pairs([work / f"{name}-gen"], seed=0) for name in reports}
    training = {"cranfield": trained(pairs["cranfield"], work / "cranfield-classifier", args, ("context_relevance",)),
                "halueval": trained(pairs["halueval"], work / "halueval-classifier", args, ("answer_faithfulness",))}
    if args.distill:  # the measured pairs' rows are left out of what the judge scores for it
        measured = {sample["id"] for sample in SETS["halueval"](args.limit, args.seed).samples}
        run = unlabelled_halueval(measured, work / "halueval-unlabelled-run", judge)
        distilled = [p for p in distilled_pairs(run) if p.judgement == "answer_faithfulness"]
        figures = trained(pairs["halueval"] + distilled, work / "halueval-distilled-classifier", args,
                          ("answer_faithfulness",))
        training["halueval, distilled"] = {**figures, "distilled_pairs": len(distilled)}
    if args.time_pairs:  # every judgement from both sets, cut to --time-pairs pairs: the training time figure
        both = pairs["cranfield"] + pairs["halueval"]
        chosen = [both[int(i)] for i in np.random.default_rng(0).permutation(len(both))[: args.time_pairs]]
        training["both, all judgements"] = trained(chosen, work / "timing-classifier", args, None)
    rows = (compare("cranfield-passages", "passage_relevance", work / "cranfield-classifier", args, judge)
            + compare("cranfield-graded", "passage_relevance", work / "cranfield-classifier", args, judge)
            + compare("halueval", "faithfulness", work / "halueval-classifier", args, judge))
    if args.distill:
        rows += compare("halueval", "faithfulness", work / "halueval-distilled-classifier", args, judge,
                        as_judge="classifier, distilled", gguf=False)
    print(f"{'set':<20} {'metric':<18} {'judge':<22} {'n':>4} {'AUROC':>6} {'pairs':>6} {'samples/s':>10}")
    for row in rows:
        pairs = f"{row['pair_accuracy']:.3f}" if row.get("pair_accuracy") is not None else "-"
        print(f"{row['set']:<20} {row['metric']:<18} {row['judge']:<22} {row['n']:>4} {row['auroc']:>6.3f} "
              f"{pairs:>6} {row['samples_per_second']:>10.2f}")
    for name, figures in training.items():
        print(f"training on {name}: {figures['pairs']} pairs, {figures['seconds']} s; "
              + "; ".join(f"{k}: held-out accuracy {v['held_out']['accuracy']}, AUROC {v['held_out']['auroc']}"
                          for k, v in figures["judgements"].items()))
    harness.write_json(harness.results_path("trained-judge", args.tag),
                       {"args": {k: str(v) for k, v in vars(args).items()}, "generation": reports,
                        "training": training, "rows": rows})


if __name__ == "__main__":
    main()
