"""Judge backends are found by name, like metrics: the built-in three, and one a package registers, which a
run then uses without any other change; the judge's configuration is resolved once per run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fake_backend import FakeBackend

import localeval
from localeval.errors import OptionError
from localeval.judge import JudgeOptions, RunConfig, backends, config, open_judge
from localeval.metrics import MetricOptions, build_metrics
from localeval.scoring import batch_size
from tests.report_runs import localeval as run_cli

SAMPLE = {"id": "q1", "question": "Where is the Eiffel Tower?", "answer": "The Eiffel Tower is in Paris.",
          "contexts": [{"id": "d1", "text": "The Eiffel Tower stands in Paris, France."}]}


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> dict[str, type]:
    """The backend registry as loaded, restored after the test."""
    backends.backend_names()
    copy = dict(backends._BACKENDS)
    monkeypatch.setattr(backends, "_BACKENDS", copy)
    return copy


def test_the_built_in_backends_are_registered_and_chosen_from_the_options() -> None:
    assert {"sequential", "batched", "server"} <= set(backends.backend_names())
    assert RunConfig.resolve(JudgeOptions(parallel=1)).backend == "sequential"
    assert RunConfig.resolve(JudgeOptions(parallel=4)).backend == "batched"
    assert RunConfig.resolve(JudgeOptions(judge_url="http://gpu-box:8080/v1")).backend == "server"
    assert RunConfig.resolve(JudgeOptions(parallel=4, backend="sequential")).backend == "sequential"
    with pytest.raises(OptionError, match="'nope' is not a judge backend; known: batched, sequential, server"):
        backends.backend_class("nope")


def test_the_gpu_layers_come_from_the_flag_then_the_environment_then_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    """A GPU workstation sets LOCALEVAL_GPU_LAYERS once; it moves the judge and, where llama-cpp-python can
    offload, the GPU's default --parallel; a flag (0 too) wins over it, and a value that is no number is one
    line naming the variable, read only where a judge runs."""
    assert RunConfig.resolve(JudgeOptions(), env={}).gpu_layers == 0
    offloaded = RunConfig.resolve(JudgeOptions(parallel=2), env={"LOCALEVAL_GPU_LAYERS": "-1"})
    assert offloaded.gpu_layers == -1
    monkeypatch.setattr(config, "can_offload", lambda: True)
    assert RunConfig.resolve(JudgeOptions(), env={"LOCALEVAL_GPU_LAYERS": "-1"}).parallel == config.DEFAULT_PARALLEL_GPU
    monkeypatch.setattr(config, "can_offload", lambda: False)  # a CPU-only build keeps the CPU's default
    assert RunConfig.resolve(JudgeOptions(), env={"LOCALEVAL_GPU_LAYERS": "-1"}).parallel != config.DEFAULT_PARALLEL_GPU
    assert RunConfig.resolve(JudgeOptions(gpu_layers=0), env={"LOCALEVAL_GPU_LAYERS": "-1"}).gpu_layers == 0
    assert RunConfig.resolve(JudgeOptions(gpu_layers=12), env={"LOCALEVAL_GPU_LAYERS": " "}).gpu_layers == 12
    malformed = RunConfig.resolve(JudgeOptions(), env={"LOCALEVAL_GPU_LAYERS": "all"})  # read only where a judge runs
    with pytest.raises(OptionError, match="^LOCALEVAL_GPU_LAYERS='all' is not a whole number of layers"):
        malformed.gpu_layers


def test_a_plugin_backend_scores_a_run_by_its_name(registry: dict[str, type], tmp_path: Path) -> None:
    opened: list[RunConfig] = []

    @backends.register_backend
    class Recorded(FakeBackend):
        """A site's own way of running the judge (here: the fake, which weighs yes and no alike)."""

        name = "recorded"

        @classmethod
        def check(cls, config: RunConfig) -> None:
            if config.options.n_ctx < 1024:
                raise OptionError("recorded: --n-ctx must be at least 1024")

        @classmethod
        def open(cls, config: RunConfig, cache: Any) -> Recorded:
            opened.append(config)
            return cls(n_ctx=config.options.n_ctx)

    options = MetricOptions(judge=JudgeOptions(backend="recorded", cache=str(tmp_path / "judge.sqlite"), parallel=2))
    result = localeval.evaluate([SAMPLE], ["faithfulness"], options)
    assert result.means["faithfulness"] == pytest.approx(0.5)
    assert result.summary["judge"]["engine"] == "fake"
    assert len(opened) == 1 and opened[0].parallel == 2
    with pytest.raises(OptionError, match="recorded: --n-ctx must be at least 1024"):
        localeval.evaluate([SAMPLE], ["faithfulness"], MetricOptions(judge=JudgeOptions(backend="recorded", n_ctx=512)))
    assert len(opened) == 1  # the check refused it before the backend opened


