"""The server judge against a real llama.cpp server: llama-cpp-python's `python -m llama_cpp.server`
(through localeval/judge/llama_server.py, for the AMX workaround) serving the tiny judge on 127.0.0.1.

It answers as the in-process judge does on the same GGUF, its JSON always parses, `localeval score
--judge-url` works end to end, and a server killed mid-run stops the run cleanly, after which a restarted
server (on another port) resumes it without repeating a finished call. test_faults.py injects the other
faults of a server (errors, overload, cut and broken answers, delays, a restart on the same port).
Marked `model`, so it runs under the model lock (tests/conftest.py takes it): the server is a llama.cpp process.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

import localeval
from localeval.cli import cli
from localeval.errors import JudgeServerError
from localeval.judge import Ask, Judge, http_client, load_judge
from localeval.judge.llama_server import local_server
from localeval.judge import JudgeOptions, open_judge
from localeval.judge.prompts import load_prompt
from localeval.metrics import MetricOptions
from localeval.models import find
from test_judge import ADVERSARIAL_ANSWERS, HAMLET, SMALL_SCHEMA

from .conftest import cached_calls

TINY = "smollm2-135m-instruct-q4_1"
pytestmark = pytest.mark.model(TINY)
N_CTX = 2048
# Measured (SmolLM2 Q4_1, llama-cpp-python 0.3.36): largest |ΔP| 1.1e-4 between the two paths on this
# fixture with 1 thread, 6.7e-5 over 60 HaluEval and UHGEval verdicts with 2 threads
# (bench/results/2026-11-22-server-agreement-llama-cpp-python-*.json); llama.cpp evaluates the prompts in
# different batch splits. 5e-4 leaves room for other CPUs; the answer-word mass check below catches a
# spelling set or a top-N cut that differs.
MAX_DELTA = 5e-4
FACTS = [
    ("Tokyo is the capital of Japan.", "Tokyo is in Japan."),
    ("The Eiffel Tower is in Paris. It was completed in 1889.", "It was completed in 1920."),
    ("Marie Curie was born in Warsaw in 1867.", "Marie Curie was born in Poland."),
    ("Water boils at 100 degrees Celsius at sea level.", "Water boils at 50 degrees."),
]
FACTS_ZH = [("北京是中国的首都。", "北京是首都。"), ("长城主要是明朝修建的。", "长城是唐朝修建的。")]
RECORDS = [
    {"id": "en", "question": "When was the Eiffel Tower completed?", "answer": "The Eiffel Tower was completed in 1889.",
     "contexts": ["The Eiffel Tower is in Paris. It was completed in 1889 for the World's Fair."]},
    {"id": "zh", "question": "长城主要是在哪个朝代修建的？", "answer": "现存的长城大部分是明朝修建的。",
     "contexts": ["长城是中国古代的军事防御工程。现存的长城遗迹主要为明朝时期修建的明长城。"]},
    {"id": "curie", "question": "Where was Marie Curie born?", "answer": "She was born in Warsaw. She won two Nobel Prizes.",
     "contexts": ["Marie Curie was born in Warsaw in 1867. She won Nobel Prizes in physics and chemistry."]},
]


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_client, "BACKOFF_SECONDS", 0.01)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = (tmp_path_factory.mktemp("server") / "server.log").open("w")
    with log, local_server(find(TINY).path(), n_ctx=N_CTX, threads=1, log=log) as (url, _):
        yield url


def server_judge(url: str, cache: Path, **options: Any) -> Judge:
    return open_judge(JudgeOptions(judge_url=url, cache=str(cache), n_ctx=N_CTX, **options))


def fixture_asks() -> list[Ask]:
    def verify(lang: str, context: str, statement: str) -> Ask:
        return Ask.yes_no(load_prompt("verify_statement", lang).render(context=context, statement=statement))

    asks = [verify("en", c, s) for c, s in FACTS] + [verify("zh", c, s) for c, s in FACTS_ZH]
    asks += [Ask.choice(load_prompt("relevance_rating", "en").render(question=r["question"], answer=r["answer"]))
             for r in RECORDS]
    asks += [Ask.json(load_prompt("questions", "en").render(answer=RECORDS[0]["answer"], n=2)),
             Ask.json(load_prompt("statements", "zh").render(question=RECORDS[1]["question"], answer=RECORDS[1]["answer"]))]
    return asks


def test_same_answers_as_the_in_process_judge(server: str, tmp_path: Path) -> None:
    asks = fixture_asks()
    remote = server_judge(server, tmp_path / "server.sqlite", parallel=2)
    assert remote.describe()["structured_output"] == "grammar"  # llama-cpp-python refuses json_schema
    assert remote.describe()["top_logprobs"] == 100
    local = load_judge(TINY, cache=tmp_path / "local.sqlite", n_ctx=N_CTX, n_threads=1, n_gpu_layers=0)  # as the server
    try:
        by_server, in_process = remote.ask(asks), local.ask(asks)
    finally:
        local.close()
        remote.close()
    deltas = []
    for ask, a, b in zip(asks, by_server, in_process):
        assert a.error is None and b.error is None
        if ask.kind == "json":
            assert a.value == b.value  # the same strict grammar, greedy: the same text
        elif ask.kind == "yes_no":
            deltas.append(abs(a.value - b.value))
            assert (a.value >= 0.5) == (b.value >= 0.5)  # no verdict flips
            assert a.mass == pytest.approx(b.mass, abs=1e-3)  # the answer words are all in the top 100 here
        else:
            deltas.extend(abs(a.value[k] - b.value[k]) for k in b.value)
    assert max(deltas) < MAX_DELTA


# The English answers that try to break JSON (quotes, backslashes, braces, control characters); test_judge.py
# runs all of them in-process. Chinese JSON through the server: test_same_answers_as_the_in_process_judge (equal
# to the in-process judge's, under the prompt's own bounds) and test_score_cli_against_the_server.
@pytest.mark.parametrize("lang,question,answer", [case for case in ADVERSARIAL_ANSWERS
                                                   if case[0] == "en" and case is not HAMLET])
def test_json_from_the_server_always_parses(server: str, tmp_path: Path, lang: str, question: str, answer: str) -> None:
    judge = server_judge(server, tmp_path / "c.sqlite")
    prompt = load_prompt("statements", lang).render(question=question, answer=answer)
    value, stats = judge.json(prompt, SMALL_SCHEMA, max_tokens=160)
    judge.close()
    assert isinstance(value, dict) and isinstance(value["statements"], list) and len(value["statements"]) <= 3
    assert all(isinstance(s, str) and len(s) <= 60 for s in value["statements"])
    assert stats.calls == 1 and 0 < stats.generated_tokens <= 160


def test_score_cli_against_the_server(server: str, tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in RECORDS[:2]), encoding="utf-8")
    args = ["score", str(data), "-m", "faithfulness,answer_relevance_rating", "--judge-url", server,
            "--faithfulness-statements", "judge",  # statements generated under the schema: JSON through the server
            "--parallel", "2", "--n-ctx", str(N_CTX), "--cache", str(tmp_path / "c.sqlite"), "-q"]
    first = CliRunner().invoke(cli, [*args, "-o", str(tmp_path / "one")], catch_exceptions=False)
    assert first.exit_code == 0, first.output
    summary = json.loads((tmp_path / "one" / "summary.json").read_text())
    assert summary["judge"]["engine"] == "OpenAI-compatible server" and summary["judge"]["server"] == server
    assert summary["settings"]["faithfulness"]["judge_url"] == server
    assert summary["metrics"]["faithfulness"]["n"] == summary["metrics"]["answer_relevance_rating"]["n"] == 2
    assert summary["judge"]["usage"]["faithfulness"]["calls"] >= 3
    second = CliRunner().invoke(cli, [*args, "-o", str(tmp_path / "two")], catch_exceptions=False)
    assert second.exit_code == 0, second.output
    again = json.loads((tmp_path / "two" / "summary.json").read_text())
    assert all(u["calls"] == 0 for u in again["judge"]["usage"].values())  # all from the cache
    assert again["metrics"] == summary["metrics"]


POST = http_client.JsonHttp.post


class Recorder:
    """Records the chat completions the server answered (replacing any earlier Recorder) and kills it after
    `kill_after` of them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, process: Any = None, kill_after: int | None = None) -> None:
        self.answered: list[str] = []
        self.process, self.kill_after = process, kill_after

        def recorded(client: http_client.JsonHttp, path: str, body: Any, *, retry: http_client.Retry = True) -> Any:
            out = POST(client, path, body, retry=retry)
            if path == "/chat/completions" and retry is True:  # the start-up probes retry only when busy
                self.answered.append(json.dumps([body["messages"], body["max_tokens"]], sort_keys=True))
                if self.kill_after is not None and len(self.answered) == self.kill_after:
                    self.process.kill()
                    self.process.wait()
            return out

        monkeypatch.setattr(http_client.JsonHttp, "post", recorded)


