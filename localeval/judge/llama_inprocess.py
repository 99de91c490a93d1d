"""The in-process llama.cpp backends' shared model part, and the sequential backend: one
`llama_cpp.Llama`, one sequence at a time, the KV cache kept between calls.

Every call into llama-cpp-python's private attributes is in this module (the batched engine in
llama_batched.py uses only llama.cpp's public C API), so an upgrade of the pinned version is checked
here and there and nowhere else.

Prompts are tokenized here, and the sequential backend keeps the KV cache of the previous call: only the
tokens after the longest common prefix are evaluated. Prompts put the long shared part (instructions,
context) first, so verifying many statements against one context pays for the context once.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..errors import JudgeError, ModelError
from .backend import (Call, CallStats, ContinuationCall, ContinuationReply, DistributionCall, DistributionReply,
                      JsonCall, JsonReply, OnReply, Reply, finite_logits, log_softmax_at, logsumexp, own_tokens,
                      prompt_too_long, spellings)
from .grammar import strict_json_gbnf
from .llama_server import model_params

# Used only when a GGUF file carries no chat template; both registered judges use ChatML.
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


class LlamaModel:
    """A GGUF model loaded by llama-cpp-python: tokenizer, chat template, answer-word ids, grammars.

    `extra_buffers=False` turns off ggml's extra CPU buffer types (AMX and weight repacking): on CPUs that
    advertise AMX inside some VMs, ggml's AMX kernels die with SIGILL on the first eval."""

    engine = ""

    def __init__(self, model_path: Path, model_sha256: str, *, n_ctx: int = 4096, n_threads: int = 1,
                 n_gpu_layers: int = 0, seed: int = 0, verbose: bool = False, extra_buffers: bool = False,
                 llama_n_ctx: int | None = None) -> None:
        from llama_cpp import Llama

        self.model_path, self.model_sha256 = model_path, model_sha256
        self.n_ctx, self.seed = n_ctx, seed
        self.n_threads, self.n_gpu_layers, self.verbose = n_threads, n_gpu_layers, verbose
        try:
            with model_params(use_extra_bufts=extra_buffers):
                self.llm = Llama(model_path=str(model_path), n_ctx=llama_n_ctx or n_ctx, n_threads=n_threads,
                                 n_threads_batch=n_threads, n_gpu_layers=n_gpu_layers, seed=seed, verbose=verbose,
                                 logits_all=False)
        except ValueError as exc:  # llama-cpp-python's "Failed to load model from file: ..."
            raise ModelError(f"judge {model_path} could not be loaded by llama.cpp ({exc}); the file may be "
                             f"truncated or of an unsupported type: check it with `localeval models verify`") from None
        self._formatter = self._chat_formatter()
        self._answer_ids: dict[tuple[tuple[str, tuple[str, ...]], ...], dict[str, list[int]]] = {}

    # ---- the protocol's model part ---------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        import llama_cpp

        return {"model_sha256": self.model_sha256,
                "decoding": {"temperature": 0.0, "seed": self.seed, "llama_cpp": llama_cpp.__version__}}

    def describe(self) -> dict[str, Any]:
        return {"judge_model": self.model_path.name, "judge_sha256": self.model_sha256, "engine": self.engine}

    def render(self, messages: Sequence[Mapping[str, str]]) -> str:
        return self._formatter(messages=[dict(m) for m in messages]).prompt

    def count_tokens(self, text: str) -> int:
        return len(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def prompt_tokens(self, text: str) -> int:
        return len(self.tokens(text))

    def close(self) -> None:
        self.llm.close()

    # ---- shared by both runners ------------------------------------------------------------------

    def tokens(self, text: str) -> list[int]:
        tokens = self.llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)
        bos = self.llm.token_bos()
        if len(tokens) > 1 and tokens[0] == tokens[1] == bos:  # the template already wrote a BOS
            tokens = tokens[1:]
        return tokens

    def ids_for(self, groups: Mapping[str, tuple[str, ...]]) -> dict[str, list[int]]:
        """First-token ids of each group's spellings; single-token spellings win, ids in two groups are dropped."""
        key = tuple(sorted((k, tuple(v)) for k, v in groups.items()))
        if key in self._answer_ids:
            return self._answer_ids[key]
        found: dict[str, set[int]] = {}
        for name, words in groups.items():
            encoded = [self.llm.tokenize(v.encode("utf-8"), add_bos=False, special=False) for v in spellings(words)]
            single = {t[0] for t in encoded if len(t) == 1}
            found[name] = single or {t[0] for t in encoded if t}
        ids = own_tokens(found)
        self._answer_ids[key] = ids
        return ids

    def distribution(self, call: DistributionCall, logits: Any, n_prompt: int, reused: int,
                     seconds: float) -> DistributionReply:
        """The reply for a distribution call from the prompt's last logits (a float32 vocabulary row)."""
        values = finite_logits(logits, call.name)
        ids = self.ids_for(call.groups)
        top = values.max()
        log_groups = {k: logsumexp(values[v], shift=top) for k, v in ids.items()}
        stats = CallStats(1, n_prompt, reused, 0, seconds, 0)
        return DistributionReply(log_groups, logsumexp(values, shift=top), stats)

    def continuation_tokens(self, call: ContinuationCall, prompt: list[int]) -> list[int]:
        """The continuation as plain-text tokens (as a reply's text is tokenized), after checking that prompt
        and continuation fit the context window together."""
        tail = self.llm.tokenize(call.continuation.encode("utf-8"), add_bos=False, special=False)
        if not tail:
            raise JudgeError(f"prompt '{call.name}': the continuation has no tokens to read")
        if len(prompt) + len(tail) > self.n_ctx:
            raise prompt_too_long(call.name, len(prompt), self.n_ctx, len(tail))
        return tail

    def token_texts(self, text: str) -> list[str]:
        """The text each token adds, so that joined they are the text. A character whose UTF-8 bytes span
        several tokens (common in Chinese) is added by the token that completes it; those before add ''."""
        texts: list[str] = []
        pending = b""
        for token in self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False):
            pending += self.llm.detokenize([token])
            try:
                texts.append(pending.decode("utf-8"))
                pending = b""
            except UnicodeDecodeError:
                texts.append("")
        return texts

    def is_end(self, token: int) -> bool:
        import llama_cpp

        return bool(llama_cpp.llama_vocab_is_eog(llama_cpp.llama_model_get_vocab(self.llm.model), token))

    def _chat_formatter(self) -> Any:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        def text_of(token: int) -> str:
            return self.llm.detokenize([token], special=True).decode("utf-8", "replace") if token >= 0 else ""

        template = self.llm.metadata.get("tokenizer.chat_template") or CHATML
        return Jinja2ChatFormatter(template=template, eos_token=text_of(self.llm.token_eos()),
                                   bos_token=text_of(self.llm.token_bos()), add_generation_prompt=True)


