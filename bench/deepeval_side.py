"""The DeepEval half of bench/ragas_compare.py; runs inside bench/.venv-deepeval, never in localeval's venv.

It scores the slice with DeepEval's own RAG metrics (FaithfulnessMetric, AnswerRelevancyMetric,
ContextualPrecisionMetric, ContextualRecallMetric: the counterparts of the four Ragas metrics), each with
its defaults (reasons included, threshold 0.5), whose judge is DeepEval's `LocalModel` (an OpenAI client)
pointed at the llama.cpp server the orchestrator started. Nothing here reaches the network: telemetry is
off and nothing is sent to Confident AI.

Two modes, as bench/ragas_side.py has them:
- `per-sample`: one sample after another, its metrics one after another (`a_measure`), so that requests,
  tokens and seconds are exact per sample and per metric;
- `whole-set`: `deepeval.evaluate()` over every test case at once with its default AsyncConfig (20 test
  cases at a time), as a user runs a test set. Two settings differ from its defaults, and only so that
  the run ends with numbers: `ignore_errors=True` (by default the first sample whose JSON does not parse
  stops the whole run) and `skip_on_missing_params=True` (the rows without a reference answer have no
  contextual precision or recall). Its cache file and results folder go to the working folder.

Its HTTP client counts every request and adds the server's `usage` (bench/peer_usage.py). A metric that
raises, returns None or NaN, or reports an error is recorded as failed with the reason.

    bench/.venv-deepeval/bin/python bench/deepeval_side.py --data slice.jsonl --base-url http://127.0.0.1:8765/v1 \
        --out deepeval.jsonl [--mode whole-set]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from peer_usage import HOOKS, counting

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
os.environ.setdefault("DEEPEVAL_UPDATE_WARNING_OPT_IN", "0")
os.environ.setdefault("DEEPEVAL_GRPC_LOGGING", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

METRICS = ("faithfulness", "answer_relevance", "context_precision", "context_recall")


def judge(base_url: str, timeout: float) -> Any:
    """DeepEval's LocalModel, its async client counting every response."""
    import openai
    from deepeval.models import LocalModel

    class CountedLocalModel(LocalModel):
        def _client_kwargs(self) -> dict[str, Any]:
            return {**super()._client_kwargs(), "timeout": timeout}

        def load_model(self, async_mode: bool = False) -> Any:
            if not async_mode:
                return super().load_model(async_mode=False)
            http = openai.DefaultAsyncHttpxClient(event_hooks=HOOKS, timeout=timeout)
            return openai.AsyncOpenAI(api_key="local", base_url=self.base_url, http_client=http,
                                      **self._client_kwargs())

    return CountedLocalModel(model="local-judge", base_url=base_url, api_key="local", temperature=0.0)


def build_metrics(model: Any) -> dict[str, Any]:
    from deepeval.metrics import (AnswerRelevancyMetric, ContextualPrecisionMetric, ContextualRecallMetric,
                                  FaithfulnessMetric)

    return {"faithfulness": FaithfulnessMetric(model=model), "answer_relevance": AnswerRelevancyMetric(model=model),
            "context_precision": ContextualPrecisionMetric(model=model),
            "context_recall": ContextualRecallMetric(model=model)}


def test_case(row: dict[str, Any]) -> Any:
    from deepeval.test_case import LLMTestCase

    return LLMTestCase(input=row["question"], actual_output=row["answer"], expected_output=row.get("reference"),
                       retrieval_context=list(row["contexts"]))


def applies(name: str, row: dict[str, Any]) -> bool:
    """DeepEval's contextual precision and recall need the expected output (no reference-free variant)."""
    return bool(row.get("reference")) or name in ("faithfulness", "answer_relevance")


def _failure(value: Any, error: Any) -> str | None:
    if error:
        return str(error).splitlines()[0][:200] if str(error) else "error"
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "no score"
    return None


