"""The judge on a site's own inference server: any OpenAI-compatible chat-completions endpoint
(llama.cpp's llama-server, vLLM, llama-cpp-python's server), reached at the one URL the user gives.

- Structured answers: the server's JSON-schema output (`response_format` of type json_schema); where the
  server refuses that form (llama-cpp-python), the GBNF `grammar` field with localeval's own strict JSON
  grammar (grammar.py), the one the in-process judge uses. Which one is probed once at start, with a
  schema whose only valid answer a model would never write unconstrained.
- Verdicts: one generated token with `top_logprobs`; the probability of each answer is the sum over the
  top tokens whose text is one of its spellings (`backend.spellings`, leading space and case variants,
  the in-process rule). Server log-probabilities are normalised, so `log_total` is 0. Only the top N
  tokens come back (N = 100 where the server allows it, else OpenAI's and vLLM's default maximum, 20): an
  answer word below them counts as probability 0, so a verdict can differ from the in-process one by at
  most the N-th token's probability relative to the answers' mass.
- Tokens: the server's own tokenizer endpoint (llama-server and vLLM `/tokenize`, llama-cpp-python
  `/extras/tokenize`); a chat prompt is its messages' tokens plus the template's overhead, measured once
  from the server's `usage` on a probe of the same shape (system + user), plus one token per message.
- Calls of a round run concurrently, up to `parallel` in flight, so the server's slots (llama-server
  `-np`) or continuous batching (vLLM) are used; replies keep the calls' order.
- Failures: what is transient is retried by the HTTP client (http_client.py). A call the server still
  cannot answer after that (gone, overloaded, its own error, a body that is not JSON), or a token count
  between rounds that cannot reach it, stops the run with one line naming the server and the cause
  (`JudgeServerError`), once the round's other calls are back: every answered call is cached by then, so
  the same command resumes without repeating one. A request the server refuses as such (a 4xx, say a
  prompt over its context) skips that sample, with the reason.

The cache identity is the served model's name and what the server says about it (llama-server's `meta`,
vLLM's `root`), the sha256 the user vouches for (`--judge-sha256`), and the decoding settings; never the
URL (a restarted server on another port keeps its cache) and never the API key.
"""

from __future__ import annotations

import json
import math
import re
import time
import warnings
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Callable, Mapping, Sequence
from urllib.parse import urlsplit

from ..errors import JudgeError, JudgeServerError, OptionError
from .backend import (Call, CallStats, ContinuationCall, DistributionCall, DistributionReply, JsonCall, JsonReply, OnReply, Reply,
                      logsumexp, own_tokens, prompt_too_long, spellings)
from .backends import register_backend
from .config import DEFAULT_PARALLEL_SERVER as DEFAULT_PARALLEL
from .config import RunConfig
from .http_client import JsonHttp, Retry, ServerCallError, busy

#: First-token alternatives asked for, most first: 100 (llama.cpp servers; vLLM with --max-logprobs 100),
#: else 20 (OpenAI's maximum and vLLM's default --max-logprobs).
TOP_LOGPROBS = (100, 20)
ENGINE = "OpenAI-compatible server"
#: Decoding as the in-process judge decodes: greedy, no repetition penalty (llama.cpp servers default to 1.1).
GREEDY = {"temperature": 0.0, "repeat_penalty": 1.0}
#: Probes: a schema with one valid answer, and a prompt of the shape every judge prompt has.
PROBE_SCHEMA = {"type": "object", "properties": {"probe": {"type": "string", "enum": ["zq7"]}},
                "required": ["probe"], "additionalProperties": False}
PROBE_JSON = [{"role": "user", "content": "Say hello."}]
PROBE_SHAPE = [{"role": "system", "content": "Answer with one word."}, {"role": "user", "content": "Is the sky blue?"}]
#: Template tokens per message when the server reports no usage (ChatML needs 5, Llama 3 about 6).
FALLBACK_OVERHEAD = 8
#: (name, path, body) of the tokenizer endpoints tried in order; each returns {"tokens": [...]}.
TOKENIZERS: tuple[tuple[str, str, Callable[[str, str], dict[str, Any]]], ...] = (
    ("llama-server", "/tokenize", lambda model, text: {"content": text, "add_special": False, "parse_special": False}),
    ("vllm", "/tokenize", lambda model, text: {"model": model, "prompt": text, "add_special_tokens": False}),
    ("llama-cpp-python", "/extras/tokenize", lambda model, text: {"model": model, "input": text}),
)


