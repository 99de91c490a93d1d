"""The LLM judge: one local GGUF model (llama-cpp-python) asked three kinds of question.

- `json`: greedy generation under a GBNF grammar built from a JSON schema, so the output always parses;
- `yes_probability` / `choice_distribution`: one forward pass and the next-token distribution over the
  answer words, so scores are probabilities rather than parsed text (no sampling, nothing to parse).

Prompts are rendered with the model's own chat template (GGUF `tokenizer.chat_template`) to one string
that we tokenize ourselves. That lets us keep the KV cache of the previous call and evaluate only the
tokens after the longest common prefix: prompts put the long shared part (instructions, context) first,
so verifying many statements against one context pays for the context once. Every call goes through
the persistent JudgeCache first.
"""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Iterator

from . import models
from .errors import JudgeError
from .judge_cache import JudgeCache
from .output import write_text_atomic
from .prompts import RenderedPrompt, validate
from .text import join_sentences, split_sentences

# Used only when a GGUF file carries no chat template; both registered judges use ChatML.
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
HASH_MEMO = "model_hashes.json"
# llama-cpp-python's schema-to-GBNF converter lets a JSON string hold raw control characters (its `char`
# rule is [^"\\] | escape). A model that writes a newline inside a string then never produces parseable
# JSON, and one that wanders into ``` fences stays inside the string until maxLength. The rule below is
# JSON's own: no raw control characters, so a newline can only come as the escape \n.
LOOSE_CHAR_RULE = 'char ::= [^"\\\\] |'
JSON_CHAR_RULE = 'char ::= [^"\\\\\\x7F\\x00-\\x1F] |'
#: Part of every json call's cache key: cached outputs of an older grammar are not reused.
GRAMMAR_VERSION = 2


