"""The Ragas half of bench/ragas_compare.py; runs inside bench/.venv-ragas, never in localeval's venv.

It scores the slice with Ragas 0.4's own metric classes (ragas.metrics.collections: Faithfulness,
AnswerRelevancy, ContextPrecision, ContextRecall, the four metrics `ragas.evaluate()` runs by default;
FactualCorrectness for bench/accuracy.py --ragas, when --metrics names it),
whose judge is an OpenAI client pointed at the llama.cpp server the orchestrator started, and whose
embeddings are the same local MiniLM folder localeval uses. Nothing here reaches the network.

Its HTTP client counts every request and adds the `usage` the server reports (bench/peer_usage.py), so
requests and tokens come from the server, not from estimates; instructor's re-asks after invalid JSON
are counted too. Two modes:
- `per-sample`: samples one after another and the metrics of a sample one after another, which keeps
  the per-sample and per-metric accounting exact;
- `whole-set`: every (sample, metric) job at once, at most RunConfig's default `max_workers` (16) in
  flight, as `ragas.evaluate()`'s executor runs them, against a server with as many slots.
A metric that raises, or returns NaN, is recorded as failed with the reason, as `ragas.evaluate()`
would leave NaN in its table.

Ragas 0.4.3 does not import with any current langchain-community: ragas/llms/base.py imports
ChatVertexAI from a module langchain-community no longer ships (vibrantlabsai/ragas#2745, open). It
uses the class only in an isinstance list, so `_patch_vertexai_import` registers an empty stand-in, as
the workaround in that issue does; nothing else of Ragas is changed.

    bench/.venv-ragas/bin/python bench/ragas_side.py --data slice.jsonl --base-url http://127.0.0.1:8765/v1 \
        --embedder models/all-minilm-l6-v2 --out ragas.jsonl [--mode whole-set]

(bench/harness.py's run_peer starts the server and runs it so, for ragas_compare.py and accuracy.py --ragas.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import time
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import Any

from peer_usage import HOOKS, counting

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _patch_vertexai_import() -> None:
    import importlib
    import sys
    import types

    name = "langchain_community.chat_models.vertexai"
    try:
        importlib.import_module(name)
    except ModuleNotFoundError:
        stand_in = types.ModuleType(name)
        stand_in.ChatVertexAI = type("ChatVertexAI", (), {})  # type: ignore[attr-defined]
        sys.modules[name] = stand_in


DEFAULT_METRICS = "faithfulness,answer_relevance,context_precision,context_utilization,context_recall"


def build_metrics(base_url: str, embedder: str, timeout: float, names: str = DEFAULT_METRICS) -> dict[str, Any]:
    import openai

    _patch_vertexai_import()
    from ragas.embeddings import HuggingFaceEmbeddings
    from ragas.llms import llm_factory
    from ragas.metrics.collections import (AnswerRelevancy, ContextPrecision, ContextRecall, ContextUtilization,
                                           FactualCorrectness, Faithfulness)

    http = openai.DefaultAsyncHttpxClient(event_hooks=HOOKS, timeout=timeout)
    client = openai.AsyncOpenAI(base_url=base_url, api_key="local", http_client=http, max_retries=0)
    llm = llm_factory("local-judge", client=client)
    embeddings = HuggingFaceEmbeddings(model=embedder, device="cpu")
    made = {
        "faithfulness": lambda: Faithfulness(llm=llm),
        "answer_relevance": lambda: AnswerRelevancy(llm=llm, embeddings=embeddings),
        "context_precision": lambda: ContextPrecision(llm=llm),
        "context_utilization": lambda: ContextUtilization(llm=llm),
        "context_recall": lambda: ContextRecall(llm=llm),
        # F1 of claim precision and recall against the reference, its default mode
        "factual_correctness": lambda: FactualCorrectness(llm=llm),
    }
    return {name: made[name]() for name in names.split(",")}


def inputs_for(name: str, row: dict[str, Any]) -> dict[str, Any] | None:
    """The arguments each Ragas metric takes, or None when the row lacks what the metric needs.

    localeval's context_precision judges the chunks against the reference answer when there is one and
    against the generated answer otherwise; Ragas splits that into ContextPrecision and
    ContextUtilization, so a row runs exactly one of the two, reported under context_precision."""
    base = {"user_input": row["question"]}
    reference = row.get("reference")
    if name in ("faithfulness", "context_utilization"):
        if name == "context_utilization" and reference:
            return None
        return {**base, "response": row["answer"], "retrieved_contexts": row["contexts"]}
    if name == "answer_relevance":
        return {**base, "response": row["answer"]}
    if name == "factual_correctness":
        return {"response": row["answer"], "reference": reference} if reference else None
    if not reference:
        return None
    return {**base, "reference": reference, "retrieved_contexts": row["contexts"]}


#: ragas.RunConfig's default max_workers: how many jobs ragas.evaluate() keeps in flight.
MAX_WORKERS = 16


async def score_one(metric: Any, kwargs: dict[str, Any]) -> tuple[Any, str | None]:
    """A metric's value, or None and why it failed."""
    try:
        value = (await metric.ascore(**kwargs)).value
    except Exception as error:  # noqa: BLE001 - any failure is a failed value, which is what we count
        return None, f"{type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None, "NaN"
    return value, None


