"""The batched llama.cpp engine: many sequences per `llama_decode`, continuous batching, shared prefixes.

llama-cpp-python's `Llama` decodes one sequence per call, so a GPU idles between small decodes and on a
CPU every generated token pays for reading all the weights once. llama.cpp itself decodes many
sequences in one call (its `batched` and `parallel` examples, llama-server's slots); generation is
memory-bound, so N sequences cost little more than one. This backend drives llama.cpp's public C API
(as exposed by llama-cpp-python's low-level bindings) directly:

- one context with `parallel` sequences, each with a KV stream of its own; each call runs in a slot (a
  sequence); a slot that finishes takes the next call at once (continuous batching);
- a call whose prompt shares a prefix with what a slot holds (the instructions, the contexts) runs in
  that slot and reuses it: the slot's tail is dropped, as the sequential backend does, and only the
  suffix is decoded. A call whose prefix a busy slot is still decoding waits until it is there, so a
  context is decoded once for all the statements checked against it. Then, on a CPU, a call that reads
  one distribution waits for the slot that holds its prefix: a few rows in a micro-batch cost about as
  much as the same rows one after the other (bench/decode_cost.py), so decoding fewer tokens is the
  gain, and copying a prefix into another slot would overwrite the instructions another prompt keeps
  there (slower on the engine bench: bench/engine_bench.py). Generation is different: from 8 rows on,
  llama.cpp's tiled K-quant matrix multiply takes the micro-batch and a row costs a fraction of one
  decoded alone (bench/decode_cost.py). So with enough sequences
  (SCORING_SLOTS + MIN_LANES) the lowest slots are generation lanes: JSON calls run there side by
  side, each taking the lowest idle lane and a copy of its instructions from wherever they are, so that
  the generating lanes are consecutive sequences, which llama.cpp's equal split keeps in one
  micro-batch; the top slots take the distribution calls as above, at least SCORING_SLOTS of them and
  one per verdict prompt of the round while MIN_LANES lanes remain, so that each prompt keeps its
  instructions in a slot of its own. On a GPU sequences side by side are
  the gain for every call, so the prefix is copied into an idle slot (`llama_memory_seq_cp` between
  streams) and the call starts at once;
- every decode carries, per token in sequence order, its sequence id and position; the last prompt token
  of each call and every generated token request logits; JSON calls sample greedily under a grammar sampler
  of their own, distribution calls read their last logits. A continuation call decodes its prompt and the
  given continuation as one prompt, logits requested from the prompt's last token on (at most
  MAX_OUTPUTS rows a decode, as each row is a vocabulary of floats: a longer answer is read in pieces,
  which round as pieces do, below).

The model, tokenizer, chat template and answer-word ids are shared with the sequential backend
(llama_model.LlamaModel). Per-call seconds are the decode time shared out by tokens, so they add
up to the engine's wall time.

Why a stream per sequence: llama.cpp sums attention over KV cells with SIMD lanes assigned by cell
index, so where a sequence's cells sit among other sequences' cells changes its rounding — which
sequences happen to share a batch would then change the numbers, and a resumed run would not match an
uninterrupted one (measured on the tiny judge: a unified KV cache with prefixes shared by
`llama_memory_seq_cp` moved P(yes) by up to 0.03 against the sequential backend). In a stream of its own
that only ever drops its tail and appends, a sequence's cells sit at positions 0..n-1 exactly as in the
sequential backend, and other sequences' cells never enter its arithmetic. What still can: llama.cpp's
CPU matrix kernels change with the number of rows a micro-batch holds (the tiled kernel from 8 rows), so a
token decoded beside 7 others rounds differently from the same token alone (bench/decode_cost.py: max
|Δlogit| 0.43; beside 1 or 3 others, 0). A setting's numbers repeat exactly, as the schedule is deterministic, but a resumed run (a
different schedule) can round differently from an uninterrupted one. A copy between
streams copies the whole stream, cells in their places, so a call in the copy computes exactly what it
would in the slot it was copied from (tests/test_engine.py). Against the sequential backend the numbers
can still differ in rounding: llama.cpp rounds a piece decoded as a single token differently from one
inside a longer piece, and the backends reuse different prefixes, so a prompt's last piece can differ in
length (bench/engine_bench.py measures it: verdict flips, largest |ΔP|, JSON answers that differ).
"""

