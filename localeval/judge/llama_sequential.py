"""The sequential backend: one `llama_cpp.Llama`, one sequence at a time, the KV cache kept between calls.

Only the tokens after the longest common prefix with the previous call are evaluated. Prompts put the long
shared part (instructions, context) first, so verifying many statements against one context pays for the
context once. The batched engine (llama_batched.py) is the default for more than one sequence in flight.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import JudgeError
from .backend import (Call, CallStats, ContinuationCall, ContinuationReply, DistributionCall, DistributionReply,
                      JsonCall, JsonReply, OnReply, Reply, answer_each, log_softmax_at, prompt_too_long)
from .backends import register_backend
from .grammar import strict_json_gbnf
from .llama_model import JsonDecoding, LlamaModel


@register_backend
class SequentialLlamaBackend(LlamaModel):
    """Sequential: one call after another on llama-cpp-python's own context; not thread-safe (the KV cache
    is shared state between calls). `reuse_prefix=False` starts every call from an empty KV cache; it
    exists to measure what prefix reuse saves."""

    name = "sequential"
    engine = "llama.cpp in-process"

    def __init__(self, model_path: Path, model_sha256: str, *, reuse_prefix: bool = True, **options: Any) -> None:
        super().__init__(model_path, model_sha256, **options)
        self.reuse_prefix = reuse_prefix
        self._grammars: dict[str, Any] = {}

    def run(self, calls: Sequence[Call], on_reply: OnReply | None = None) -> list[Reply]:
        return answer_each(calls, self._answer, on_reply)

    def _answer(self, call: Call) -> Reply:
        try:
            if isinstance(call, JsonCall):
                return self._json(call)
            return self._continuation(call) if isinstance(call, ContinuationCall) else self._distribution(call)
        except RuntimeError as exc:  # llama-cpp-python's "llama_decode returned N": this call fails, not the run
            self.llm.reset()
            raise JudgeError(f"prompt '{call.name}': {exc}") from None

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

    def _continuation(self, call: ContinuationCall) -> ContinuationReply:
        """Decode prompt and continuation in llama.cpp batches of n_batch tokens, logits requested from the
        prompt's last token on (llama-cpp-python's own `eval` gives only a batch's last logits)."""
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
            llm._ctx.decode(llm._batch)
            llm.input_ids[start: start + len(chunk)] = chunk
            llm.n_tokens = start + len(chunk)
            for i in range(len(chunk)):
                if first <= start + i < len(everything) - 1:
                    row = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, i), shape=(n_vocab,))
                    logprobs.append(log_softmax_at(row, everything[start + i + 1], call.name))
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

