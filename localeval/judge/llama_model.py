"""What both in-process llama.cpp backends share (llama_sequential.py, llama_batched.py): one GGUF loaded by
llama-cpp-python, its tokenizer and chat template, the answer words' token ids, and the JSON stopping rule.

Every call into llama-cpp-python's private attributes is in this module and llama_sequential.py (the
batched engine uses only llama.cpp's public C API), so an upgrade of the pinned version is checked there.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..errors import JudgeError, ModelError
from .backend import (CallStats, ContinuationCall, DistributionCall, DistributionReply, JsonReply, finite_logits,
                      logsumexp, own_tokens, prompt_too_long, spellings)
from .llama_server import model_params

if TYPE_CHECKING:
    from .cache import JudgeCache
    from .config import RunConfig

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
                 n_gpu_layers: int | None = None, seed: int = 0, verbose: bool = False, extra_buffers: bool = False,
                 llama_n_ctx: int | None = None) -> None:
        from llama_cpp import Llama

        from ..settings import current
        from .config import can_offload
        from .llama_build import check_llama_build

        if n_gpu_layers is None:  # a backend made directly (scripts, tests) follows $LOCALEVAL_GPU_LAYERS too
            n_gpu_layers = current().gpu_layers
        if n_gpu_layers and not can_offload():
            # Else the summary would say the judge ran on a GPU it never saw, and the batching that suits a GPU
            # (prefix copies, no generation lanes) would run on the CPU; RunConfig keeps the CPU's --parallel.
            warnings.warn(f"--gpu-layers {n_gpu_layers} (or LOCALEVAL_GPU_LAYERS): this llama-cpp-python was built "
                          "without GPU support, so the judge runs on the CPU; rebuild it with CUDA "
                          "(docs/pages/judge/index.md#gpu)", stacklevel=2)
            n_gpu_layers = 0
        check_llama_build()
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

    def quiet(self) -> Any:
        """A block in which llama.cpp writes nothing to stdout or stderr unless verbose, as Llama() keeps its
        own calls: a context of its own (llama_batched.py) would otherwise put llama.cpp's warnings beside
        localeval's one-line errors."""
        from llama_cpp._utils import suppress_stdout_stderr

        return suppress_stdout_stderr(disable=self.verbose)

    @classmethod
    def check(cls, config: RunConfig) -> None:
        """The judge file the configuration names is present, and llama-cpp-python's build can load it (no load)."""
        from .. import models
        from .llama_build import check_llama_build

        models.resolve(config.judge, "judge")
        check_llama_build()

    @classmethod
    def open(cls, config: RunConfig, cache: JudgeCache, **options: Any) -> LlamaModel:
        """The backend for the configured judge file; its sha256 is memoised beside the cache."""
        from .. import models
        from ..settings import judge_threads

        path = models.resolve(config.judge, "judge")
        sha256 = models.model_sha256(path, "judge", cache.path.parent)
        o = config.options
        return cls(path, sha256, n_ctx=o.n_ctx, n_threads=o.n_threads or judge_threads(),
                   n_gpu_layers=config.gpu_layers,
                   seed=o.seed, **cls.configured(config), **options)

    @classmethod
    def configured(cls, config: RunConfig) -> dict[str, Any]:
        """Keyword arguments a subclass takes from the configuration beyond the model's."""
        return {}

    # ---- the protocol's model part ---------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        import llama_cpp

        decoding: dict[str, Any] = {"temperature": 0.0, "seed": self.seed, "llama_cpp": llama_cpp.__version__}
        if self.n_gpu_layers:  # a GPU's numbers differ from the CPU's, and by how the tokens were batched
            decoding.update(gpu_layers=self.offloaded(), **self.batching())
        return {"model_sha256": self.model_sha256, "decoding": decoding}

    def offloaded(self) -> int | str:
        """The layers on the GPU as a cache key names them: "all" for -1 and for any count beyond the model's
        layers (llama.cpp then offloads its output layer too), which all compute the same numbers."""
        import llama_cpp

        layers = llama_cpp.llama_model_n_layer(self.llm.model)
        return "all" if self.n_gpu_layers < 0 or self.n_gpu_layers > layers else self.n_gpu_layers

    def batching(self) -> dict[str, Any]:
        """What decides how a GPU batches a prompt's tokens, beyond the layers offloaded: one at a time here."""
        return {"parallel": 1}

    def describe(self) -> dict[str, Any]:
        # gpu_layers: on a GPU a verdict's number depends on how its tokens were batched (docs/benchmarks/gpu.md),
        # so a run's summary says where its judge ran.
        return {"judge_model": self.model_path.name, "judge_sha256": self.model_sha256, "engine": self.engine,
                "gpu_layers": self.n_gpu_layers}

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