@register_backend
class ServerBackend:
    """An OpenAI-compatible server behind the JudgeBackend protocol; `run` is the only concurrent part."""

    name = "server"
    engine = ENGINE

    @classmethod
    def check(cls, config: RunConfig) -> None:
        """The server options, checked without a request: one judge, a URL's form, a sha256's form."""
        options = config.options
        if options.judge:
            raise OptionError("--judge names a model file to load here and --judge-url a server that runs one; "
                              "give only one")
        if not options.judge_url:
            raise OptionError("--judge-backend server needs --judge-url, the server's address")
        check_url(options.judge_url)
        if options.judge_sha256 is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", options.judge_sha256):
            raise OptionError(f"--judge-sha256 '{options.judge_sha256}' is not a sha256 (64 hexadecimal digits)")

    @classmethod
    def open(cls, config: RunConfig, cache: Any = None) -> ServerBackend:
        from ..settings import secret_from_env

        cls.check(config)
        options = config.options
        api_key = (secret_from_env(options.judge_api_key_env, "--judge-api-key-env")
                   if options.judge_api_key_env else None)
        return cls(options.judge_url or "", model=options.judge_model, api_key=api_key,
                   model_sha256=options.judge_sha256.lower() if options.judge_sha256 else None,
                   n_ctx=options.n_ctx, seed=options.seed, parallel=config.parallel, timeout=options.judge_timeout)

    def __init__(self, url: str, *, model: str | None = None, api_key: str | None = None,
                 model_sha256: str | None = None, n_ctx: int = 4096, seed: int = 0, parallel: int = DEFAULT_PARALLEL,
                 retries: int | None = None, backoff: float | None = None, timeout: float | None = None) -> None:
        self.url = check_url(url)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._api = JsonHttp(self.url, headers, retries=retries, backoff=backoff, timeout=timeout)
        root = self.url[:-3] if self.url.endswith("/v1") else self.url
        self._root = JsonHttp(root, headers, retries=retries, backoff=backoff, timeout=timeout)
        self.seed, self.parallel, self.sha256 = seed, parallel, model_sha256
        self._counts: dict[str, int] = {}
        self._answer_texts: dict[tuple[tuple[str, tuple[str, ...]], ...], dict[str, frozenset[str]]] = {}
        self._grammars: dict[str, str] = {}
        self.model, self._model_info, served_ctx = self._pick_model(model)
        self.n_ctx = min(n_ctx, served_ctx or self._slot_context() or n_ctx)
        self.tokenizer, self._tokenize = self._find_tokenizer()
        self.structured = self._find_structured_output()
        self.top_logprobs, self._per_message = self._probe_logprobs()
        self._pool = ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="localeval-judge")

    # ---- the protocol ----------------------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        return {"model_sha256": self.sha256 or f"server:{self.model}",
                "decoding": {**GREEDY, "seed": self.seed, "engine": "server", "model": self.model,
                             "served": self._model_info, "structured": self.structured, "top_logprobs": self.top_logprobs}}

    def describe(self) -> dict[str, Any]:
        return {"judge_model": self.model, "judge_sha256": self.sha256, "engine": self.engine, "server": self.url,
                "structured_output": self.structured, "top_logprobs": self.top_logprobs, "parallel": self.parallel,
                "n_ctx": self.n_ctx, "tokenizer": self.tokenizer or "estimated (UTF-8 bytes / 2)"}

    def render(self, messages: Sequence[Mapping[str, str]]) -> str:
        """The server applies the chat template itself; the canonical JSON of the turns is what is sent
        and what the cache key names."""
        turns = [{"role": m["role"], "content": m["content"]} for m in messages]
        return json.dumps(turns, ensure_ascii=False, sort_keys=True, separators=(",", ":"))

    def count_tokens(self, text: str) -> int:
        return self._unless_gone(self._count, text)

    def prompt_tokens(self, text: str) -> int:
        return self._unless_gone(self._prompt_tokens, text)

    def token_texts(self, text: str) -> None:
        return None  # continuations are not served (ContinuationCall's JudgeError), so there is nothing to align

    def run(self, calls: Sequence[Call], on_reply: OnReply | None = None) -> list[Reply]:
        futures = {self._pool.submit(self._one, call): i for i, call in enumerate(calls)}
        answered: dict[int, Reply] = {}
        try:
            for future in as_completed(futures):  # in this thread, as each request returns
                i = futures[future]
                answered[i] = future.result()
                if on_reply is not None:
                    on_reply(i, answered[i])
        finally:
            for future in futures:
                future.cancel()  # an interrupted round sends no more requests
        replies = [answered[i] for i in range(len(calls))]
        faults = [r for r in replies if isinstance(r, ServerCallError) and (r.server_fault or r.refuses_every_request)]
        if faults:  # the answered calls are cached by now
            raise self._gone(faults[0])
        return replies  # a request the server refused as such (another 4xx) skips its sample, with the reason

    def close(self) -> None:
        # Not waiting: a run stopped by Ctrl-C must not wait for the requests still in flight.
        self._pool.shutdown(wait=False, cancel_futures=True)

    # ---- calls -----------------------------------------------------------------------------------

    def _count(self, text: str) -> int:
        count = self._counts.get(text)
        if count is None:
            count = self._tokenize(text)
            if len(self._counts) > 50_000:  # the memo serves the windowing of one window of samples
                self._counts.clear()
            self._counts[text] = count
        return count

    def _prompt_tokens(self, text: str) -> int:
        turns = json.loads(text)
        return sum(self._count(t["content"]) for t in turns) + self._per_message * len(turns)

    def _unless_gone(self, count: Callable[[str], int], text: str) -> int:
        """Token counts asked for between rounds (the facade's windowing): every answer so far is cached,
        so a server gone here stops the run and loses nothing."""
        try:
            return count(text)
        except ServerCallError as exc:
            if exc.server_fault or exc.refuses_every_request:
                raise self._gone(exc) from None
            raise

    def _gone(self, error: ServerCallError) -> JudgeServerError:
        if error.refuses_every_request:
            return JudgeServerError(f"judge server {self.url} refused the run's requests ({error}): check the API key "
                                    f"(--judge-api-key-env) and the URL; the calls it finished are in the judge cache, so "
                                    f"once it accepts them the same command resumes without repeating them")
        what = "stopped answering" if error.unreachable else "failed"
        return JudgeServerError(f"judge server {self.url} {what} ({error}, after {self._api.retries} retries); the calls "
                                f"it finished are in the judge cache: once it answers again, the same command resumes "
                                f"without repeating them")

    def _one(self, call: Call) -> Reply:
        try:
            if isinstance(call, ContinuationCall):
                raise JudgeError(f"prompt '{call.name}' reads the log-probability of each token of a given answer, "
                                 "which a chat-completions endpoint does not return; score it with the in-process "
                                 "judge (without --judge-url)")
            return self._json(call) if isinstance(call, JsonCall) else self._distribution(call)
        except JudgeError as exc:
            return exc

    def _json(self, call: JsonCall) -> JsonReply:
        started = time.perf_counter()
        n_prompt = self._prompt_tokens(call.text)
        if n_prompt > self.n_ctx - call.max_tokens:
            raise prompt_too_long(call.name, n_prompt, self.n_ctx, call.max_tokens)
        out = self._chat(json.loads(call.text), self._constraint(self.structured, call.schema), call.max_tokens)
        choice = _choice(out, call.name)
        raw = _content(choice)
        value, done = None, False
        if choice.get("finish_reason") != "length":
            try:
                value, done = json.loads(raw), True
            except ValueError:
                pass
        stats = CallStats(1, _usage(out, "prompt_tokens", n_prompt), _cached(out), _usage(out, "completion_tokens", 0),
                          time.perf_counter() - started, 0)
        return JsonReply(raw, value, done, stats)

    def _distribution(self, call: DistributionCall) -> DistributionReply:
        started = time.perf_counter()
        n_prompt = self._prompt_tokens(call.text)
        if n_prompt > self.n_ctx - 1:
            raise prompt_too_long(call.name, n_prompt, self.n_ctx, 1)
        texts = self._texts_for(call.groups)
        out = self._chat(json.loads(call.text), {"logprobs": True, "top_logprobs": self.top_logprobs}, 1)
        top = _top_logprobs(out)
        if not top:
            raise JudgeError(f"judge server gave no top_logprobs for the first token of prompt '{call.name}'")
        log_groups = {name: logsumexp([lp for token, lp in top if token in words]) for name, words in texts.items()}
        if all(v == -math.inf for v in log_groups.values()):
            raise JudgeError(f"none of the answer words of prompt '{call.name}' is among the server's top "
                             f"{self.top_logprobs} first tokens (it starts with {top[0][0]!r})")
        stats = CallStats(1, _usage(out, "prompt_tokens", n_prompt), _cached(out), 0, time.perf_counter() - started, 0)
        return DistributionReply(log_groups, 0.0, stats)

    def _chat(self, messages: Sequence[Mapping[str, str]], extra: Mapping[str, Any], max_tokens: int,
              retry: Retry = True) -> dict[str, Any]:
        body = {"model": self.model, "messages": list(messages), "max_tokens": max_tokens, "seed": self.seed,
                **GREEDY, **extra}
        out = self._api.post("/chat/completions", body, retry=retry)
        if not isinstance(out, dict):
            raise JudgeError(f"judge server answered {type(out).__name__} instead of a chat completion")
        return out

    def _constraint(self, mode: str, schema: Mapping[str, Any]) -> dict[str, Any]:
        if mode == "json_schema":
            return {"response_format": {"type": "json_schema",
                                        "json_schema": {"name": "localeval", "strict": True, "schema": schema}}}
        from .grammar import strict_json_gbnf

        text = json.dumps(schema)  # the schema's own key order, as the in-process grammar (llama_sequential)
        if text not in self._grammars:
            self._grammars[text] = strict_json_gbnf(text)
        return {"grammar": self._grammars[text]}

    def _texts_for(self, groups: Mapping[str, tuple[str, ...]]) -> dict[str, frozenset[str]]:
        """Token texts that count for each answer: its spellings that are one token of the served model
        (the in-process rule: single-token spellings; a text in two answers counts for neither)."""
        key = tuple(sorted((k, tuple(v)) for k, v in groups.items()))
        if key in self._answer_texts:
            return self._answer_texts[key]
        found: dict[str, set[str]] = {}
        for name, words in groups.items():
            variants = set(spellings(words))
            if self.tokenizer is not None:
                variants = {v for v in variants if self._count(v) == 1}
                if not variants:
                    raise JudgeError(f"answer '{name}' is not a single token in the served model's vocabulary in "
                                     f"any spelling; the server judge reads whole tokens, so use other answer words")
            found[name] = variants
        texts = {name: frozenset(own) for name, own in own_tokens(found).items()}
        self._answer_texts[key] = texts
        return texts

    # ---- what the server offers, probed once -----------------------------------------------------

    def _pick_model(self, wanted: str | None) -> tuple[str, dict[str, Any], int | None]:
        try:
            listing = self._api.get("/models")
        except ServerCallError as exc:
            if exc.unreachable:
                raise JudgeServerError(f"judge server {self.url} is unreachable: {exc}") from None
            if wanted:
                return wanted, {}, None
            raise JudgeServerError(f"judge server {self.url} does not list its models ({exc}); name one with --judge-model") from None
        entries = [e for e in (listing or {}).get("data", []) if isinstance(e, dict) and isinstance(e.get("id"), str)]
        ids = [e["id"] for e in entries]
        if wanted is None:
            if len(ids) != 1:
                served = ", ".join(ids) or "none"
                raise OptionError(f"judge server {self.url} serves {len(ids)} models ({served}); choose one with --judge-model")
            wanted = ids[0]
        elif ids and wanted not in ids:
            raise OptionError(f"--judge-model '{wanted}' is not served by {self.url}; it serves: {', '.join(ids)}")
        entry = next((e for e in entries if e["id"] == wanted), {})
        info = {k: entry[k] for k in ("root", "meta") if k in entry}
        context = entry.get("max_model_len")
        return wanted, info, context if isinstance(context, int) else None

    def _slot_context(self) -> int | None:
        """llama-server's context per slot (its /props); other servers have no such endpoint."""
        try:
            props = self._root.get("/props", retry=busy)
        except ServerCallError:
            return None
        n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx") if isinstance(props, dict) else None
        return n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else None

    def _find_tokenizer(self) -> tuple[str | None, Callable[[str], int]]:
        for name, path, body in TOKENIZERS:
            try:
                tokens = self._root.post(path, body(self.model, "Hello world"), retry=busy).get("tokens")
                empty = self._root.post(path, body(self.model, ""), retry=busy).get("tokens")
            except (ServerCallError, AttributeError):
                continue
            if isinstance(tokens, list) and isinstance(empty, list) and len(tokens) > len(empty):
                return name, self._endpoint_counter(path, body, len(empty))
        warnings.warn(f"judge server {self.url} has no tokenizer endpoint localeval knows; token counts are estimated "
                      f"(UTF-8 bytes / 2), so a long context may be windowed wrongly", stacklevel=2)
        return None, lambda text: math.ceil(len(text.encode("utf-8")) / 2)

    def _endpoint_counter(self, path: str, body: Callable[[str, str], dict[str, Any]], offset: int) -> Callable[[str], int]:
        """Tokens of `text` without the BOS some endpoints always add (`offset` = tokens of the empty text)."""

        def count(text: str) -> int:
            tokens = self._root.post(path, body(self.model, text)).get("tokens")
            if not isinstance(tokens, list):
                raise JudgeError(f"judge server's {path} answered without a token list")
            return len(tokens) - offset

        return count

    def _find_structured_output(self) -> str:
        refused = []
        for mode in ("json_schema", "grammar"):
            try:
                out = self._chat(PROBE_JSON, self._constraint(mode, PROBE_SCHEMA), 40, retry=busy)
            except ServerCallError as exc:
                if exc.unreachable:
                    raise JudgeServerError(f"judge server {self.url} is unreachable: {exc}") from None
                refused.append(f"{mode}: refused ({exc.status})")
                continue
            content = _content(_choice(out, "probe"))
            try:
                if json.loads(content) == {"probe": "zq7"}:
                    return mode
            except ValueError:
                pass
            refused.append(f"{mode}: ignored")
        raise JudgeServerError(f"judge server {self.url} does not constrain output to a JSON schema "
                               f"(response_format json_schema and the GBNF grammar field: {'; '.join(refused)}); "
                               f"localeval needs one of them for structured answers")

    def _probe_logprobs(self) -> tuple[int, int]:
        """The most first-token top_logprobs the server gives (an error when it gives none), and the chat
        template's tokens per message, measured from the probe's usage."""
        for wanted in TOP_LOGPROBS:
            try:
                out = self._chat(PROBE_SHAPE, {"logprobs": True, "top_logprobs": wanted}, 1, retry=busy)
                break
            except ServerCallError as exc:
                if exc.unreachable or wanted == TOP_LOGPROBS[-1]:
                    raise JudgeServerError(f"judge server {self.url} cannot give log-probabilities ({exc}); "
                                           f"llama-cpp-python's server needs --logits_all true") from None
        top = _top_logprobs(out)
        if len(top) < 2:
            raise JudgeServerError(f"judge server {self.url} returned {len(top)} top_logprobs where {wanted} were asked; "
                                   f"verdicts need the first token's top_logprobs (vLLM: --max-logprobs 20 or more)")
        used = _usage(out, "prompt_tokens", -1)
        if used < 0:
            return wanted, FALLBACK_OVERHEAD
        content = sum(self.count_tokens(m["content"]) for m in PROBE_SHAPE)
        return wanted, max(0, math.ceil((used - content) / len(PROBE_SHAPE))) + 1