def test_a_backend_class_must_declare_its_name_and_both_class_methods(registry: dict[str, type]) -> None:
    with pytest.raises(ValueError, match="needs a `name` and the class methods check"):
        backends.register_backend(type("Nameless", (FakeBackend,), {}))
    with pytest.raises(ValueError, match="'server' is already registered"):
        backends.register_backend(type("Other", (FakeBackend,), {"name": "server", "check": classmethod(lambda c, x: None),
                                                                "open": classmethod(lambda c, x, y: None)}))


def test_an_unknown_backend_on_the_command_line_is_one_line_and_exit_2(tmp_path: Path, example_path: Path) -> None:
    done = run_cli("score", str(example_path), "-m", "faithfulness", "--judge-backend", "nope", "-o", str(tmp_path / "out"),
                   check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: --judge-backend 'nope' is not a judge backend; known: batched, sequential, server"]


def test_the_configuration_is_resolved_once_per_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPU default of sequences in flight reads the judge's GGUF header and the machine's memory: once
    per run, however many batches and metrics ask for it."""
    reads: list[RunConfig] = []
    real = config._cpu_default_parallel
    monkeypatch.setattr(config, "_cpu_default_parallel", lambda c: reads.append(c) or real(c))
    metrics = build_metrics("faithfulness,answer_relevance,context_precision")
    assert len({id(m.kit.config) for m in metrics}) == 1
    for _ in range(5):
        batch_size(metrics)
    assert len(reads) == 1
    assert open_judge  # the facade's entry takes the same configuration (tests/test_server_protocol.py)


def test_a_decode_that_fails_in_the_sequential_backend_fails_that_call_not_the_run() -> None:
    """llama-cpp-python raises RuntimeError("llama_decode returned N") (a full KV cache, a failed
    allocation) from eval and generate as well as from its context: each becomes the call's JudgeError."""
    from localeval.errors import JudgeError
    from localeval.judge.backend import DistributionCall
    from localeval.judge.llama_sequential import SequentialLlamaBackend

    class Llm:
        resets = 0

        def reset(self) -> None:
            self.resets += 1

    backend = object.__new__(SequentialLlamaBackend)
    backend.llm = Llm()

    def failing(call: Any) -> None:
        raise RuntimeError("llama_decode returned -3")

    backend._distribution = failing  # type: ignore[method-assign]
    (reply,) = backend.run([DistributionCall("text", {"yes": ("Yes",), "no": ("No",)}, "verify")])
    assert isinstance(reply, JudgeError) and "prompt 'verify': llama_decode returned -3" in str(reply)
    assert backend.llm.resets == 1


@pytest.mark.parametrize("written, message", [({"statements": ["smile \ud83d here"]}, "unpaired surrogate"),
                                              ({"statements": [], "score": float("inf")}, "finite number")])
def test_json_the_grammar_allows_but_no_file_can_hold_is_that_calls_error(tmp_path: Path, written: dict[str, Any],
                                                                          message: str) -> None:
    """A lone surrogate escape ("\\ud83d") and 1e400 parse as JSON; the judge's answer with one is its call's
    JudgeError (the sample is skipped with the reason), never a traceback from the cache or the results."""
    from fake_backend import fake_kit

    from localeval.judge.facade import Ask

    kit = fake_kit(FakeBackend(json_rule=lambda call: written), tmp_path / "c.sqlite")
    prompt = kit.prompt("statements", "en", question="Who?", answer="Orwell wrote it.")
    schema = {"type": "object"} if "score" in written else None
    (answer,) = kit.judge.ask([Ask.json(prompt, schema)])
    assert answer.value is None and message in str(answer.error) and "prompt 'statements'" in str(answer.error)


def test_windows_are_cut_on_the_text_as_the_prompt_holds_it(tmp_path: Path) -> None:
    """The prompt defuses each "<s>" of a passage with one more character: a window is counted with them,
    so a passage of HTML strike-throughs is not windowed to the budget and then rendered past it."""
    from fake_backend import TOKEN, fake_kit

    from localeval.judge.prompts import defuse

    judge = fake_kit(FakeBackend(), tmp_path / "c.sqlite").judge
    text = " ".join(f"Item <s>{i}</s> was removed." for i in range(60))
    windows = judge.windows(text, 100)
    assert len(windows) > 1 and " ".join(windows) == text
    assert all(len(TOKEN.findall(defuse(w))) <= 100 for w in windows)


def test_judge_threads_come_from_the_environment_else_the_physical_cores() -> None:
    """Without --threads (which LlamaModel.open reads first), $LOCALEVAL_THREADS, which a site in a container
    with a CPU quota sets; a malformed value is one line naming the variable."""
    from localeval.settings import judge_threads, physical_cores

    assert judge_threads({"LOCALEVAL_THREADS": "3"}) == 3
    assert judge_threads({"LOCALEVAL_THREADS": " "}) == judge_threads({}) == physical_cores()
    for bad in ("0", "two", "-1", "1.5", "²", "١"):
        with pytest.raises(OptionError, match=rf"^LOCALEVAL_THREADS='{bad}' is not a whole number of threads"):
            judge_threads({"LOCALEVAL_THREADS": bad})