def test_killed_server_then_resume_repeats_no_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two samples in one window: the first round asks for their statements (2 completions), the second
    verifies them. Killed after round one, the token counts that window round two's prompts cannot reach
    the server: the run stops with one line, every answer that arrived cached, and no sample is scored
    without its verdicts; a server started again resumes it. (A server that stops answering in the middle
    of a round, and one restarted on its port, are test_faults.py's.)"""
    samples, kill_after = [RECORDS[0], RECORDS[2]], 2  # English: the subject is the kill, not the language
    cache = tmp_path / "c.sqlite"
    judge = JudgeOptions(cache=str(cache), n_ctx=N_CTX, parallel=2)  # a window of 4 samples: both at once
    model = find(TINY).path()
    with (tmp_path / "first.log").open("w") as log, local_server(model, n_ctx=N_CTX, threads=1, log=log) as (url, process):
        first = Recorder(monkeypatch, process, kill_after)
        run = MetricOptions(judge=replace(judge, judge_url=url), faithfulness_statements="judge")
        with pytest.raises(JudgeServerError, match=f"judge server {url} stopped answering .* resumes") as caught:
            localeval.evaluate(samples, metrics=["faithfulness"], options=run)
        assert "\n" not in str(caught.value)
    assert len(first.answered) == kill_after and cached_calls(cache) == kill_after  # every answer was cached at once

    with (tmp_path / "second.log").open("w") as log, local_server(model, n_ctx=N_CTX, threads=1, log=log) as (url, _):
        second = Recorder(monkeypatch)
        run = MetricOptions(judge=replace(judge, judge_url=url), faithfulness_statements="judge")
        result = localeval.evaluate(samples, metrics=["faithfulness"], options=run)
    assert len(result.rows) == len(samples) and all(r["skipped"] == {} for r in result.rows)
    assert not set(first.answered) & set(second.answered)  # nothing the first server answered was asked again
    assert len(set(second.answered)) == len(second.answered)
    assert cached_calls(cache) == kill_after + len(second.answered)
    usage = result.summary["judge"]["usage"]["faithfulness"]
    assert usage["calls"] == len(second.answered) and usage["cache_hits"] >= kill_after
    assert math.isfinite(result.means["faithfulness"])
