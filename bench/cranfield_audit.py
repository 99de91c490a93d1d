"""Cranfield's passage pairs read again by two readers: how much of `cranfield-passages`' low AUROC is its
labels rather than its judges.

`cranfield-passages` (bench/devsets.py) pairs a query with an abstract people judged relevant (grade 3 or
4), or with the abstract nobody judged that shares most words with the query, taken as irrelevant; some of
those abstracts are plainly on the query's topic. So the 60 rows trained_judge.py measures (--limit 60,
seed 0) were graded 0-3 on Cranfield's scale by two readers who saw neither the labels nor any score nor
each other's grades, each in its own shuffled order: two helper agents running Claude (Anthropic's large
language model), not people, on 2026-11-27. Each was told to act as an aeronautics relevance assessor,
to read every abstract in full and to judge by reading, not by shared words, on this scale: 3 a complete
or high-value answer, the paper is directly about what the query asks; 2 useful, a substantial part of
the query or methods and background clearly on its topic; 1 marginal, the same broad area, of minimum
interest; 0 not relevant, a different problem even if it shares words. Their grades are below.

Prints, for the qrels, each reader and each judge, the AUROC against the qrels label and against each
reader's grade read as relevant at 2 or more and at 3; and how far the readers agree. Writes
bench/results/cranfield-audit-DATE.json. The classifier is the one trained_judge.py trains (--classifier;
run that first), and the GGUF judge's scores come from the accuracy cache it fills.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import harness
from accuracy import label_agreement
from devsets import SETS
from scipy.stats import spearmanr
from trained_judge import WORK, scored

from localeval import JudgeOptions
from localeval.classifier.folder import ClassifierError, check_classifier

#: sample id (query-abstract) -> (reader A's grade, reader B's grade), 0-3.
GRADES: dict[str, tuple[int, int]] = {
    "1-1268": (0, 0), "2-792": (1, 0), "12-86": (2, 1), "14-974": (0, 0), "23-798": (1, 1), "24-262": (0, 0),
    "25-121": (0, 0), "32-752": (3, 3), "34-252": (3, 3), "36-169": (2, 2), "38-89": (1, 0), "40-554": (0, 0),
    "43-469": (2, 3), "45-570": (1, 1), "48-439": (3, 3), "51-329": (0, 0), "56-753": (3, 3), "57-894": (1, 1),
    "59-292": (1, 1), "64-391": (1, 1), "69-458": (2, 1), "72-992": (0, 0), "73-572": (2, 1), "83-97": (0, 0),
    "87-606": (0, 0), "89-794": (2, 2), "94-329": (2, 2), "101-818": (2, 2), "111-15": (1, 1),
    "118-923": (3, 3), "121-891": (3, 2), "123-917": (0, 0), "126-1288": (3, 3), "127-164": (0, 0),
    "129-73": (0, 0), "138-764": (1, 1), "139-1031": (1, 0), "142-1042": (1, 1), "152-94": (0, 0),
    "157-1151": (2, 2), "161-329": (0, 0), "162-111": (2, 2), "168-410": (0, 0), "169-774": (2, 2),
    "170-238": (3, 3), "171-252": (1, 1), "172-527": (3, 3), "178-591": (3, 3), "183-798": (0, 0),
    "188-728": (1, 1), "189-767": (3, 2), "191-894": (1, 1), "192-641": (3, 3), "194-839": (1, 1),
    "200-1053": (2, 2), "209-1356": (0, 0), "212-1178": (3, 3), "213-888": (2, 2), "219-992": (0, 0),
    "225-1379": (1, 1),
}
#: The grades that read as relevant: useful or better, and high-value (as the qrels' grade 3 or 4).
RELEVANT = (2, 3)


def main() -> None:
    parser = harness.parser(__doc__, "judge", "threads", "tag")
    parser.add_argument("--classifier", type=Path, default=WORK / "cranfield-classifier",
                        help="the classifier trained_judge.py trained on Cranfield")
    args = parser.parse_args()
    try:
        check_classifier(args.classifier)
    except ClassifierError as exc:
        raise SystemExit(f"{exc}\nrun bench/trained_judge.py first: it trains the Cranfield classifier") from None
    dev = SETS["cranfield-passages"](60, 0)
    if set(GRADES) != {sample["id"] for sample in dev.samples}:
        raise SystemExit("cranfield-passages no longer draws the rows that were graded: the grades do not apply")
    judge = JudgeOptions(judge=args.judge, n_threads=args.threads, cache=str(harness.CACHE / "accuracy.sqlite"))
    trained = replace(judge, classifier=str(args.classifier), cache=str(harness.CACHE / "cranfield-audit.sqlite"))
    with harness.model_lock():
        scores = {"gguf": scored(dev.samples, "passage_relevance", judge)[0],
                  "classifier": scored(dev.samples, "passage_relevance", trained)[0]}
    readers = {name: {i: grades[k] for i, grades in GRADES.items()} for k, name in enumerate(("reader A", "reader B"))}
    truths = {"qrels": dev.labels, **{f"{name} >= {bar}": {i: int(g >= bar) for i, g in grades.items()}
                                      for bar in RELEVANT for name, grades in readers.items()}}
    rows = [{"scored_by": who, **{truth: label_agreement({i: float(v) for i, v in values.items()}, labels)["auroc"]
                                  for truth, labels in truths.items()}}
            for who, values in {**{"qrels": dev.labels}, **readers, **scores}.items()]
    ids = sorted(GRADES)
    a, b = ([readers[name][i] for i in ids] for name in readers)
    negatives = [i for i in ids if dev.labels[i] == 0]
    agreement = {"spearman": float(spearmanr(a, b).statistic),
                 "same_side_of_2": sum((x >= 2) == (y >= 2) for x, y in zip(a, b)),
                 "negatives": len(negatives),
                 **{f"negatives_both_readers_{bar}_or_more": sum(min(GRADES[i]) >= bar for i in negatives)
                    for bar in RELEVANT}}
    print(f"{'scored by':<12}" + "".join(f"{truth:>15}" for truth in truths))
    for row in rows:
        print(f"{row['scored_by']:<12}" + "".join(f"{row[t]:>15.3f}" for t in truths))
    print(f"readers: Spearman {agreement['spearman']:.3f}, the same side of 2 on {agreement['same_side_of_2']} of "
          f"{len(ids)}; of the {len(negatives)} unjudged 'negatives', both graded "
          + " and ".join(f"{agreement[f'negatives_both_readers_{bar}_or_more']} at {bar}+" for bar in RELEVANT))
    harness.write_json(harness.results_path("cranfield-audit", args.tag),
                       {"args": {k: str(v) for k, v in vars(args).items()}, "rows": rows, "readers": agreement,
                        "grades": GRADES, "labels": dev.labels})


if __name__ == "__main__":
    main()