@dataclass(frozen=True)
class CallStats:
    """Model work for one call or a sum of calls; `cached_tokens` are prompt tokens not re-evaluated."""

    calls: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    generated_tokens: int = 0
    seconds: float = 0.0
    cache_hits: int = 0

    def __add__(self, other: CallStats) -> CallStats:
        return CallStats(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def __sub__(self, other: CallStats) -> CallStats:
        """The work done between two readings of a running total."""
        return CallStats(*(getattr(self, f.name) - getattr(other, f.name) for f in fields(self)))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def physical_cores() -> int:
    """llama.cpp runs best with one thread per physical core; hyper-threads only add contention."""
    try:
        pairs = set()
        physical = core = None
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "physical id":
                physical = value.strip()
            elif key == "core id":
                core = value.strip()
                pairs.add((physical, core))
        count = len(pairs)
    except OSError:
        count = 0
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(count or max(available // 2, 1), available))


class Judge:
    """Owns one llama_cpp.Llama; not thread-safe (the KV cache is shared state between calls)."""

    def __init__(self, model: str | Path | None = None, *, n_ctx: int = 4096, n_threads: int | None = None,
                 n_gpu_layers: int = 0, seed: int = 0, verbose: bool = False,
                 cache: JudgeCache | str | Path | None = None, model_sha256: str | None = None,
                 reuse_prefix: bool = True, extra_buffers: bool = False) -> None:
        """`model`: a registry name, a .gguf path or None (the default judge). `reuse_prefix=False` starts
        every call from an empty KV cache; it exists to measure what prefix reuse saves.

        `extra_buffers=False` turns off ggml's extra CPU buffer types (AMX and weight repacking): on
        CPUs that advertise AMX inside some VMs, ggml's AMX kernels die with SIGILL on the first eval."""
        from llama_cpp import Llama

        self.cache = cache if isinstance(cache, JudgeCache) else JudgeCache(cache)
        self.model_path = models.resolve(None if model is None else str(model), "judge")
        self.model_sha256 = model_sha256 or self._model_hash(self.model_path)
        self.n_ctx, self.seed, self.reuse_prefix = n_ctx, seed, reuse_prefix
        threads = n_threads or physical_cores()
        with _model_params(use_extra_bufts=extra_buffers):
            self.llm = Llama(model_path=str(self.model_path), n_ctx=n_ctx, n_threads=threads,
                             n_threads_batch=threads, n_gpu_layers=n_gpu_layers, seed=seed, verbose=verbose,
                             logits_all=False)
        self.totals = CallStats()
        self.last_answer_mass: float | None = None  # P(any answer word) in the last distribution call
        self._formatter = self._chat_formatter()
        self._grammars: dict[str, Any] = {}
        self._answer_ids: dict[tuple[tuple[str, tuple[str, ...]], ...], dict[str, list[int]]] = {}

    # ---- text, tokens, windows -------------------------------------------------------------------

    def render(self, prompt: RenderedPrompt) -> str:
        """The chat turns as the single string the model sees, ending where the assistant's turn starts."""
        return self._formatter(messages=[dict(m) for m in prompt.messages]).prompt

    def count_tokens(self, text: str) -> int:
        return len(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def context_budget(self, prompt: RenderedPrompt, max_tokens: int | None = None) -> int:
        """Tokens left for text inserted into `prompt` (render it with the slot empty) before n_ctx is hit."""
        used = len(self._tokens(self.render(prompt)))
        return self.n_ctx - (prompt.max_tokens if max_tokens is None else max_tokens) - used

    def split_to_fit(self, text: str, max_tokens: int) -> list[str]:
        """Pieces of at most max_tokens tokens, cut at sentence ends (English and Chinese punctuation);
        a single over-long sentence is cut by characters. Callers window long contexts with this."""
        if max_tokens < 1:
            raise JudgeError(f"cannot split text into windows of {max_tokens} tokens; the prompt leaves no room")
        pieces: list[str] = []
        current = ""
        for sentence in split_sentences(text):
            for part in self._cut_long(sentence, max_tokens):
                joined = join_sentences(current, part)
                if current and self.count_tokens(joined) > max_tokens:
                    pieces.append(current)
                    current = part
                else:
                    current = joined
        if current:
            pieces.append(current)
        return pieces

    def _cut_long(self, sentence: str, max_tokens: int) -> list[str]:
        parts = []
        while self.count_tokens(sentence) > max_tokens:
            low, high = 1, len(sentence)  # longest character prefix that fits, by bisection
            while low < high:
                mid = (low + high + 1) // 2
                low, high = (mid, high) if self.count_tokens(sentence[:mid]) <= max_tokens else (low, mid - 1)
            parts.append(sentence[:low])
            sentence = sentence[low:]
        return parts + ([sentence] if sentence else [])

    # ---- the three calls -------------------------------------------------------------------------

    def json(self, prompt: RenderedPrompt, schema: dict[str, Any] | None = None,
             max_tokens: int | None = None) -> tuple[Any, CallStats]:
        """Greedy, grammar-constrained generation; returns the parsed value, validated against `schema`.

        Raises JudgeError (with `.raw`) when max_tokens runs out before the JSON closes: bound arrays and
        strings in the schema (maxItems, maxLength) so that cannot happen."""
        schema = schema if schema is not None else prompt.schema
        if schema is None:
            raise JudgeError(f"prompt '{prompt.name}' has no schema; pass one or add 'schema:' to its front matter")
        max_tokens = max_tokens or prompt.max_tokens
        text = self.render(prompt)
        settings = {"kind": "json", "schema": schema, "max_tokens": max_tokens, "grammar": GRAMMAR_VERSION}
        hit = self._cached(prompt, text, settings)
        if hit is not None:
            return hit
        started = time.perf_counter()
        tokens = self._tokens(text)
        self._check_fits(prompt, len(tokens), max_tokens)
        reused = self._reuse_prefix(tokens)
        grammar = self._grammar(schema)
        out: list[int] = []
        value, raw, done = None, "", False
        for token in self.llm.generate(tokens[reused:], temp=0.0, repeat_penalty=1.0, reset=False, grammar=grammar):
            if self._is_end(token):
                try:  # a root that is not an object or array ends only here
                    value, done = json.loads(raw), True
                except ValueError:
                    pass
                break
            out.append(token)
            raw = self.llm.detokenize(out, prev_tokens=tokens).decode("utf-8", errors="replace")
            if raw.rstrip().endswith(("}", "]")):
                try:
                    value, done = json.loads(raw), True
                    break
                except ValueError:
                    pass
            if len(out) >= max_tokens:
                break
        if not done:
            self.totals = self.totals + CallStats(1, len(tokens), reused, len(out), time.perf_counter() - started, 0)
            why = f"was cut off at max_tokens={max_tokens}" if len(out) >= max_tokens else "stopped early"
            raise JudgeError(f"judge output for prompt '{prompt.name}' {why} before the JSON closed; raise "
                             f"max_tokens or lower maxItems/maxLength in the schema", raw=raw)
        validate(value, schema, raw)
        stats = CallStats(1, len(tokens), reused, len(out), time.perf_counter() - started, 0)
        return self._store(prompt, text, settings, value, stats), stats

    def yes_probability(self, prompt: RenderedPrompt) -> tuple[float, CallStats]:
        """P(yes) / (P(yes) + P(no)) for the first answer token, summed over the variants of the prompt's
        answer words ("Yes", " yes", "YES", … or 是/否)."""
        for key in ("yes", "no"):
            if not prompt.answers.get(key):
                raise JudgeError(f"prompt '{prompt.name}' has no '{key}' answer words; it must be a yes_no prompt")
        dist, stats = self._distribution(prompt, {"yes": prompt.answers["yes"], "no": prompt.answers["no"]})
        return dist["yes"], stats

    def choice_distribution(self, prompt: RenderedPrompt,
                            options: list[str] | None = None) -> tuple[dict[str, float], CallStats]:
        """Probability of each option as the first answer token, renormalised over the options."""
        opts = options or list(prompt.answers) or ["1", "2", "3", "4", "5"]
        return self._distribution(prompt, {o: (o,) for o in opts})

    # ---- internals -------------------------------------------------------------------------------

    def _distribution(self, prompt: RenderedPrompt,
                      groups: dict[str, tuple[str, ...]]) -> tuple[dict[str, float], CallStats]:
        import numpy as np

        text = self.render(prompt)
        settings = {"kind": "distribution", "groups": {k: list(v) for k, v in groups.items()}}
        hit = self._cached(prompt, text, settings)
        if hit is not None:
            (dist, mass), stats = hit
            self.last_answer_mass = mass
            return dist, stats
        started = time.perf_counter()
        tokens = self._tokens(text)
        self._check_fits(prompt, len(tokens), 1)
        ids = self._ids_for(groups)
        reused = self._reuse_prefix(tokens)
        self.llm.eval(tokens[reused:])
        logits = self._last_logits().astype(np.float64)
        if not np.all(np.isfinite(logits)):
            raise JudgeError(f"judge returned non-finite logits for prompt '{prompt.name}'; the model file may be broken")
        top = logits.max()
        log_total = top + np.log(np.exp(logits - top).sum())
        log_groups = {k: top + np.log(np.exp(logits[v] - top).sum()) for k, v in ids.items()}
        values = np.array(list(log_groups.values()))
        vmax = values.max()
        log_answers = vmax + np.log(np.exp(values - vmax).sum())
        dist = {k: float(np.exp(v - log_answers)) for k, v in log_groups.items()}
        mass = float(np.exp(log_answers - log_total))
        self.last_answer_mass = mass
        stats = CallStats(1, len(tokens), reused, 0, time.perf_counter() - started, 0)
        self._store(prompt, text, settings, [dist, mass], stats)
        return dist, stats

    def _ids_for(self, groups: dict[str, tuple[str, ...]]) -> dict[str, list[int]]:
        """First-token ids of each group's variants; single-token spellings win, ids in two groups are dropped."""
        key = tuple(sorted(groups.items()))
        if key in self._answer_ids:
            return self._answer_ids[key]
        found: dict[str, set[int]] = {}
        for name, words in groups.items():
            variants = {v for w in words for c in (w, w.lower(), w.capitalize(), w.upper()) for v in (c, " " + c)}
            encoded = [self.llm.tokenize(v.encode("utf-8"), add_bos=False, special=False) for v in sorted(variants)]
            single = {t[0] for t in encoded if len(t) == 1}
            found[name] = single or {t[0] for t in encoded if t}
        ids = {}
        for name, id_set in found.items():
            others = set().union(*(s for n, s in found.items() if n != name))
            ids[name] = sorted(id_set - others)
            if not ids[name]:
                raise JudgeError(f"answer '{name}' has no token of its own in this model's vocabulary; use other answer words")
        self._answer_ids[key] = ids
        return ids

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

    def _last_logits(self) -> Any:
        import llama_cpp
        import numpy as np

        pointer = llama_cpp.llama_get_logits_ith(self.llm.ctx, -1)
        return np.ctypeslib.as_array(pointer, shape=(self.llm.n_vocab(),)).copy()

    def _is_end(self, token: int) -> bool:
        import llama_cpp

        return bool(llama_cpp.llama_vocab_is_eog(llama_cpp.llama_model_get_vocab(self.llm.model), token))

    def _tokens(self, text: str) -> list[int]:
        tokens = self.llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)
        bos = self.llm.token_bos()
        if len(tokens) > 1 and tokens[0] == tokens[1] == bos:  # the template already wrote a BOS
            tokens = tokens[1:]
        return tokens

    def _check_fits(self, prompt: RenderedPrompt, n_prompt: int, max_tokens: int) -> None:
        if n_prompt > self.n_ctx - max_tokens:
            raise JudgeError(
                f"prompt '{prompt.name}' has {n_prompt} tokens but n_ctx={self.n_ctx} leaves room for "
                f"{self.n_ctx - max_tokens} (max_tokens={max_tokens}); window the context with split_to_fit "
                f"or raise n_ctx")

    def _grammar(self, schema: dict[str, Any]) -> Any:
        from llama_cpp import LlamaGrammar

        # The schema's own key order, not a sorted one: the grammar fixes the order in which the model must
        # write the keys, and the prompt's examples show them in the schema's order.
        text = json.dumps(schema)
        if text not in self._grammars:
            self._grammars[text] = LlamaGrammar.from_string(strict_json_gbnf(text), verbose=False)
        return self._grammars[text]

    def _chat_formatter(self) -> Any:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        def text_of(token: int) -> str:
            return self.llm.detokenize([token], special=True).decode("utf-8", "replace") if token >= 0 else ""

        template = self.llm.metadata.get("tokenizer.chat_template") or CHATML
        return Jinja2ChatFormatter(template=template, eos_token=text_of(self.llm.token_eos()),
                                   bos_token=text_of(self.llm.token_bos()), add_generation_prompt=True)

    def _key(self, prompt: RenderedPrompt, text: str, settings: dict[str, Any]) -> str:
        import llama_cpp

        from .judge_cache import make_key

        decoding = {"temperature": 0.0, "seed": self.seed, "llama_cpp": llama_cpp.__version__}
        return make_key(model_sha256=self.model_sha256, prompt_name=prompt.name, prompt_version=prompt.version,
                        prompt_sha256=prompt.sha256, text=text, settings=settings, decoding=decoding)

    def _cached(self, prompt: RenderedPrompt, text: str, settings: dict[str, Any]) -> tuple[Any, CallStats] | None:
        started = time.perf_counter()
        found = self.cache.get(self._key(prompt, text, settings))
        if found is None:
            return None
        stats = CallStats(seconds=time.perf_counter() - started, cache_hits=1)
        self.totals = self.totals + stats
        return found[0], stats

    def _store(self, prompt: RenderedPrompt, text: str, settings: dict[str, Any], value: Any, stats: CallStats) -> Any:
        self.cache.put(self._key(prompt, text, settings), kind=settings["kind"], model_sha256=self.model_sha256,
                       prompt=f"{prompt.name}@{prompt.version}", value=value, stats=stats.as_dict())
        self.totals = self.totals + stats
        return value

    def _model_hash(self, path: Path) -> str:
        """Registry models carry their sha256; a user's own file is hashed once, memoised by path+size+mtime."""
        for spec in models.load_registry():
            if spec.kind == "judge" and spec.path().resolve() == path.resolve():
                return spec.sha256
        memo_file = self.cache.path.parent / HASH_MEMO
        stat = path.stat()
        key = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
        try:
            memo = json.loads(memo_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            memo = {}
        if key not in memo:
            memo[key] = models.sha256_of(path)
            write_text_atomic(memo_file, json.dumps(memo, indent=1, sort_keys=True))
        return memo[key]

    def close(self) -> None:
        self.llm.close()
        self.cache.close()


def strict_json_gbnf(schema_json: str) -> str:
    """The GBNF of llama-cpp-python's converter with JSON's string rule (see JSON_CHAR_RULE)."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    return json_schema_to_gbnf(schema_json).replace(LOOSE_CHAR_RULE, JSON_CHAR_RULE)


@contextmanager
def _model_params(**overrides: Any) -> Iterator[None]:
    """Llama() exposes no argument for some llama_model_params fields; set them on the defaults it starts from."""
    import llama_cpp.llama_cpp as lib

    original = lib.llama_model_default_params

    def patched() -> Any:
        params = original()
        for name, value in overrides.items():
            setattr(params, name, value)
        return params

    lib.llama_model_default_params = patched
    try:
        yield
    finally:
        lib.llama_model_default_params = original