class JsonDecoding:
    """The stopping rule of greedy JSON generation, shared by both runners: stop at an end-of-generation
    token, as soon as the text parses as a closed object or array, or at max_tokens."""

    def __init__(self, model: LlamaModel, prompt: list[int], max_tokens: int) -> None:
        self.model, self.prompt, self.max_tokens = model, prompt, max_tokens
        self.out: list[int] = []
        self.raw, self.value, self.done, self.finished = "", None, False, False

    def feed(self, token: int) -> bool:
        """Take the next generated token; True when generation is over."""
        if self.model.is_end(token):
            try:  # a root that is not an object or array ends only here
                self.value, self.done = json.loads(self.raw), True
            except ValueError:
                pass
            self.finished = True
            return True
        self.out.append(token)
        self.raw = self.model.llm.detokenize(self.out, prev_tokens=self.prompt).decode("utf-8", errors="replace")
        if self.raw.rstrip().endswith(("}", "]")):
            try:
                self.value, self.done = json.loads(self.raw), True
                self.finished = True
                return True
            except ValueError:
                pass
        self.finished = len(self.out) >= self.max_tokens
        return self.finished

    def reply(self, reused: int, seconds: float) -> JsonReply:
        stats = CallStats(1, len(self.prompt), reused, len(self.out), seconds, 0)
        return JsonReply(self.raw, self.value, self.done, stats)


