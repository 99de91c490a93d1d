"""Does `grounding` see wrong relations when each answer sentence is read against its own evidence? Measured.

`grounding` reads the answer after all the passages, so a word the passages hold anywhere is expected,
even where the answer puts it in a wrong relation ("Aldous Huxley wrote Nineteen Eighty-Four" over passages
naming Huxley as another novel's author). About half of FaithBench's Unwanted spans are such intrinsic
errors. Sentence-level checkers (SummaC, AlignScore) read each sentence against the few source sentences
that match it, so a word copied from elsewhere in the source is no longer at hand. This reads each answer
sentence, after the answer so far, against the 3 passage sentences faithfulness's evidence selection picks
for it (`select_evidence`: most shared idf-weighted words), keeps that sentence's token log-probabilities,
and aggregates all of them as `grounding` does (the lowest tenth). Compared with `grounding` on the same
rows (bench/accuracy.py's committed per-row scores).

    .venv/bin/python bench/grounding_evidence.py          # ~20 min on 2 cores

Takes /tmp/localeval-model.lock like every model bench. Results: bench/results/grounding-evidence-<date>.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from accuracy import DevSet, faithbench, halueval, label_agreement, model_lock, pair_agreement, uhgeval  # noqa: E402

from localeval import models  # noqa: E402
from localeval.judge.backend import ContinuationCall  # noqa: E402
from localeval.judge.kit import JudgeKit  # noqa: E402
from localeval.judge.llama_inprocess import LlamaCppBackend  # noqa: E402
from localeval.judge.options import JudgeOptions  # noqa: E402
from localeval.metrics.grounding import scores  # noqa: E402
from localeval.metrics.steps import EVIDENCE_SENTENCES, select_evidence  # noqa: E402
from localeval.settings import physical_cores  # noqa: E402
from localeval.text import sentence_spans, split_sentences  # noqa: E402

RESULTS = REPO / "bench" / "results"
#: bench/accuracy.py's runs of the default `grounding` on the same seeded rows
BASELINES = {"faithbench": "accuracy-2026-11-24-default-grounding-faithbench-250.json",
             "halueval": "accuracy-2026-11-24-default-grounding-pairs.json",
             "uhgeval": "accuracy-2026-11-24-default-grounding-pairs.json"}


def sentence_logprobs(backend: LlamaCppBackend, kit: JudgeKit, dev: DevSet, sample: dict[str, Any]) -> list[float]:
    """Each answer sentence's token log-probabilities, read after the answer so far, over its own evidence."""
    answer = sample["answer"].strip()
    evidence_pool = [s for text in sample["contexts"] for s in split_sentences(text)]
    out: list[float] = []
    for start, end in sentence_spans(answer) or [(0, len(answer))]:
        evidence = select_evidence(answer[start:end], evidence_pool, EVIDENCE_SENTENCES)
        prompt = kit.prompt("grounding", dev.lang, question=sample["question"], context=evidence)
        reply = backend._continuation(ContinuationCall(backend.render(prompt.messages), answer[:end], "grounding"))
        before = backend.count_tokens(answer[:start]) if answer[:start].strip() else 0
        out.extend(reply.token_logprobs[before:] or reply.token_logprobs[-1:])
    return out


def baseline(dev: DevSet) -> dict[str, float]:
    rows = json.loads((RESULTS / BASELINES[dev.name]).read_text(encoding="utf-8"))["rows"]
    return next(r for r in rows if r["set"] == dev.name and r["column"] == "grounding")["scores"]


def agreement(dev: DevSet, values: dict[str, float]) -> dict[str, Any]:
    if dev.labels:
        found = label_agreement(values, dev.labels)
        return {"auroc": round(found["auroc"], 3), "bacc_crossfit": round(found["balanced_accuracy_crossfit"], 3)}
    found = pair_agreement(values, dev.pairs)
    return {"pair_accuracy": round(found["pair_accuracy"], 3), "ties": round(found["tie_rate"], 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judge", default=None)
    args = parser.parse_args()
    path = models.resolve(args.judge, "judge")
    results: dict[str, Any] = {"args": vars(args), "judge": path.name, "evidence_sentences": EVIDENCE_SENTENCES, "sets": {}}
    with model_lock():
        backend = LlamaCppBackend(path, "", n_ctx=4096, n_threads=physical_cores())
        kit = JudgeKit(JudgeOptions())
        for dev in (faithbench(250, 0), halueval(40, 0), uhgeval(40, 0)):
            started = time.perf_counter()
            values = {s["id"]: scores(sentence_logprobs(backend, kit, dev, s))["grounding"] for s in dev.samples}
            seconds = (time.perf_counter() - started) / len(dev.samples)
            entry = {"samples": len(dev.samples), "seconds_per_sample": round(seconds, 2),
                     "selected_evidence": agreement(dev, values), "grounding": agreement(dev, baseline(dev)),
                     "scores": values}
            results["sets"][dev.name] = entry
            print(f"{dev.name}: selected evidence {entry['selected_evidence']}, grounding {entry['grounding']}, "
                  f"{seconds:.2f} s per answer")
    out = RESULTS / f"grounding-evidence-{date.today()}.json"
    out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"results in {out}")


if __name__ == "__main__":
    main()