async def per_sample(rows: list[dict[str, Any]], base_url: str, timeout: float, handle: Any) -> None:
    metrics = build_metrics(judge(base_url, timeout))
    for i, row in enumerate(rows, 1):
        out: dict[str, Any] = {"id": row["id"], "metrics": {}, "usage": {}, "errors": {}}
        started = time.perf_counter()
        for name, metric in metrics.items():
            if not applies(name, row):
                continue
            value, error = None, None
            metric.error = None  # the metric objects are reused from row to row
            with counting() as tally:
                try:
                    value = await metric.a_measure(test_case(row), _show_indicator=False)
                except Exception as exc:  # noqa: BLE001 - any failure is a failed value, which is what we count
                    error = f"{type(exc).__name__}: {exc}"
            failure = _failure(value, error or getattr(metric, "error", None))
            out["metrics"][name] = None if failure else float(value)
            if failure:
                out["errors"][name] = failure
            out["usage"][name] = asdict(tally)
        out["seconds"] = round(time.perf_counter() - started, 3)
        handle.write(json.dumps(out) + "\n")
        handle.flush()
        print(f"deepeval {i}/{len(rows)} {row['id']}: {out['seconds']:.1f} s, "
              f"{', '.join(out['errors']) or 'none failed'}", flush=True)


def whole_set(rows: list[dict[str, Any]], base_url: str, timeout: float, handle: Any) -> None:
    from deepeval import evaluate
    from deepeval.evaluate.configs import AsyncConfig, DisplayConfig, ErrorConfig

    metrics = build_metrics(judge(base_url, timeout))
    with counting() as tally:
        result = evaluate(test_cases=[test_case(r) for r in rows], metrics=list(metrics.values()),
                          async_config=AsyncConfig(),
                          display_config=DisplayConfig(show_indicator=False, print_results=False),
                          error_config=ErrorConfig(ignore_errors=True, skip_on_missing_params=True))
    by_index = sorted(result.test_results, key=lambda r: r.index if r.index is not None else 0)
    for row, tested in zip(rows, by_index):
        out: dict[str, Any] = {"id": row["id"], "metrics": {}, "errors": {}}
        for data in tested.metrics_data or []:
            name = _metric_name(data.name)
            if not applies(name, row):
                continue
            failure = _failure(data.score, data.error)
            out["metrics"][name] = None if failure else float(data.score)
            if failure:
                out["errors"][name] = failure
        for name in METRICS:  # a metric the run dropped for this case is a failure too
            if applies(name, row) and name not in out["metrics"]:
                out["metrics"][name], out["errors"][name] = None, "no result"
        handle.write(json.dumps(out) + "\n")
    handle.write(json.dumps({"whole_set": asdict(tally)}) + "\n")
    print(f"deepeval whole set: {len(rows)} samples in {tally.seconds:.1f} s, {tally.requests} requests", flush=True)


def _metric_name(label: str) -> str:
    """DeepEval's metric names ("Faithfulness", "Answer Relevancy", "Contextual Precision", ...) to ours."""
    text = label.lower()
    for key, name in (("faith", "faithfulness"), ("relevancy", "answer_relevance"),
                      ("precision", "context_precision"), ("recall", "context_recall")):
        if key in text:
            return name
    return label


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in ("deepeval", "openai")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--mode", choices=("per-sample", "whole-set"), default="per-sample")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per HTTP request")
    args = parser.parse_args()
    rows = [json.loads(line) for line in Path(args.data).read_text(encoding="utf-8").splitlines() if line.strip()]
    start = time.perf_counter()
    import deepeval.metrics  # noqa: F401 - its import is the setup the clock should not count
    setup = time.perf_counter() - start
    with Path(args.out).open("w", encoding="utf-8") as handle:
        handle.write(json.dumps({"setup_seconds": round(setup, 3), "versions": versions()}) + "\n")
        if args.mode == "per-sample":
            asyncio.run(per_sample(rows, args.base_url, args.timeout, handle))
        else:
            whole_set(rows, args.base_url, args.timeout, handle)


if __name__ == "__main__":
    main()
