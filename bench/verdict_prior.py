"""Is the judge's yes-leniency a prior that content-free calibration removes? Measured, for the verdict prompts.

On Chinese passages the judge says yes to most near-topic passages (context_precision: balanced accuracy
0.550 at P >= 0.5 while P(useful) ranks at AUROC 0.942; passage_relevance on RGB-zh: 0.56 at 0.5, AUROC
0.86). Contextual calibration (Zhao et al. 2021, "Calibrate Before Use") reads such a bias as the
model's prior for "yes": it asks the same prompt with content-free fields ("N/A", "", "[MASK]"), takes
P0 = the sigmoid of their mean log-odds, and subtracts that log-odds from every verdict, which is the same
as counting a verdict as yes when P >= P0. This script measures P0 for each verdict prompt and language,
then the balanced accuracy at P0 against that at 0.5, on the per-sample scores that bench/accuracy.py
committed (labels rebuilt from the same seeded slices). No label is used to choose P0.

    .venv/bin/python bench/verdict_prior.py            # ~1 min on 2 cores

Takes /tmp/localeval-model.lock like every model bench. Results: bench/results/verdict-prior-<date>.json.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from datetime import date
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from accuracy import SETS, balanced_accuracy, model_lock  # noqa: E402

from localeval.judge.kit import JudgeKit  # noqa: E402
from localeval.judge.options import JudgeOptions  # noqa: E402

FILLS = {"en": ("N/A", "", "[MASK]"), "zh": ("无", "", "[MASK]")}
#: prompt -> its fields, every one content-free
PROMPTS: dict[str, Callable[[str], dict[str, str]]] = {
    "context_useful": lambda f: {"question": f, "target": f, "target_kind": "reference", "context": f},
    "passage_relevant": lambda f: {"passage": f, "question": f},
    "verify_statement": lambda f: {"context": f, "statement": f, "question": f},
}
#: (results file, set, column, prompt whose verdicts the column thresholds)
COLUMNS = [
    ("accuracy-2026-11-24-default-context-precision-zh.json", "uhgeval-passages", "context_precision.p", "context_useful"),
    ("accuracy-2026-11-23-default-context-precision-before.json", "halueval-passages", "context_precision.p", "context_useful"),
    ("accuracy-2026-11-22-default-rgb-zh-100-question-last.json", "rgb-zh-passages", "passage_relevance", "passage_relevant"),
    ("accuracy-2026-11-22-default-rgb-zh-heldout-question-last.json", "rgb-zh-passages-heldout", "passage_relevance",
     "passage_relevant"),
    ("accuracy-2026-11-22-default-cranfield-60-question-last.json", "cranfield-passages", "passage_relevance", "passage_relevant"),
    ("accuracy-2026-11-24-default-faithbench-250.json", "faithbench", "faithfulness.min", "verify_statement"),
]


def log_odds(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def priors(judge: str | None) -> dict[str, dict[str, Any]]:
    out = {}
    with model_lock(), tempfile.TemporaryDirectory() as tmp:
        kit = JudgeKit(JudgeOptions(judge=judge, cache=str(Path(tmp) / "p0.sqlite")))
        for name, fill in PROMPTS.items():
            for lang, fills in FILLS.items():
                ps = [kit.judge.yes_probability(kit.prompt(name, lang, **fill(f)))[0] for f in fills]
                p0 = 1 / (1 + math.exp(-sum(map(log_odds, ps)) / len(ps)))
                out[f"{name}/{lang}"] = {"p_content_free": [round(p, 4) for p in ps], "p0": round(p0, 4)}
        kit.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judge", default=None)
    args = parser.parse_args()
    prior = priors(args.judge)
    rows = []
    for file, set_name, column, prompt in COLUMNS:
        saved = json.loads((REPO / "bench" / "results" / file).read_text(encoding="utf-8"))
        found = next(r for r in saved["rows"] if r["set"] == set_name and r["column"] == column and r["variant"] == "default")
        dev = SETS[set_name](saved["args"]["limit"], saved["args"]["seed"])
        ids = sorted(i for i in dev.labels if i in found["scores"])
        p0 = prior[f"{prompt}/{dev.lang}"]["p0"]
        rows.append({"set": set_name, "column": column, "prompt": f"{prompt}/{dev.lang}", "p0": p0, "n": len(ids),
                     "balanced_accuracy_at_0.5": round(balanced_accuracy(found["scores"], dev.labels, ids, 0.5), 3),
                     "balanced_accuracy_at_p0": round(balanced_accuracy(found["scores"], dev.labels, ids, p0), 3)})
    for name, value in prior.items():
        print(f"{name:24s} P(yes) on content-free fields {value['p_content_free']} -> P0 {value['p0']}")
    for row in rows:
        print(f"{row['set']:24s} {row['column']:20s} P0 {row['p0']:.3f}  balanced accuracy at 0.5 "
              f"{row['balanced_accuracy_at_0.5']:.3f}, at P0 {row['balanced_accuracy_at_p0']:.3f}")
    out = REPO / "bench" / "results" / f"verdict-prior-{date.today()}.json"
    out.write_text(json.dumps({"args": vars(args), "priors": prior, "rows": rows}, ensure_ascii=False, indent=1) + "\n",
                   encoding="utf-8")
    print(f"results in {out}")


if __name__ == "__main__":
    main()
