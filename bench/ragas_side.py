"""The Ragas half of bench/ragas_compare.py; runs inside bench/.venv-ragas, never in localeval's venv.

It scores the slice with Ragas 0.4's own metric classes (ragas.metrics.collections: Faithfulness,
AnswerRelevancy, ContextPrecision, ContextRecall, the four metrics `ragas.evaluate()` runs by default;
FactualCorrectness for bench/accuracy.py --ragas, when --metrics names it),
whose judge is an OpenAI client pointed at the llama_cpp.server the orchestrator started, and whose
embeddings are the same local MiniLM folder localeval uses. Nothing here reaches the network.

Every HTTP response from the server passes an httpx hook that counts the request and adds the `usage`
the server reports, so requests and tokens per sample come from the server, not from estimates;
instructor's re-asks after invalid JSON are counted too. Samples run one after another and the
metrics of a sample one after another: the server serves one request at a time anyway, and this
keeps the per-sample and per-metric accounting exact. A metric that raises, or returns NaN, is
recorded as failed with the reason, as `ragas.evaluate()` would leave NaN in its table.

Ragas 0.4.3 does not import with any current langchain-community: ragas/llms/base.py imports
ChatVertexAI from a module langchain-community no longer ships (vibrantlabsai/ragas#2745, open). It
uses the class only in an isinstance list, so `_patch_vertexai_import` registers an empty stand-in, as
the workaround in that issue does; nothing else of Ragas is changed.

    bench/.venv-ragas/bin/python bench/ragas_side.py --data slice.jsonl --base-url http://127.0.0.1:8765/v1 \
        --embedder models/all-minilm-l6-v2 --out ragas.jsonl

(bench/harness.py's run_ragas starts the server and runs it so, for ragas_compare.py and accuracy.py --ragas.)
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import json
import math
import os
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@dataclass
class Tally:
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    http_errors: int = 0


CURRENT: contextvars.ContextVar[Tally | None] = contextvars.ContextVar("current_tally", default=None)


async def _count(response: Any) -> None:
    """httpx response hook: attribute this request and the server's token usage to the running metric."""
    tally = CURRENT.get()
    if tally is None or "/chat/completions" not in str(response.request.url):
        return
    tally.requests += 1
    await response.aread()
    if response.status_code != 200:
        tally.http_errors += 1
        return
    usage = json.loads(response.content).get("usage") or {}
    tally.prompt_tokens += int(usage.get("prompt_tokens") or 0)
    tally.completion_tokens += int(usage.get("completion_tokens") or 0)


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

    http = openai.DefaultAsyncHttpxClient(event_hooks={"response": [_count]}, timeout=timeout)
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


async def score_row(metrics: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"id": row["id"], "metrics": {}, "usage": {}, "errors": {}}
    for name, metric in metrics.items():
        kwargs = inputs_for(name, row)
        if kwargs is None:
            continue
        name = "context_precision" if name == "context_utilization" else name
        tally = Tally()
        token = CURRENT.set(tally)
        start = time.perf_counter()
        try:
            value = (await metric.ascore(**kwargs)).value
            if value is None or (isinstance(value, float) and math.isnan(value)):
                out["errors"][name] = "NaN"
                value = None
        except Exception as error:  # noqa: BLE001 - any failure is a failed sample, which is what we count
            out["errors"][name] = f"{type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"
            value = None
        finally:
            CURRENT.reset(token)
        out["metrics"][name] = value
        out["usage"][name] = {**asdict(tally), "seconds": round(time.perf_counter() - start, 3)}
    return out


async def run(args: argparse.Namespace) -> None:
    start = time.perf_counter()
    metrics = build_metrics(args.base_url, args.embedder, args.timeout, args.metrics)
    setup = time.perf_counter() - start
    rows = [json.loads(line) for line in Path(args.data).read_text(encoding="utf-8").splitlines() if line.strip()]
    with Path(args.out).open("w", encoding="utf-8") as handle:
        handle.write(json.dumps({"setup_seconds": round(setup, 3), "versions": versions()}) + "\n")
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

    return {name: version(name) for name in ("ragas", "instructor", "openai", "llama_cpp_python",
                                             "sentence-transformers")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--embedder", required=True, help="sentence-transformers folder")
    parser.add_argument("--out", required=True)
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per HTTP request")
    parser.add_argument("--metrics", default=DEFAULT_METRICS, help="comma-separated: the default's and factual_correctness")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