def check_url(url: str) -> str:
    """An http(s) URL with a host; trailing slashes dropped."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise OptionError(f"--judge-url '{url}' is not an http(s) URL such as http://gpu-box:8080/v1")
    return url.rstrip("/")


def _choice(out: Mapping[str, Any], name: str) -> dict[str, Any]:
    choices = out.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise JudgeError(f"judge server answered prompt '{name}' without choices")
    return choices[0]


def _top_logprobs(out: Mapping[str, Any]) -> list[tuple[str, float]]:
    """(token text, log-probability) of the first generated token's alternatives, as the server lists them."""
    try:
        first = out["choices"][0]["logprobs"]["content"][0]
        listed = [(str(t["token"]), float(t["logprob"])) for t in first["top_logprobs"]]
    except (KeyError, IndexError, TypeError, ValueError):
        return []
    # -inf is a probability of 0 and adds nothing; NaN and +inf are no probability at all
    return [(token, logprob) for token, logprob in listed if logprob < math.inf]


def _content(choice: Mapping[str, Any]) -> str:
    message = choice.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) else ""


def _usage(out: Mapping[str, Any], key: str, default: int) -> int:
    """A count from the reply's `usage`, or `default` where the server gives none."""
    usage = out.get("usage")
    value = usage.get(key) if isinstance(usage, dict) else None
    return int(value) if isinstance(value, (int, float)) else default


def _cached(out: Mapping[str, Any]) -> int:
    """Prompt tokens the server took from its KV cache, where it says (vLLM, llama-server)."""
    usage, timings = out.get("usage"), out.get("timings")
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    if cached is None and isinstance(timings, dict):
        cached = timings.get("cache_n")
    return int(cached) if isinstance(cached, (int, float)) else 0
