"""RAGChecker's own scores, as its authors published them, on the dev pairs that bench/accuracy.py scores.

RAGChecker's repository publishes the run behind its meta-evaluation (data/meta_evaluation/
baseline_ragchecker.json: its precision, recall and F1 of every answer of the 280 human pairs, with the large
judge of its paper). This reads that file (nothing is downloaded: pass the path of a copy), finds the dev
pairs among its answers, and prints the same pair accuracy bench/accuracy.py gives localeval's
`answer_correctness`, so the two sit in one table: what the method reaches with a large judge, and what the
1.5B judge reaches with it.

    .venv/bin/python bench/ragchecker_published.py --published /path/to/baseline_ragchecker.json
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import harness
from accuracy import pair_agreement
from devsets import SETS

#: RAGChecker's names for its three overall metrics, and localeval's for the same.
COLUMNS = {"correctness_label": "precision", "completeness_label": "recall", "overall_label": "F1"}


def _key(question: str, first: str, second: str) -> tuple[str, str, str]:
    return tuple(" ".join(text.split()) for text in (question, first, second))  # type: ignore[return-value]


def published_scores(path: Path) -> dict[str, dict[str, float]]:
    """RAGChecker's score of each dev answer, by localeval's sample id (`<pair id>-1`, `-2`), per metric."""
    published = {}
    for item in json.loads(path.read_text(encoding="utf-8")):
        first, second = item["model1"], item["model2"]
        published[_key(item["query"], first["response"], second["response"])] = (first["ragchecker"], second["ragchecker"])
    scores: dict[str, dict[str, float]] = {metric: {} for metric in COLUMNS}
    for row in harness.read_jsonl(harness.dev_data("ragchecker_pairs_dev.jsonl")):
        found = published.get(_key(row["question"], row["answer_1"], row["answer_2"]))
        swapped = published.get(_key(row["question"], row["answer_2"], row["answer_1"]))
        if found is None and swapped is not None:
            found = swapped[::-1]
        if found is None:
            continue
        for metric in COLUMNS:
            for n, answer in enumerate(found, 1):
                if answer.get(metric) is not None and not math.isnan(answer[metric]):  # no score: out of the pair
                    scores[metric][f"{row['id']}-{n}"] = answer[metric]
    return scores


def main() -> None:
    parser = harness.parser(__doc__, "tag")
    parser.add_argument("--published", type=Path, required=True, help="RAGChecker's baseline_ragchecker.json")
    args = parser.parse_args()
    scores = published_scores(args.published)
    rows = []
    print("| set (non-tied pairs) | RAGChecker precision | recall | F1 | dev answers found |\n|---|---|---|---|---|")
    for name in ("ragchecker-correctness", "ragchecker-completeness", "ragchecker-overall"):
        dev = SETS[name](80, 0)
        found = {metric: pair_agreement(scores[metric], dev.pairs) for metric in COLUMNS}
        rows += [{"set": name, "metric": f"ragchecker:{metric}", **figures} for metric, figures in found.items()]
        cells = ["-" if found[m]["pair_accuracy"] is None else f"{found[m]['pair_accuracy']:.3f}" for m in COLUMNS]
        print(f"| {name} ({found['overall_label']['n']}) | {' | '.join(cells)} | "
              f"{len(scores['overall_label'])} of {len(dev.samples)} |")
    harness.write_json(harness.results_path("accuracy", "ragchecker-published", args.tag),
                       {"source": "amazon-science/RAGChecker data/meta_evaluation/baseline_ragchecker.json",
                        "rows": rows})


if __name__ == "__main__":
    main()
