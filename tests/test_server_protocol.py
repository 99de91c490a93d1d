"""The server judge's protocol handling against a scripted HTTP server (milliseconds, no model): probes
and the one-line errors for missing features, retries, the unreachable-server stop, concurrency, what is
sent (API key header, no proxy, no redirect) and what is not kept (the key). The real llama-cpp-python
server runs in test_server_judge.py."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from fake_openai_server import Script, fake_openai_server
from localeval.cli import cli
from localeval.errors import JudgeError, JudgeServerError, OptionError
from localeval.judge import http_client
from localeval.judge.backend import ContinuationCall, DistributionCall, JsonCall
from localeval.judge.llama_server import free_port
from localeval.judge import JudgeOptions, RunConfig, open_judge
from localeval.judge.server import ServerBackend

MESSAGES = [{"role": "system", "content": "Answer Yes or No."}, {"role": "user", "content": "Is the sky blue today?"}]
YES_NO = {"yes": ("Yes", "yes", "YES"), "no": ("No", "no", "NO")}


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_client, "BACKOFF_SECONDS", 0.001)


def backend(url: str, **options) -> ServerBackend:
    return ServerBackend(url, **options)


def test_probes_find_the_schema_form_the_server_obeys() -> None:
    for mode in ("json_schema", "grammar"):
        with fake_openai_server(Script(schema_mode=mode)) as url:
            server = backend(url)
            assert server.structured == mode and server.model == "fake-model"
            assert server.tokenizer == "llama-cpp-python" and server.top_logprobs == 100


def test_a_busy_moment_during_the_probes_changes_nothing_they_find() -> None:
    """A 503 or 429 while the server is probed (or a 502 or 504 from a proxy in front of it) is retried, not
    read as 'json_schema unsupported' or 'fewer top_logprobs': what the probes find is part of every cache
    key, so a resumed run must find the same."""
    for status in (503, 429, 502, 504):
        script = Script(fail_status=status, fail_on={"/v1/chat/completions": 2, "/extras/tokenize": 1})
        with fake_openai_server(script) as url:
            server = backend(url)
        assert (server.structured, server.top_logprobs, server.tokenizer) == ("json_schema", 100, "llama-cpp-python")
        refused = Script(fail_status=400, fail_on={"/v1/chat/completions": 1}, schema_mode="grammar")
        with fake_openai_server(refused) as url:  # a 4xx is the server's answer: json_schema refused, grammar next
            assert backend(url).structured == "grammar"


def test_a_server_that_ignores_schemas_is_one_clear_error() -> None:
    with fake_openai_server(Script(schema_mode=None)) as url:
        with pytest.raises(JudgeServerError, match="does not constrain output to a JSON schema .*json_schema: ignored; "
                                                   "grammar: ignored") as caught:
            backend(url)
    assert "\n" not in str(caught.value)


def test_a_server_without_logprobs_is_one_clear_error() -> None:
    with fake_openai_server(Script(top_logprobs=None)) as url:
        with pytest.raises(JudgeServerError, match="returned 0 top_logprobs where 100 were asked; verdicts need the "
                                                   "first token's top_logprobs"):
            backend(url)


def test_verdict_sums_spellings_over_the_top_tokens_and_tokens_are_counted_by_the_server() -> None:
    with fake_openai_server(Script()) as url:
        server = backend(url)
        text = server.render(MESSAGES)
        [reply] = server.run([DistributionCall(text, YES_NO, "verify")])
    yes = math.exp(-0.2) + math.exp(-4.0)  # "Yes" and " yes" (a leading-space spelling), by hand
    assert math.exp(reply.log_groups["yes"]) == pytest.approx(yes, rel=1e-12)
    assert math.exp(reply.log_groups["no"]) == pytest.approx(math.exp(-1.8), rel=1e-12)
    assert reply.log_total == 0.0
    # The fake counts a word as a token and 5 template tokens per message (its usage): 4 + 5 words, plus the
    # measured 5 per message and the 1-token margin.
    assert server.prompt_tokens(text) == 9 + 2 * 6
    assert reply.stats.prompt_tokens == 9 + 2 * 5


def test_a_log_probability_that_is_not_a_number_is_left_out_not_cached() -> None:
    """A server that sends NaN (Python's json reads it) or +Infinity for a token: that token carries no
    probability; -Infinity is a probability of 0."""
    script = Script()
    with fake_openai_server(script) as url:
        server = backend(url)
        script.top_logprobs = [("Yes", math.nan), ("No", -0.5), (" yes", math.inf), (" no", -math.inf)]
        [reply] = server.run([DistributionCall(server.render(MESSAGES), YES_NO, "verify")])
    assert reply.log_groups == {"yes": -math.inf, "no": -0.5}


def test_no_answer_word_among_top_tokens_is_a_call_error_not_a_guess() -> None:
    script = Script()
    with fake_openai_server(script) as url:
        server = backend(url)
        script.top_logprobs = [("Maybe", -0.1), ("Perhaps", -2.0)]
        [reply] = server.run([DistributionCall(server.render(MESSAGES), YES_NO, "verify")])
    assert isinstance(reply, JudgeError) and "none of the answer words of prompt 'verify'" in str(reply)


def test_reading_a_given_answers_tokens_is_a_call_error_naming_the_in_process_judge() -> None:
    """A chat endpoint returns log-probabilities of what it generates, never of given text: grounding's call
    comes back as the sample's error (skipped with the reason), not as a guess."""
    with fake_openai_server(Script()) as url:
        server = backend(url)
        [reply] = server.run([ContinuationCall(server.render(MESSAGES), "Paris.", "grounding")])
    assert isinstance(reply, JudgeError) and "without --judge-url" in str(reply)


def test_5xx_is_retried_then_answered() -> None:
    script = Script()
    with fake_openai_server(script) as url:
        server = backend(url)
        call = DistributionCall(server.render(MESSAGES), YES_NO, "verify")
        server.run([call])  # token counts are memoised: from here on, only the completion is requested
        before = len(script.requests)
        script.fail_next = 2
        [reply] = server.run([call])
    assert not isinstance(reply, JudgeError)
    assert [r[1] for r in script.requests[before:]] == ["/v1/chat/completions"] * 3


@pytest.mark.parametrize("header, seconds", [
    ("3", 3.0), ("0", 0.0), ("-5", None), ("nan", None), ("inf", None), ("soon", None),
    ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # a date in the past: now
    ("Mon, 01 Jan 99999999999999999999 00:00:00 GMT", None),  # a year no clock reaches: unreadable, not a crash
])
def test_retry_after_is_read_as_seconds_or_ignored(header: str, seconds: float | None) -> None:
    assert http_client._retry_after(header) == seconds


def test_a_retry_after_of_zero_still_backs_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's Retry-After and the client's backoff are both lower bounds on the wait."""
    waits: list[float] = []
    monkeypatch.setattr(http_client.time, "sleep", waits.append)

    def busy(self, method, url, data):  # noqa: ANN001
        raise http_client.ServerCallError("HTTP 429", 429, 0.0)

    monkeypatch.setattr(http_client.JsonHttp, "_once", busy)
    with pytest.raises(http_client.ServerCallError):
        http_client.JsonHttp("http://127.0.0.1:9", retries=3, backoff=0.5).get("/v1/models")
    assert waits == [0.5, 1.0, 2.0]


def two_calls_answered(url: str) -> tuple[ServerBackend, list[DistributionCall]]:
    """A backend (2 retries, one request at a time) and two verdict calls it has answered once: their token
    counts are memoised, so from here on only their completions are requested."""
    server = backend(url, retries=2, parallel=1)
    calls = [DistributionCall(server.render(MESSAGES), YES_NO, "verify"),
             DistributionCall(server.render(MESSAGES[1:]), YES_NO, "verify")]
    server.run(calls)
    return server, calls


def test_a_server_still_failing_after_retries_stops_the_run_once_the_round_is_back() -> None:
    script = Script()
    with fake_openai_server(script) as url:
        server, calls = two_calls_answered(url)
        script.fail_next = 3  # the first call's three attempts
        heard: dict[int, object] = {}
        with pytest.raises(JudgeServerError, match=f"judge server {url} failed .*HTTP 503: loading model, after 2 "
                                                   "retries.* the same command resumes without repeating them"):
            server.run(calls, on_reply=heard.__setitem__)
    assert not isinstance(heard[1], JudgeError)  # the other call's answer reached the caller (who caches it) first


def test_a_request_the_server_refuses_skips_its_sample_only_without_a_retry() -> None:
    script = Script(fail_status=400)
    with fake_openai_server(script) as url:
        server, calls = two_calls_answered(url)
        before = len(script.requests)
        script.fail_next = 1
        replies = server.run(calls)
    assert isinstance(replies[0], JudgeError) and "HTTP 400: request refused" in str(replies[0])
    assert not isinstance(replies[1], JudgeError)
    assert len(script.requests) - before == 2  # one request each: a 4xx is not retried


@pytest.mark.parametrize("status", [401, 403, 404])
def test_a_refusal_of_every_request_stops_the_run_instead_of_skipping_every_sample(status: int) -> None:
    """An API key gone stale mid-run (401, 403), or an endpoint the server no longer serves (404): every later
    call would be refused too, so the run stops with one line, the round's other answers cached."""
    script = Script(fail_status=status)
    with fake_openai_server(script) as url:
        server, calls = two_calls_answered(url)
        before = len(script.requests)
        script.fail_next = 1
        heard: dict[int, object] = {}
        with pytest.raises(JudgeServerError, match=f"judge server {url} refused the run's requests .*HTTP {status}.*: "
                                                   "check the API key .* the same command resumes"):
            server.run(calls, on_reply=heard.__setitem__)
    assert not isinstance(heard[1], JudgeError) and len(script.requests) - before == 2  # not retried


def test_a_server_gone_for_a_whole_round_stops_the_run_cleanly() -> None:
    with fake_openai_server(Script()) as url:
        server = backend(url, retries=1)
        text = server.render(MESSAGES)
    with pytest.raises(JudgeServerError, match="stopped answering .* the same command resumes without repeating them"):
        server.run([DistributionCall(text, YES_NO, "verify"), DistributionCall(text + " ", YES_NO, "verify")])
    with pytest.raises(JudgeServerError, match="stopped answering"):
        server.count_tokens("a text the windowing asks about between rounds")
    with pytest.raises(JudgeServerError, match="is unreachable"):
        backend(f"http://127.0.0.1:{free_port()}/v1", retries=0)


def test_calls_run_concurrently_up_to_parallel_and_replies_keep_their_order() -> None:
    script = Script()
    with fake_openai_server(script) as url:
        server = backend(url, parallel=4)
        script.hold_until = 4  # after the probes (one at a time): no answer until four calls are in flight at once
        texts = [server.render([{"role": "user", "content": "q " * (i + 1)}]) for i in range(8)]
        replies = server.run([DistributionCall(t, YES_NO, "verify") for t in texts])
    assert script.hold_until == 0  # four were in flight together (a client sending fewer never opens the hold)
    assert script.max_in_flight == 4  # and never more
    assert [r.stats.prompt_tokens for r in replies] == [i + 1 + 5 for i in range(8)]  # the fake's usage, in order


def test_json_calls_parse_and_a_truncated_answer_is_not_done() -> None:
    with fake_openai_server(Script(schema_mode="grammar")) as url:
        server = backend(url)
        schema = {"type": "object", "properties": {"probe": {"type": "string"}}, "required": ["probe"]}
        [reply] = server.run([JsonCall(server.render(MESSAGES), schema, 20, "statements")])
    assert reply.done and reply.value == {"probe": "zq7"}


def test_api_key_goes_in_the_header_and_nowhere_else(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    script = Script()
    monkeypatch.setenv("SITE_JUDGE_TOKEN", "s3cret-token")
    with fake_openai_server(script) as url:
        options = JudgeOptions(judge_url=url, judge_api_key_env="SITE_JUDGE_TOKEN", cache=str(tmp_path / "c.sqlite"))
        judge = open_judge(options)
        assert all(headers.get("Authorization") == "Bearer s3cret-token" for _, _, headers, _ in script.requests)
        assert "s3cret" not in repr(judge.backend.identity()) + repr(judge.describe()) + repr(options.settings())
        judge.close()
    monkeypatch.delenv("SITE_JUDGE_TOKEN")
    with pytest.raises(OptionError, match="--judge-api-key-env SITE_JUDGE_TOKEN: the environment variable "
                                          "SITE_JUDGE_TOKEN is not set"):
        open_judge(options)


def test_identity_names_the_served_model_not_the_url(monkeypatch: pytest.MonkeyPatch) -> None:
    with fake_openai_server(Script()) as first, fake_openai_server(Script()) as second:
        assert first != second
        assert backend(first).identity() == backend(second).identity()
        sha = "ab" * 32
        pinned = backend(first, model_sha256=sha).identity()
    assert pinned["model_sha256"] == sha and pinned["decoding"]["model"] == "fake-model"


def test_proxies_in_the_environment_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, dead)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    script = Script()
    with fake_openai_server(script) as url:
        assert backend(url).model == "fake-model"  # reached the server itself, not the (dead) proxy
    assert script.requests


def test_redirects_are_not_followed() -> None:
    script = Script()
    with fake_openai_server(script) as url:
        server = backend(url, retries=0)
        script.redirect_to = f"http://127.0.0.1:{free_port()}/elsewhere"
        [reply] = server.run([DistributionCall(server.render(MESSAGES), YES_NO, "verify")])
    assert isinstance(reply, JudgeError) and "HTTP 307" in str(reply)


def test_bad_server_options_are_one_line_errors(tmp_path: Path) -> None:
    cache = str(tmp_path / "c.sqlite")
    with pytest.raises(OptionError, match="is not an http\\(s\\) URL such as http://gpu-box:8080/v1"):
        open_judge(JudgeOptions(judge_url="gpu-box:8080", cache=cache))
    with pytest.raises(OptionError, match="give only one"):
        open_judge(JudgeOptions(judge_url="http://127.0.0.1:1/v1", judge="smollm2-135m-instruct-q4_1", cache=cache))
    with pytest.raises(OptionError, match="is not a sha256"):
        open_judge(JudgeOptions(judge_url="http://127.0.0.1:1/v1", judge_sha256="abc", cache=cache))
    with fake_openai_server(Script(models=["a", "b"])) as url:
        with pytest.raises(OptionError, match=r"serves 2 models \(a, b\); choose one with --judge-model"):
            open_judge(JudgeOptions(judge_url=url, cache=cache))
        with pytest.raises(OptionError, match="--judge-model 'c' is not served by .*; it serves: a, b"):
            open_judge(JudgeOptions(judge_url=url, judge_model="c", cache=cache))
        assert open_judge(JudgeOptions(judge_url=url, judge_model="b", cache=cache)).backend.model == "b"


def test_requests_in_flight_default_to_the_servers_not_the_devices() -> None:
    assert RunConfig.resolve(JudgeOptions(judge_url="http://x/v1")).parallel == 4  # config.DEFAULT_PARALLEL_SERVER
    assert RunConfig.resolve(JudgeOptions(judge_url="http://x/v1", gpu_layers=-1)).parallel == 4  # the GPU is the server's
    assert RunConfig.resolve(JudgeOptions(judge_url="http://x/v1", parallel=8)).parallel == 8


def test_score_with_an_unreachable_server_is_one_line_and_exit_2(tmp_path: Path, example_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    result = CliRunner().invoke(cli, ["score", str(example_path), "-m", "answer_relevance_rating", "-o",
                                      str(tmp_path / "out"), "--cache", str(tmp_path / "c.sqlite"), "--judge-url", url])
    assert result.exit_code == 2, result.output
    assert result.output.strip().count("\n") == 0
    assert result.output.startswith(f"error: judge server {url} is unreachable")
    assert not list((tmp_path / "out").glob("*"))  # nothing written


def test_with_a_server_no_local_judge_file_is_needed(tmp_path: Path, example_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The up-front model check skips the judge file when the judge is on a server: the error is the
    server's, not a missing GGUF's."""
    monkeypatch.setenv("LOCALEVAL_JUDGE", str(tmp_path / "no-such-judge.gguf"))
    url = f"http://127.0.0.1:{free_port()}/v1"
    result = CliRunner().invoke(cli, ["score", str(example_path), "-m", "faithfulness", "-o", str(tmp_path / "out"),
                                      "--cache", str(tmp_path / "c.sqlite"), "--judge-url", url])
    assert result.exit_code == 2 and result.output.startswith(f"error: judge server {url} is unreachable"), result.output


def test_an_answer_word_a_server_gives_probability_zero_adds_nothing() -> None:
    """A server writing its top_logprobs with Python's json gives -Infinity for a probability of 0: the
    answer group holding only that word has no mass, never NaN."""
    from localeval.judge.backend import logsumexp

    assert logsumexp([float("-inf")]) == float("-inf") and logsumexp([float("-inf")] * 3) == float("-inf")
    assert logsumexp([-0.1, float("-inf")]) == pytest.approx(-0.1)