def jobs(metrics: dict[str, Any], row: dict[str, Any]) -> list[tuple[str, Any, dict[str, Any]]]:
    """(the name reported, the metric, its arguments) for each metric that applies to the row."""
    found = []
    for name, metric in metrics.items():
        kwargs = inputs_for(name, row)
        if kwargs is not None:
            found.append(("context_precision" if name == "context_utilization" else name, metric, kwargs))
    return found


async def score_row(metrics: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"id": row["id"], "metrics": {}, "usage": {}, "errors": {}}
    for name, metric, kwargs in jobs(metrics, row):
        with counting() as tally:
            value, error = await score_one(metric, kwargs)
        out["metrics"][name] = value
        if error:
            out["errors"][name] = error
        out["usage"][name] = asdict(tally)
    return out


async def whole_set(metrics: dict[str, Any], rows: list[dict[str, Any]], handle: Any) -> None:
    gate = asyncio.Semaphore(MAX_WORKERS)

    async def limited(metric: Any, kwargs: dict[str, Any]) -> tuple[Any, str | None]:
        async with gate:
            return await score_one(metric, kwargs)

    with counting() as tally:  # the tasks gathered below copy its context: every request lands in one tally
        planned = [(row, jobs(metrics, row)) for row in rows]
        found = await asyncio.gather(*(limited(metric, kwargs) for _, js in planned for _, metric, kwargs in js))
    results = iter(found)
    for row, js in planned:
        out: dict[str, Any] = {"id": row["id"], "metrics": {}, "errors": {}}
        for name, _, _ in js:
            out["metrics"][name], error = next(results)
            if error:
                out["errors"][name] = error
        handle.write(json.dumps(out) + "\n")
    handle.write(json.dumps({"whole_set": asdict(tally)}) + "\n")
    print(f"ragas whole set: {len(rows)} samples in {tally.seconds:.1f} s, {tally.requests} requests", flush=True)


async def run(args: argparse.Namespace) -> None:
    start = time.perf_counter()
    metrics = build_metrics(args.base_url, args.embedder, args.timeout, args.metrics)
    setup = time.perf_counter() - start
    rows = [json.loads(line) for line in Path(args.data).read_text(encoding="utf-8").splitlines() if line.strip()]
    with Path(args.out).open("w", encoding="utf-8") as handle:
        handle.write(json.dumps({"setup_seconds": round(setup, 3), "versions": versions()}) + "\n")
        if args.mode == "whole-set":
            await whole_set(metrics, rows, handle)
            return
        for i, row in enumerate(rows, 1):
            start = time.perf_counter()
            result = await score_row(metrics, row)
            result["seconds"] = round(time.perf_counter() - start, 3)
            handle.write(json.dumps(result) + "\n")
            handle.flush()
            failed = ", ".join(result["errors"]) or "none failed"
            print(f"ragas {i}/{len(rows)} {row['id']}: {result['seconds']:.1f} s, {failed}", flush=True)


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in ("ragas", "instructor", "openai", "sentence-transformers")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--embedder", required=True, help="sentence-transformers folder")
    parser.add_argument("--out", required=True)
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per HTTP request")
    parser.add_argument("--metrics", default=DEFAULT_METRICS, help="comma-separated: the default's and factual_correctness")
    parser.add_argument("--mode", choices=("per-sample", "whole-set"), default="per-sample")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