class LlamaCppBackend(LlamaModel):
    """Sequential: one call after another on llama-cpp-python's own context; not thread-safe (the KV cache
    is shared state between calls). `reuse_prefix=False` starts every call from an empty KV cache; it
    exists to measure what prefix reuse saves."""

    engine = "llama.cpp in-process"

    def __init__(self, model_path: Path, model_sha256: str, *, reuse_prefix: bool = True, **options: Any) -> None:
        super().__init__(model_path, model_sha256, **options)
        self.reuse_prefix = reuse_prefix
        self._grammars: dict[str, Any] = {}

    def run(self, calls: Sequence[Call], on_reply: OnReply | None = None) -> list[Reply]:
        replies: list[Reply] = []
        for i, call in enumerate(calls):
            try:
                reply: Reply = (self._json(call) if isinstance(call, JsonCall) else self._continuation(call)
                                if isinstance(call, ContinuationCall) else self._distribution(call))
            except JudgeError as exc:
                reply = exc
            replies.append(reply)
            if on_reply is not None:
                on_reply(i, reply)
        return replies

    def _json(self, call: JsonCall) -> JsonReply:
        started = time.perf_counter()
        tokens = self.tokens(call.text)
        if len(tokens) > self.n_ctx - call.max_tokens:
            raise prompt_too_long(call.name, len(tokens), self.n_ctx, call.max_tokens)
        reused = self._reuse_prefix(tokens)
        decoding = JsonDecoding(self, tokens, call.max_tokens)
        for token in self.llm.generate(tokens[reused:], temp=0.0, repeat_penalty=1.0, reset=False,
                                       grammar=self._grammar(call.schema)):
            if decoding.feed(token):
                break
        return decoding.reply(reused, time.perf_counter() - started)

    def _distribution(self, call: DistributionCall) -> DistributionReply:
        import llama_cpp
        import numpy as np

        started = time.perf_counter()
        tokens = self.tokens(call.text)
        if len(tokens) > self.n_ctx - 1:
            raise prompt_too_long(call.name, len(tokens), self.n_ctx, 1)
        self.ids_for(call.groups)  # an answer word without a token of its own fails before any work
        reused = self._reuse_prefix(tokens)
        self.llm.eval(tokens[reused:])
        pointer = llama_cpp.llama_get_logits_ith(self.llm.ctx, -1)
        logits = np.ctypeslib.as_array(pointer, shape=(self.llm.n_vocab(),)).copy()
        return self.distribution(call, logits, len(tokens), reused, time.perf_counter() - started)

    def _continuation(self, call: ContinuationCall, read_row: Callable[[Any, int, str], Any] = log_softmax_at,
                      ) -> ContinuationReply:
        """Decode prompt and continuation in llama.cpp batches of n_batch tokens, logits requested from the
        prompt's last token on (llama-cpp-python's own `eval` gives only a batch's last logits).

        `read_row(logits, next_token, name)` reads each continuation token's row: its log-probability for the
        metric; bench/grounding_aggregations.py reads more of the distribution (entropy, rank) the same way."""
        import llama_cpp
        import numpy as np

        started = time.perf_counter()
        prompt = self.tokens(call.text)
        everything = prompt + self.continuation_tokens(call, prompt)
        reused = self._reuse_prefix(prompt)
        llm, first, logprobs, n_vocab = self.llm, len(prompt) - 1, [], self.llm.n_vocab()
        for start in range(reused, len(everything), llm.n_batch):
            chunk = everything[start: start + llm.n_batch]
            llm._batch.set_batch(batch=chunk, n_past=start, logits_all=False)
            for i in range(len(chunk)):
                llm._batch.batch.logits[i] = start + i >= first
            try:
                llm._ctx.decode(llm._batch)
            except RuntimeError as exc:  # "llama_decode returned N"
                llm.reset()
                raise JudgeError(f"prompt '{call.name}': {exc}") from None
            llm.input_ids[start: start + len(chunk)] = chunk
            llm.n_tokens = start + len(chunk)
            for i in range(len(chunk)):
                if first <= start + i < len(everything) - 1:
                    row = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, i), shape=(n_vocab,))
                    logprobs.append(read_row(row, everything[start + i + 1], call.name))
        stats = CallStats(1, len(everything), reused, 0, time.perf_counter() - started, 0)
        return ContinuationReply(tuple(logprobs), stats)

    def _reuse_prefix(self, tokens: list[int]) -> int:
        """Keep the KV cache for the longest common prefix with the previous call; returns its length.

        At least the last prompt token is always re-evaluated so that fresh logits exist for it."""
        from llama_cpp import Llama

        llm = self.llm
        reuse = 0
        if self.reuse_prefix and llm.n_tokens > 0:
            reuse = min(Llama.longest_token_prefix(llm.input_ids[: llm.n_tokens].tolist(), tokens), len(tokens) - 1)
        if reuse > 0 and llm._ctx.kv_cache_seq_rm(-1, reuse, -1):
            llm.n_tokens = reuse
            return reuse
        llm.reset()
        llm._ctx.kv_cache_seq_rm(-1, 0, -1)
        return 0

    def _grammar(self, schema: Mapping[str, Any]) -> Any:
        from llama_cpp import LlamaGrammar

        # The schema's own key order, not a sorted one: the grammar fixes the order in which the model must
        # write the keys, and the prompt's examples show them in the schema's order.
        text = json.dumps(schema)
        if text not in self._grammars:
            self._grammars[text] = LlamaGrammar.from_string(strict_json_gbnf(text), verbose=False)
        return self._grammars[text]