from __future__ import annotations

import ctypes
import json
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..errors import JudgeError, OptionError
from .backend import (Call, CallStats, ContinuationCall, ContinuationReply, DistributionCall, JsonCall, OnReply, Reply,
                      log_softmax_at, prompt_too_long)
from .grammar import strict_json_gbnf
from .backends import register_backend
from .llama_model import JsonDecoding, LlamaModel

#: A call waits for a busy slot when that slot's prompt shares this many more tokens with it than any idle
#: slot holds (on a CPU); and a shorter share with an idle slot counts as none when choosing one.
WAIT_FOR_SHARED = 32
#: On a CPU with at least SCORING_SLOTS + MIN_LANES sequences, the lowest-numbered slots are generation lanes
#: (JSON calls only) and the top SCORING_SLOTS slots (more for a round with more verdict prompts, _lanes_for)
#: take the calls that read one distribution. MIN_LANES:
#: llama.cpp's tiled K-quant matrix multiply takes a micro-batch from 8 rows on, where a row costs a fraction
#: of one decoded alone (bench/decode_cost.py); fewer lanes than that would gain nothing.
SCORING_SLOTS = 4
MIN_LANES = 8
#: llama.cpp's LLAMA_MAX_SEQ: the sequence ids one context has.
MAX_SEQUENCES = 256
#: Tokens per llama_decode call (llama.cpp splits it further into micro-batches of N_UBATCH).
N_BATCH = 2048
N_UBATCH = 512
#: Logit rows requested per llama_decode by continuation calls (a row is n_vocab floats: 0.6 MB for Qwen).
MAX_OUTPUTS = 256
#: llama.cpp's llama_token_data as a numpy record (token id, logit, probability).
_TOKEN_DATA = [("id", "<i4"), ("logit", "<f4"), ("p", "<f4")]


@dataclass
class _Job:
    index: int
    call: Call
    tokens: list[int]
    #: Positions whose logits the call reads: [outputs_from, outputs_to) (the last prompt token, or for a
    #: continuation every position from the prompt's last token to the one before the continuation's last).
    outputs_from: int
    outputs_to: int
    logprobs: list[float] = field(default_factory=list)  # a continuation's, so far
    reused: int = 0
    fed: int = 0  # prompt tokens in the slot's KV
    seconds: float = 0.0
    decoding: JsonDecoding | None = None
    sampler: Any = None
    pending: int | None = None  # a sampled token to feed next


@dataclass
class _Slot:
    seq: int
    kv: list[int] = field(default_factory=list)  # the tokens this sequence holds, at positions 0..len-1
    job: _Job | None = None
    used: int = 0  # when the slot last finished a call (a counter), to reuse the stalest one first


@register_backend
class BatchedLlamaBackend(LlamaModel):
    """Implements JudgeBackend; `parallel` sequences in flight. Not thread-safe."""

    name = "batched"
    engine = "llama.cpp batched"

    @classmethod
    def configured(cls, config: Any) -> dict[str, Any]:
        return {"parallel": config.parallel}

    @classmethod
    def check(cls, config: Any) -> None:
        super().check(config)
        cls.check_options(config)

    @classmethod
    def check_options(cls, config: Any) -> None:
        """Before any model loads: llama.cpp refuses more sequences in one context than it has ids for, and
        would say only that the context failed."""
        _check_sequences(config.parallel)

    def __init__(self, model_path: Path, model_sha256: str, *, parallel: int = 4, n_ctx: int = 4096,
                 copy_prefixes: bool | None = None, scoring_slots: int = SCORING_SLOTS, **options: Any) -> None:
        import llama_cpp as lc

        if parallel < 1:
            raise JudgeError(f"--parallel must be at least 1, got {parallel}")
        _check_sequences(parallel)
        # llama-cpp-python's own context only serves tokenizing; keep it small.
        super().__init__(model_path, model_sha256, n_ctx=n_ctx, llama_n_ctx=64, **options)
        self.parallel = parallel
        #: Whether a call copies a prefix that a busy slot holds into an idle slot rather than wait for that
        #: slot (default: on a GPU; see the module docstring).
        self.copy_prefixes = self.n_gpu_layers != 0 if copy_prefixes is None else copy_prefixes
        params = type(self.llm.context_params).from_buffer_copy(self.llm.context_params)  # same settings as Llama's
        params.n_ctx = n_ctx * parallel
        params.n_batch, params.n_ubatch = N_BATCH, N_UBATCH
        params.n_seq_max = parallel
        params.kv_unified = False
        with self.quiet():
            self._ctx = lc.llama_init_from_model(self.llm.model, params)
        if not self._ctx:  # no memory for the KV streams: a setting to change, not a sample to skip
            fewer = ", or offload fewer layers (--gpu-layers, LOCALEVAL_GPU_LAYERS)" if self.n_gpu_layers else ""
            raise OptionError(f"llama.cpp could not create a context for {parallel} sequences of {n_ctx} tokens"
                              f"{_kv_size(model_path, parallel * n_ctx)}; lower --parallel or --n-ctx{fewer}")
        self._mem = lc.llama_get_memory(self._ctx)
        self._batch = lc.llama_batch_init(N_BATCH, 0, 1)
        self._vocab = lc.llama_model_get_vocab(self.llm.model)
        self._n_vocab = lc.llama_vocab_n_tokens(self._vocab)
        self._slots = [_Slot(seq) for seq in range(parallel)]
        lanes = parallel - scoring_slots  # the fewest verdict slots on a CPU (SCORING_SLOTS; a bench sets others)
        #: The most generation lanes (0: any call takes any slot); a round of calls may use fewer (_lanes_for).
        self.lanes = lanes if not self.copy_prefixes and lanes >= MIN_LANES else 0
        #: This round's: slots 0.._lanes-1 take the JSON calls, the rest the distribution calls.
        self._lanes = self.lanes
        self._finished = 0
        self._fresh: list[int] = []  # calls whose reply is final but not yet handed to run's on_reply
        self._grammars: dict[str, Any] = {}

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "parallel": self.parallel, "lanes": self.lanes}

    def batching(self) -> dict[str, Any]:
        # a prefix copied from another sequence's cells or decoded again is a differently batched computation
        return {"parallel": self.parallel, "copy_prefixes": self.copy_prefixes}

    def close(self) -> None:
        import llama_cpp as lc

        for sampler in self._grammars.values():
            lc.llama_sampler_free(sampler)
        self._grammars.clear()
        if self._ctx:
            lc.llama_batch_free(self._batch)
            lc.llama_free(self._ctx)
            self._ctx = None
        super().close()

    # ---- scheduling ------------------------------------------------------------------------------

    def run(self, calls: Sequence[Call], on_reply: OnReply | None = None) -> list[Reply]:
        import llama_cpp as lc

        replies: list[Reply | None] = [None] * len(calls)
        self._fresh.clear()
        self._lanes = self._lanes_for(calls)
        queue: deque[_Job] = deque()
        for i, call in enumerate(calls):
            try:
                queue.append(self._job(i, call))
            except JudgeError as exc:
                self._reply(replies, i, exc)
        try:
            while True:
                if on_reply is not None:
                    for i in self._fresh:
                        on_reply(i, replies[i])  # type: ignore[arg-type]
                self._fresh.clear()
                if not queue and not any(slot.job for slot in self._slots):
                    return replies  # type: ignore[return-value]
                self._assign(queue)
                self._step(replies)
        finally:  # on the way out of an interrupted round, free the slots (their KV stays valid) and samplers
            for slot in self._slots:
                if slot.job is not None:
                    self._finish(slot, slot.job)
            for job in queue:
                if job.sampler is not None:
                    lc.llama_sampler_free(job.sampler)

    def _lanes_for(self, calls: Sequence[Call]) -> int:
        """Generation lanes for a round: a verdict slot for each verdict prompt in it beyond SCORING_SLOTS,
        taken from the lanes down to MIN_LANES. With fewer slots than verdict prompts, their instructions
        take turns in the slots and are decoded again each time (every judge metric at once asks five);
        a round with only a few such prompts (the Ragas set) keeps every lane for generating."""
        if not self.lanes:
            return 0
        prompts = len({call.name for call in calls if not isinstance(call, JsonCall)})
        return min(self.lanes, max(MIN_LANES, self.parallel - prompts))

    def _reply(self, replies: list[Reply | None], index: int, reply: Reply) -> None:
        replies[index] = reply
        self._fresh.append(index)

    def _job(self, index: int, call: Call) -> _Job:
        tokens = self.tokens(call.text)
        if isinstance(call, ContinuationCall):
            tail = self.continuation_tokens(call, tokens)
            return _Job(index, call, tokens + tail, len(tokens) - 1, len(tokens) + len(tail) - 1)
        room = call.max_tokens if isinstance(call, JsonCall) else 1
        if len(tokens) > self.n_ctx - room:
            raise prompt_too_long(call.name, len(tokens), self.n_ctx, room)
        job = _Job(index, call, tokens, len(tokens) - 1, len(tokens))
        if isinstance(call, JsonCall):
            job.decoding = JsonDecoding(self, tokens, call.max_tokens)
            job.sampler = self._sampler(call.schema)
        else:
            self.ids_for(call.groups)  # an answer word without a token of its own fails before any work
        return job

    def _assign(self, queue: deque[_Job]) -> None:
        """Give idle slots the first queued jobs that need not wait for a busy slot's prefix; a job whose
        slots are all busy waits too. Where a prefix is held by another slot than the one the job takes (with
        copy_prefixes; and for a generation lane, which copies the instructions from wherever they are), it
        is copied in."""
        import llama_cpp as lc

        waiting: list[_Job] = []
        while queue and any(slot.job is None for slot in self._slots):
            job = queue.popleft()
            lane = self._lanes > 0 and isinstance(job.call, JsonCall)
            pool = self._slots[:self._lanes] if lane else self._slots[self._lanes:]
            idle = [slot for slot in pool if slot.job is None]
            if not idle:
                waiting.append(job)
                continue
            limit = job.outputs_from  # the first token whose logits are read is always decoded, for fresh logits
            shares = {slot.seq: _common_prefix(slot.kv, job.tokens, limit) for slot in self._slots}
            # A lane: the lowest idle one, so that the lanes generating side by side are consecutive sequences,
            # which llama.cpp puts in one micro-batch (its equal split takes runs of consecutive ids).
            slot = idle[0] if lane else self._best_idle(idle, shares)
            shared = shares[slot.seq]
            source, held = self._holder(shares) if self.copy_prefixes or lane else (slot, shared)
            if self._busy_share(job.tokens, limit) > max(shared, held) + WAIT_FOR_SHARED:
                waiting.append(job)  # a busy slot is decoding this prefix: take it (or a copy) once it is there
                continue
            if held > shared + WAIT_FOR_SHARED:
                self._copy(source, slot)
                shared = held
            lc.llama_memory_seq_rm(self._mem, slot.seq, shared, -1)
            slot.kv = slot.kv[:shared]
            job.reused = job.fed = shared
            slot.job = job
        queue.extendleft(reversed(waiting))

    def _best_idle(self, idle: list[_Slot], shares: dict[int, int]) -> _Slot:
        """The idle slot holding the longest prefix of a call's tokens (`shares`: each slot's, by sequence id);
        without one, the idle slot used least recently.

        A share shorter than WAIT_FOR_SHARED (the chat template's first tokens) counts as none: taking a
        slot for it would drop the instructions another prompt left there, which that prompt's next calls
        (the next window's) would then decode again. Least recently used first, each prompt's instructions
        stay in a slot of their own while there are as many slots as prompts."""
        return max(idle, key=lambda slot: (shares[slot.seq] if shares[slot.seq] >= WAIT_FOR_SHARED else 0, -slot.used))

    def _holder(self, shares: dict[int, int]) -> tuple[_Slot, int]:
        """The slot whose decoded KV holds the longest prefix of a call's tokens, busy or not."""
        best = max(self._slots, key=lambda slot: shares[slot.seq])
        return best, shares[best.seq]

    def _copy(self, source: _Slot, target: _Slot) -> None:
        """Make `target`'s stream a copy of `source`'s (llama.cpp copies the whole stream before the next
        decode; the caller then drops the tail it does not share). The cells keep their places, so the copy
        computes exactly what `source` would for the same suffix (tests/test_engine.py)."""
        import llama_cpp as lc

        lc.llama_memory_seq_cp(self._mem, source.seq, target.seq, -1, -1)
        target.kv = list(source.kv)

    def _busy_share(self, tokens: list[int], limit: int) -> int:
        """The longest prefix of `tokens` (up to `limit`) that a busy slot's prompt holds (or will hold once
        decoded)."""
        return max((_common_prefix(slot.job.tokens, tokens, limit) for slot in self._slots if slot.job is not None),
                   default=0)

    # ---- one decode ------------------------------------------------------------------------------

    def _step(self, replies: list[Reply | None]) -> None:
        import llama_cpp as lc

        batch = self._batch
        outputs: list[tuple[int, _Slot, int]] = []  # (row in the batch, slot, position in the sequence)
        share: dict[int, int] = {}
        n = 0
        # In sequence order, so that llama.cpp's equal split (a micro-batch takes a run of consecutive
        # sequence ids, the same number of tokens of each) puts every lane's generated token in one
        # micro-batch; room is kept for the generated tokens of later slots.
        generating = sum(slot.job is not None and slot.job.pending is not None for slot in self._slots)
        for slot in self._slots:
            job = slot.job
            if job is None:
                continue
            if job.pending is not None:  # a generated token: one
                self._put(n, job.pending, len(slot.kv), slot.seq, True)
                slot.kv.append(job.pending)
                job.pending = None
                outputs.append((n, slot, len(slot.kv) - 1))
                share[slot.seq] = 1
                n += 1
                generating -= 1
                continue
            take = min(len(job.tokens) - job.fed, N_BATCH - generating - n)  # prompt tokens, as many as fit
            if isinstance(job.call, ContinuationCall):  # and no more logit rows than MAX_OUTPUTS in all
                first = max(job.fed, job.outputs_from)
                if min(job.fed + take, job.outputs_to) - first > MAX_OUTPUTS - len(outputs):
                    take = first + MAX_OUTPUTS - len(outputs) - job.fed
            if take <= 0:
                continue
            for offset in range(take):
                position = job.fed + offset
                wanted = job.outputs_from <= position < job.outputs_to
                self._put(n, job.tokens[position], position, slot.seq, wanted)
                if wanted:
                    outputs.append((n, slot, position))
                n += 1
            slot.kv.extend(job.tokens[job.fed: job.fed + take])
            job.fed += take
            share[slot.seq] = take
        if n == 0:
            return
        batch.n_tokens = n
        started = time.perf_counter()
        code = lc.llama_decode(self._ctx, batch)
        elapsed = time.perf_counter() - started
        for slot in self._slots:
            if slot.job is not None and slot.seq in share:
                slot.job.seconds += elapsed * share[slot.seq] / n
        if code != 0:
            self._fail_all(replies, f"llama_decode failed with code {code} (KV cache full?); lower --parallel")
            return
        for index, slot, position in outputs:
            if slot.job is not None:  # not ended by an earlier row's error in this decode
                self._output(index, slot, position, replies)

    def _put(self, i: int, token: int, position: int, seq: int, logits: bool) -> None:
        batch = self._batch
        batch.token[i] = token
        batch.pos[i] = position
        batch.n_seq_id[i] = 1
        batch.seq_id[i][0] = seq
        batch.logits[i] = 1 if logits else 0

    def _output(self, index: int, slot: _Slot, position: int, replies: list[Reply | None]) -> None:
        import llama_cpp as lc
        import numpy as np

        job = slot.job
        assert job is not None
        try:
            if isinstance(job.call, ContinuationCall):
                row = np.ctypeslib.as_array(lc.llama_get_logits_ith(self._ctx, index), shape=(self._n_vocab,))
                job.logprobs.append(log_softmax_at(row, job.tokens[position + 1], job.call.name))
                if position == job.outputs_to - 1:
                    stats = CallStats(1, len(job.tokens), job.reused, 0, job.seconds, 0)
                    self._reply(replies, job.index, ContinuationReply(tuple(job.logprobs), stats))
                    self._finish(slot, job)
                return
            if isinstance(job.call, DistributionCall):
                pointer = lc.llama_get_logits_ith(self._ctx, index)
                logits = np.ctypeslib.as_array(pointer, shape=(self._n_vocab,)).copy()
                self._reply(replies, job.index, self.distribution(job.call, logits, len(job.tokens), job.reused, job.seconds))
                self._finish(slot, job)
                return
            token = self._greedy(job.sampler, index)
            assert job.decoding is not None
            if job.decoding.feed(token):
                self._reply(replies, job.index, job.decoding.reply(job.reused, job.seconds))
                self._finish(slot, job)
            else:
                job.pending = token
        except JudgeError as exc:
            self._reply(replies, job.index, exc)
            self._finish(slot, job)

    def _finish(self, slot: _Slot, job: _Job) -> None:
        """Free the slot; its KV stays, for later calls to share."""
        import llama_cpp as lc

        if job.sampler is not None:
            lc.llama_sampler_free(job.sampler)
        slot.job = None
        self._finished += 1
        slot.used = self._finished

    def _fail_all(self, replies: list[Reply | None], message: str) -> None:
        import llama_cpp as lc

        for slot in self._slots:
            if slot.job is not None:
                self._reply(replies, slot.job.index, JudgeError(message))
                self._finish(slot, slot.job)
            lc.llama_memory_seq_rm(self._mem, slot.seq, -1, -1)
            slot.kv = []

    def _sampler(self, schema: Any) -> Any:
        """A fresh grammar sampler for the schema (cloned from one parsed per schema)."""
        import llama_cpp as lc

        text = json.dumps(schema)
        if text not in self._grammars:
            grammar = lc.llama_sampler_init_grammar(self._vocab, strict_json_gbnf(text).encode("utf-8"), b"root")
            if not grammar:
                raise JudgeError("llama.cpp could not parse the JSON grammar of a prompt's schema")
            self._grammars[text] = grammar
        return lc.llama_sampler_clone(self._grammars[text])

    def _greedy(self, grammar: Any, index: int) -> int:
        """The most likely token the grammar allows, then advance the grammar past it.

        Checking every token of the vocabulary against the grammar costs more than the decode step of a
        small model on a CPU (Qwen has 151k tokens). The unconstrained best token is allowed
        almost always, so check it alone first, as llama.cpp's own common sampler does, and check the
        whole vocabulary only when it is refused. The pick is the same either way: the best allowed token,
        the first of equals, as llama.cpp's greedy sampler picks it."""
        import llama_cpp as lc
        import numpy as np

        logits = np.ctypeslib.as_array(lc.llama_get_logits_ith(self._ctx, index), shape=(self._n_vocab,))
        best = int(np.argmax(logits))
        one = (lc.llama_token_data * 1)(lc.llama_token_data(best, float(logits[best]), 0.0))
        lc.llama_sampler_apply(grammar, ctypes.byref(lc.llama_token_data_array(one, 1, -1, False)))
        if one[0].logit == -np.inf:
            data = np.zeros(self._n_vocab, dtype=_TOKEN_DATA)
            data["id"], data["logit"] = np.arange(self._n_vocab), logits
            array = lc.llama_token_data_array(data.ctypes.data_as(lc.llama_token_data_p), self._n_vocab, -1, False)
            lc.llama_sampler_apply(grammar, ctypes.byref(array))
            best = int(np.argmax(data["logit"]))
            if data["logit"][best] == -np.inf:
                raise JudgeError("the JSON grammar allows no next token; the prompt's schema may be broken")
        lc.llama_sampler_accept(grammar, best)
        return best


def _check_sequences(parallel: int) -> None:
    if parallel > MAX_SEQUENCES:
        raise OptionError(f"--parallel {parallel}: llama.cpp runs at most {MAX_SEQUENCES} sequences in one context; "
                          f"give --parallel {MAX_SEQUENCES} or fewer")


def _kv_size(model_path: Path, tokens: int) -> str:
    """' (their KV cache would take N GB)', from the GGUF header (if it says): a user who sees the size
    knows how far to lower --parallel or --n-ctx."""
    from .gguf import read_header

    per_token = read_header(model_path).kv_bytes_per_token
    return f" (their KV cache would take {per_token * tokens / 1e9:.1f} GB)" if per_token else ""


def _common_prefix(a: Sequence[int], b: Sequence[int], limit: int) -> int:
    n = min(len(a), len(b), limit)
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i

