"""The batched engine (judge/llama_batched.py) with the real tiny judge: the same numbers as the sequential
backend on these fixtures, bit for bit where the CPU's kernels do not round a token by what shares its
micro-batch (and within that rounding where they do); how slots share prefixes; windows, judge errors and
resume inside a batch.

Speed is measured by bench/engine_bench.py, never asserted here.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Sequence

import pytest

import localeval
from localeval.judge import Ask, Judge
from localeval.judge import llama_batched
from localeval.judge.llama_batched import BatchedLlamaBackend, _common_prefix
from localeval.judge.llama_sequential import SequentialLlamaBackend
from localeval.metrics import JudgeOptions, MetricOptions
from localeval import models
from localeval.model_kit import ModelKit

pytestmark = [pytest.mark.filterwarnings("ignore:embedder 'all-minilm-l6-v2' is trained on en only"),
              pytest.mark.model("smollm2-135m-instruct-q4_1")]

TINY = "smollm2-135m-instruct-q4_1"
METRICS = ["faithfulness", "context_precision"]
CONTEXT = ("Marie Curie was born in Warsaw in 1867. She won two Nobel Prizes, in physics and in chemistry. "
           "She died in 1934 in France.")
RECORDS = [
    {"id": "a", "question": "Where was Marie Curie born?", "answer": "Marie Curie was born in Warsaw in 1867.",
     "contexts": [CONTEXT, "Warsaw is the capital of Poland."], "reference": "In Warsaw."},
    {"id": "b", "question": "What did Curie win?", "answer": "She won two Nobel Prizes and an Oscar.",
     "contexts": [CONTEXT], "reference": "Two Nobel Prizes."},
    {"id": "c", "question": "When did Curie die?", "answer": "Curie died in 1934. She was 66.",
     "contexts": [CONTEXT, "The Eiffel Tower was completed in 1889."], "reference": "In 1934."},
    {"id": "d", "question": "长城是哪个朝代修建的？", "answer": "现存的长城大部分是明朝修建的。",
     "contexts": ["长城是中国古代的军事防御工程。现存的长城遗迹主要为明朝时期修建的明长城。"], "reference": "明朝。"},
    {"id": "e", "question": "Who wrote Hamlet?", "answer": "Shakespeare wrote Hamlet around 1600.",
     "contexts": ["Hamlet is a tragedy by William Shakespeare, written around 1600."], "reference": "Shakespeare."},
]
#: The records whose numbers the batched engine must give as the sequential backend does, in a reference run
#: and a batched one, each record seconds of the tiny judge in both: all but "e", whose one context unrelated
#: to the others' is what c's second context and d's already bring.
COMPARED = RECORDS[:4]


def score(records: list[dict], cache: Path, parallel: int, n_ctx: int = 2048, metrics: Sequence[str] = METRICS,
          **options: object) -> localeval.Result:
    judge = JudgeOptions(judge=TINY, cache=str(cache), n_ctx=n_ctx, n_threads=1, parallel=parallel)
    # The judge's own decomposition, so that batches mix grammar-constrained generation with verdicts.
    options = {"faithfulness_statements": "judge", **options}
    return localeval.evaluate(records, metrics=list(metrics), options=MetricOptions(judge=judge, **options))


def values(result: localeval.Result) -> dict[str, dict[str, float]]:
    return {row["id"]: row["metrics"] for row in result.rows}


#: How far a verdict may move when llama.cpp's CPU kernels round a token by what shares its micro-batch: not at
#: all beside up to 3 other sequences on the Intel CPUs first measured, up to 0.004 beside 1 or 3 others on an
#: AMD EPYC with AVX2 (2026-11-27; docs/pages/judge/engine.md, "Numbers").
SHARED_BATCH_ROUNDING = 0.01


def assert_same_answers(got: list, expected: list) -> None:
    """The answers the sequential backend gave: equal to the last bit (so on the CPUs that round no token by
    its neighbours), or else each verdict within that rounding of its own sequential number and nearer
    to it than to any other's (a verdict read for the wrong sequence is not), and each JSON generation is a
    list of statements that starts as the sequential one did (a greedy generation may part after a near tie)."""
    assert len(got) == len(expected)
    if got == expected:
        return
    for i, (g, e) in enumerate(zip(got, expected)):
        if isinstance(e, float):
            assert abs(g - e) <= SHARED_BATCH_ROUNDING, (i, g, e)
            assert all(abs(g - e) < abs(g - x) for x in expected if isinstance(x, float) and x != e), (i, g, expected)
        else:
            assert isinstance(g, dict) and g["statements"][:1] == e["statements"][:1], (i, g, e)


@pytest.fixture(scope="module")
def sequential(tmp_path_factory: pytest.TempPathFactory) -> localeval.Result:
    return score(COMPARED, tmp_path_factory.mktemp("seq") / "c.sqlite", parallel=1)


@pytest.mark.cpu_numerics
def test_batched_numbers_equal_the_sequential_ones_bit_for_bit_and_a_resume_repeats_no_call(
        sequential: localeval.Result, tmp_path: Path) -> None:
    """A batched run in two parts, as an interrupted run and its resumption: each part's numbers are the
    sequential ones to the last bit (every sample is computed by the batched engine once, in one part or the
    other), and the resumed run asks the judge nothing that the first part answered."""
    cache = tmp_path / "c.sqlite"
    first = score(COMPARED[:2], cache, parallel=4)  # an interrupted run: only part of the work done
    resumed = score(COMPARED, cache, parallel=4)
    expected = values(sequential)
    assert values(first) == {sample: expected[sample] for sample in ("a", "b")}
    assert values(resumed) == expected
    assert first.summary["judge"]["engine"] == resumed.summary["judge"]["engine"] == "llama.cpp batched"
    assert sequential.summary["judge"]["engine"] == "llama.cpp in-process"
    usage = first.summary["judge"]["usage"]["faithfulness"]
    assert usage["calls"] > 0 and usage["cached_tokens"] > 0  # statements of one answer reuse its context
    calls = lambda r: sum(u["calls"] for u in r.summary["judge"]["usage"].values())  # noqa: E731
    hits = lambda r: sum(u["cache_hits"] for u in r.summary["judge"]["usage"].values())  # noqa: E731
    assert calls(first) + calls(resumed) == calls(sequential)
    assert hits(resumed) >= calls(first)


@pytest.mark.cpu_numerics
def test_the_numbers_do_not_depend_on_what_shares_the_batch(tmp_path: Path) -> None:
    """One distribution call, alone and among calls of other prompts in two parallel settings. Bit for bit
    while the micro-batches stay below the row count at which llama.cpp's CPU kernels change (beside 7 other
    sequences on the Intel CPUs first measured: bench/decode_cost.py; beside 1 on an AMD EPYC with AVX2)."""
    path, sha = models.resolve(TINY, "judge"), models.find(TINY).sha256
    kit = ModelKit.of(JudgeOptions())
    target = Ask.yes_no(kit.prompt("verify_statement", "en", context=CONTEXT, statement="Curie died in 1934."))
    others = [Ask.yes_no(kit.prompt("verify_statement", "en", context=CONTEXT, statement=s))
              for s in ("Curie was born in Paris.", "Curie won an Oscar.")]
    others.append(Ask.json(kit.prompt("statements", "en", question="Who?", answer="Curie was a physicist.")))
    seen = []
    for backend, asks in ((SequentialLlamaBackend(path, sha, n_threads=1), [target]),
                          (BatchedLlamaBackend(path, sha, parallel=2, n_threads=1), [*others, target]),
                          (BatchedLlamaBackend(path, sha, parallel=4, n_threads=1), [others[2], target, *others[:2]])):
        judge = Judge(backend, tmp_path / f"{len(seen)}.sqlite")
        answers = judge.ask(asks)
        seen.append(next(a.value for a, ask in zip(answers, asks) if ask is target))
        judge.close()
    assert_same_answers(seen[1:], seen[:1] * 2)


@pytest.mark.cpu_numerics
def test_a_shared_prefix_is_decoded_once_then_reused_in_place_or_copied(tmp_path: Path) -> None:
    """Statements of one context wait until the first call has decoded it. Then on a CPU they queue for the
    slot that holds it, and a later prompt takes a free slot rather than overwrite it, so the next statement
    still finds the context; with copy_prefixes (the GPU policy) the context is copied into idle slots
    instead, and the verdicts are the same (to the last bit where the CPU's kernels allow)."""
    import llama_cpp as lc

    path, sha = models.resolve(TINY, "judge"), models.find(TINY).sha256
    kit = ModelKit.of(JudgeOptions())
    verify = lambda *ss: [Ask.yes_no(kit.prompt("verify_statement", "en", context=CONTEXT, statement=s))  # noqa: E731
                          for s in ss]
    # Another prompt, whose instructions share only the chat template's first tokens with the verdicts'. A
    # rating, not a JSON generation: with 4 sequences there are no generation lanes, so a call's kind does not
    # decide its slot, and generating would only add seconds.
    other = Ask.choice(kit.prompt("relevance_rating", "en", question="Who?", answer="Curie was a physicist."))
    statements = ("Curie died in 1934.", "Curie was born in Paris.", "Curie won an Oscar.", "Curie was Polish.")
    copies: list[tuple[int, int]] = []
    real_copy = lc.llama_memory_seq_cp
    seen = {}
    for copy in (False, True):
        backend = BatchedLlamaBackend(path, sha, parallel=4, n_threads=1, copy_prefixes=copy)
        judge = Judge(backend, tmp_path / f"{copy}.sqlite")
        lc.llama_memory_seq_cp = lambda mem, src, dst, p0, p1: (copies.append((src, dst)), real_copy(mem, src, dst, p0, p1))
        try:
            first = judge.ask(verify(*statements))
            judge.ask([other])
            later = judge.ask(verify("Curie won two Nobel Prizes."))[0]
        finally:
            lc.llama_memory_seq_cp = real_copy
        seen[copy] = [a.value for a in first], [a.stats.cached_tokens for a in first], later, len(copies)
        judge.close()
    (values, cached, later, n_copies), (copied_values, copied_cached, copied_later, all_copies) = seen[False], seen[True]
    prompt = later.stats.prompt_tokens
    assert cached[0] == 0 and min(cached[1:]) > prompt // 2  # the context was decoded once, then shared
    assert later.stats.cached_tokens > prompt // 2  # and still there after the other prompt ran
    assert n_copies == 0 and all_copies > 0  # only the GPU policy copies
    assert copied_cached[0] == 0 and min(copied_cached[1:]) > prompt // 2
    assert_same_answers([*copied_values, copied_later.value], [*values, later.value])


@pytest.mark.cpu_numerics
def test_generation_lanes_decode_side_by_side_and_give_the_sequential_answers(tmp_path: Path) -> None:
    """From SCORING_SLOTS + MIN_LANES sequences on, a CPU engine keeps its lowest slots for generation: JSON
    calls run there side by side (one token each per decode, consecutive sequence ids, so llama.cpp can put
    them in one micro-batch), each with a copy of the instructions; verdicts run in the top slots."""
    import llama_cpp as lc

    path, sha = models.resolve(TINY, "judge"), models.find(TINY).sha256
    kit = ModelKit.of(JudgeOptions())
    answers = ("Curie was a physicist.", "She won two Nobel Prizes.", "She was born in Warsaw.", "She died in 1934.")
    generate = [Ask.json(kit.prompt("statements", "en", question="Who was Curie?", answer=a)) for a in answers]
    verify = [Ask.yes_no(kit.prompt("verify_statement", "en", context=CONTEXT, statement=a)) for a in answers]
    asks = [x for pair in zip(generate, verify) for x in pair]
    sequential = Judge(SequentialLlamaBackend(path, sha, n_threads=1), tmp_path / "s.sqlite")
    # The generations, then the verdicts: each call after the first of its prompt reuses that prompt's
    # instructions, as in the lanes (a copy) and the verdict slot below, where asked in `asks`' order the
    # sequential backend would decode both prompts' instructions again for every call.
    by_prompt = [a.value for a in sequential.ask([*generate, *verify])]
    expected = [x for pair in zip(by_prompt[:4], by_prompt[4:]) for x in pair]
    sequential.close()

    backend = BatchedLlamaBackend(path, sha, parallel=12, n_threads=1, copy_prefixes=False)  # the CPU policy
    assert backend.lanes == 8
    decodes: list[dict[int, int]] = []
    real_decode = lc.llama_decode

    def spy(ctx, batch):  # type: ignore[no-untyped-def]
        seqs: dict[int, int] = {}
        for i in range(batch.n_tokens):
            seqs[batch.seq_id[i][0]] = seqs.get(batch.seq_id[i][0], 0) + 1
        decodes.append(seqs)
        return real_decode(ctx, batch)

    lc.llama_decode = spy
    judge = Judge(backend, tmp_path / "b.sqlite")
    try:
        got = judge.ask(asks)
    finally:
        lc.llama_decode = real_decode
    assert_same_answers([a.value for a in got], expected)
    assert got[2].stats.cached_tokens > 0  # the second generation started from a copy of the instructions
    generating_together = [d for d in decodes if sorted(s for s, n in d.items() if n == 1 and s < 8) == [0, 1, 2, 3]]
    assert generating_together  # all four generated side by side in lanes 0..3
    statements, verdict = (backend.tokens(backend.render(ask.prompt.messages)) for ask in (generate[0], verify[0]))

    def held(prompt: list[int]) -> set[int]:
        """The slots whose KV holds the prompt's instructions (more than the chat template's first tokens)."""
        return {slot.seq for slot in backend._slots if _common_prefix(slot.kv, prompt, len(prompt)) > 40}  # noqa: SLF001

    assert held(statements) == {0, 1, 2, 3}  # the lanes hold the generations
    assert held(verdict) and min(held(verdict)) >= 8  # the verdicts ran in the scoring slots only
    judge.close()


def test_a_round_with_more_verdict_prompts_than_scoring_slots_takes_slots_from_the_lanes(tmp_path: Path) -> None:
    """Five verdict prompts in a round get five verdict slots (the lanes give up one, down to MIN_LANES), so
    each keeps its instructions for the next round: every call of the second round reuses them."""
    path, sha = models.resolve(TINY, "judge"), models.find(TINY).sha256
    kit = ModelKit.of(JudgeOptions())

    def round_of(question: str, answer: str) -> list[Ask]:
        return [Ask.yes_no(kit.prompt("verify_statement", "en", context=CONTEXT, statement=answer)),
                Ask.yes_no(kit.prompt("passage_relevant", "en", passage=CONTEXT, question=question)),
                Ask.yes_no(kit.prompt("context_useful", "en", question=question, target=answer,
                                      target_kind="reference", context=CONTEXT)),
                Ask.yes_no(kit.prompt("sentence_relevant", "en", question=question, passages=CONTEXT, sentence=answer)),
                Ask.choice(kit.prompt("relevance_rating", "en", question=question, answer=answer))]

    backend = BatchedLlamaBackend(path, sha, parallel=13, n_ctx=1024, n_threads=1, copy_prefixes=False)
    assert backend.lanes == 9
    judge = Judge(backend, tmp_path / "b.sqlite")
    judge.ask(round_of("Where was Curie born?", "Curie was born in Warsaw."))
    assert backend._lanes == 8  # noqa: SLF001
    second = judge.ask(round_of("When did Curie die?", "Curie died in 1934."))
    assert all(answer.stats.cached_tokens > 40 for answer in second)  # more than the chat template's first tokens
    judge.ask(round_of("What did Curie win?", "Curie won two Nobel Prizes.")[:2])
    assert backend._lanes == 9  # noqa: SLF001  (two verdict prompts: every lane generates)
    judge.close()


def test_the_cpu_default_follows_the_judges_weights_and_the_memory_its_streams_take(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """16 sequences (generation lanes) for a K-quant judge, read from its GGUF header; 4 for weights the tiled
    kernel does not take (the tiny judge is Q4_1), for streams that would outgrow a quarter of the memory,
    and for a file that is no GGUF (its load reports that)."""
    import llama_cpp

    from localeval.judge import config
    from localeval.judge.gguf import read_header

    monkeypatch.delenv("LOCALEVAL_GPU_LAYERS", raising=False)  # the CPU's defaults, also in a run on a GPU
    tiny = read_header(models.resolve(TINY, "judge"))
    assert tiny.file_type == 3 and not tiny.tiled  # LLAMA_FTYPE_MOSTLY_Q4_1
    # SmolLM2-135M: 30 layers, 3 KV heads of 64 for K and V, f16; llama.cpp's own count of its KV buffer agrees
    assert tiny.kv_bytes_per_token == 30 * 3 * (64 + 64) * 2
    assert config.RunConfig.resolve(JudgeOptions(judge=TINY)).parallel == config.DEFAULT_PARALLEL_CPU == 4
    gpu = config.DEFAULT_PARALLEL_GPU if llama_cpp.llama_supports_gpu_offload() else 4  # a CPU-only build: the CPU's
    assert config.RunConfig.resolve(JudgeOptions(judge=TINY, gpu_layers=-1)).parallel == gpu
    assert config.RunConfig.resolve(JudgeOptions(judge=TINY, parallel=7)).parallel == 7

    # The same header with the type byte of Q4_K_M (15): a K-quant judge gets the lanes' default.
    patched = _with_file_type(models.resolve(TINY, "judge"), 15)
    kquant = tmp_path / "k.gguf"
    kquant.write_bytes(patched)
    assert read_header(kquant).tiled and read_header(kquant).kv_bytes_per_token == tiny.kv_bytes_per_token
    assert config.RunConfig.resolve(JudgeOptions(judge=str(kquant))).parallel == config.DEFAULT_PARALLEL_CPU_TILED == 16
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    too_long = int(memory * config.KV_SHARE_OF_MEMORY / (16 * tiny.kv_bytes_per_token)) + 512
    assert config.RunConfig.resolve(JudgeOptions(judge=str(kquant), n_ctx=too_long)).parallel == 4
    foreign = tmp_path / "x.gguf"
    foreign.write_bytes(patched[:4096])  # a header that breaks off
    assert config.RunConfig.resolve(JudgeOptions(judge=str(foreign))).parallel == 4


def _could_allocate(size: int) -> bool:
    """Whether Linux would grant one allocation of `size` bytes: always with overcommit_memory 1; under the
    default heuristic only within memory and swap."""
    try:
        overcommit = Path("/proc/sys/vm/overcommit_memory").read_text().strip()
        swap = next(int(line.split()[1]) * 1024 for line in Path("/proc/meminfo").read_text().splitlines()
                    if line.startswith("SwapTotal:"))
    except (OSError, StopIteration, ValueError):
        return True  # not Linux as this test knows it: do not count on the allocation failing
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return overcommit == "1" or memory + swap >= size


def _with_file_type(path: Path, file_type: int) -> bytes:
    """The GGUF file's bytes with general.file_type (a uint32) set to `file_type`."""
    import struct

    data = bytearray(path.read_bytes())
    key = b"general.file_type"
    at = data.index(struct.pack("<Q", len(key)) + key) + 8 + len(key)
    assert struct.unpack_from("<I", data, at)[0] == 4  # GGUF's uint32
    struct.pack_into("<I", data, at + 4, file_type)
    return bytes(data)


@pytest.mark.cpu_numerics
def test_continuations_give_the_sequential_log_probabilities_however_they_are_cut(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """grounding alone, one sequence at a time and four at once: the same numbers to the last bit. With at
    most 3 logit rows a decode each answer is read over several decodes, in pieces of 3 tokens, and llama.cpp
    rounds a piece by its length (as beside a generating JSON call, where a prompt piece is decoded a token
    at a time: the module docstring of llama_batched.py): the same numbers within rounding."""
    def grounding(parallel: int, name: str) -> dict:
        judge = JudgeOptions(judge=TINY, cache=str(tmp_path / name), n_ctx=2048, n_threads=1, parallel=parallel)
        return values(localeval.evaluate(RECORDS, metrics=["grounding"], options=MetricOptions(judge=judge)))

    sequential, batched = grounding(1, "s.sqlite"), grounding(4, "b.sqlite")
    assert sequential == batched
    monkeypatch.setattr(llama_batched, "MAX_OUTPUTS", 3)
    split = grounding(4, "split.sqlite")
    for sample, row in sequential.items():
        assert split[sample] == pytest.approx(row, rel=0.1), sample
    assert all(0 < row["grounding"] < 1 for row in sequential.values()) and len(sequential) == len(RECORDS)


@pytest.mark.cpu_numerics
def test_a_long_context_is_windowed_inside_a_batch(tmp_path: Path) -> None:
    # The whole passage is shown (evidence "context"): by default faithfulness shows each statement only the
    # passage sentences naming what it adds to the question. The answers' own sentences are the statements, so
    # that the windows are few and known (the tiny judge's decomposition can run to many statements, each of
    # them windowed); the other tests batch generation beside verdicts. Faithfulness alone: to the engine a
    # window is one more call, whichever metric asks it (context_precision's windows, which would double
    # the calls, are tested in tests/test_judge_metrics.py through context_relevance's, the same step).
    filler = " ".join(f"Item {i} of the archive lists a letter from Curie." for i in range(50))
    long = dict(RECORDS[0], id="long", contexts=[filler + " " + CONTEXT])
    records = [long, RECORDS[1], RECORDS[4]]
    options = {"faithfulness_evidence": "context", "faithfulness_statements": "sentences", "n_ctx": 768}
    batched = score(records, tmp_path / "b.sqlite", parallel=3, metrics=["faithfulness"], **options)
    sequential = score(records, tmp_path / "s.sqlite", parallel=1, metrics=["faithfulness"], **options)
    row = next(r for r in batched.rows if r["id"] == "long")
    assert row["details"]["faithfulness"]["windows"] > 1 and not row["skipped"]
    assert values(batched) == values(sequential)


def test_a_judge_error_in_one_sequence_skips_only_its_sample(tmp_path: Path) -> None:
    # The statements prompt holds the whole answer (answers are not windowed): past n_ctx it cannot run.
    # Faithfulness alone: the metric the error is in, and the one the other samples must keep.
    too_long = dict(RECORDS[1], id="too-long", answer=" ".join(["She won a prize."] * 200))
    result = score([RECORDS[0], too_long, RECORDS[4]], tmp_path / "c.sqlite", parallel=3, n_ctx=768,
                   metrics=["faithfulness"])
    rows = {row["id"]: row for row in result.rows}
    assert rows["too-long"]["skipped"]["faithfulness"].startswith("judge error: prompt 'statements' has")
    assert "faithfulness" in rows["a"]["metrics"] and "faithfulness" in rows["e"]["metrics"]


def test_kv_streams_that_do_not_fit_stop_the_run_with_one_line_not_a_skip_per_sample(tmp_path: Path) -> None:
    """No memory for --parallel streams of --n-ctx tokens (the GPU's memory full, on a workstation) is a
    setting to change: exit 2 with the size asked for, rather than every sample skipped and exit 0. More
    sequences than llama.cpp has ids for are refused before the judge loads."""
    from tests.report_runs import localeval as run_cli, write_jsonl

    data = write_jsonl(tmp_path / "in.jsonl", RECORDS[:2])

    def run(parallel: str, n_ctx: str) -> subprocess.CompletedProcess[str]:
        return run_cli("score", str(data), "-m", "faithfulness", "--judge", TINY, "--parallel", parallel, "--n-ctx", n_ctx,
                       "--threads", "1", "--cache", str(tmp_path / "c.sqlite"), "-o", str(tmp_path / "out"), check=False)

    kv = 30 * 3 * (64 + 64) * 2 * 256 * 32768  # SmolLM2-135M's KV a token, 256 x 32768 tokens
    if _could_allocate(kv):
        pytest.skip(f"this machine could allocate {kv / 1e9:.1f} GB (memory, swap or overcommit): no failed allocation")
    done = run("256", "32768")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "could not create a context for 256 sequences of 32768 tokens (their KV cache would take 193.3 GB); " \
           "lower --parallel or --n-ctx" in done.stderr
    done = run("257", "4096")
    assert done.returncode == 2 and done.stderr == ("error: --parallel 257: llama.cpp runs at most 256 sequences in one "
                                                    "context; give --parallel 256 or fewer\n"), done.stderr


def test_the_environment_offloads_the_judge_and_the_summary_says_where_it_ran(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """$LOCALEVAL_GPU_LAYERS reaches the model with no flag, and the summary records where the judge ran: on
    a GPU the numbers depend on batching. A llama-cpp-python built without GPU support says so and runs on
    the CPU rather than record an offload that never happened."""
    import llama_cpp

    def run() -> localeval.Result:
        # The summary is the subject: one sample's answer sentence, verdicts only (no generation). One cache:
        # on a CPU-only build the second run's answers are the first's (that run ran on the CPU too), and the
        # judge still loads, to key them.
        return score(RECORDS[:1], tmp_path / "c.sqlite", parallel=1, metrics=["faithfulness"],
                     faithfulness_statements="sentences")

    monkeypatch.setenv("LOCALEVAL_GPU_LAYERS", "-1")
    if llama_cpp.llama_supports_gpu_offload():
        assert run().summary["judge"]["gpu_layers"] == -1
    else:
        with pytest.warns(UserWarning, match=r"^--gpu-layers -1 \(or LOCALEVAL_GPU_LAYERS\): this llama-cpp-python was "
                          "built without GPU support"):
            offloaded = run()
        assert offloaded.summary["judge"]["gpu_layers"] == 0
    monkeypatch.delenv("LOCALEVAL_GPU_LAYERS")
    assert run().summary["judge"]["gpu_layers"] == 0


def test_a_judge_on_a_gpu_keeps_cache_entries_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a GPU a verdict's number depends on the layers offloaded and on how its tokens were batched (the
    sequences side by side, a shared prefix copied or decoded again), so those name the cache entries there;
    on the CPU the key is as it always was, so that existing caches stay valid (some CPUs round by batch too,
    by less: docs/pages/judge/engine.md). llama.cpp built for the CPU ignores the layers, so this runs here."""
    from localeval.judge import config

    def identity(backend: type, **options: int) -> dict:
        # n_ctx keys nothing; a small one spares allocating (and clearing) KV streams of 4096 tokens each
        made = backend(models.resolve(TINY, "judge"), "0" * 64, n_ctx=256, **options)
        try:
            return made.identity()
        finally:
            made.close()

    cpu = identity(SequentialLlamaBackend, n_gpu_layers=0)
    assert cpu["decoding"].keys() == {"temperature", "seed", "llama_cpp"}
    assert identity(BatchedLlamaBackend, parallel=4, n_gpu_layers=0) == cpu
    monkeypatch.setattr(config, "can_offload", lambda: True)
    gpu = {p: identity(BatchedLlamaBackend, parallel=p, n_gpu_layers=-1)["decoding"] for p in (4, 8)}
    assert gpu[4] == {**cpu["decoding"], "gpu_layers": "all", "parallel": 4, "copy_prefixes": True}
    assert gpu[8]["parallel"] == 8
    copied_none = identity(BatchedLlamaBackend, parallel=4, n_gpu_layers=-1, copy_prefixes=False)["decoding"]
    assert copied_none == {**gpu[4], "copy_prefixes": False}
    # -1 and a count beyond the model's layers offload the same layers; offloading some keys on how many
    assert identity(BatchedLlamaBackend, parallel=4, n_gpu_layers=99)["decoding"] == gpu[4]
    assert identity(BatchedLlamaBackend, parallel=4, n_gpu_layers=3)["decoding"]["gpu_layers"] == 3
    assert identity(SequentialLlamaBackend, n_gpu_layers=-1)["decoding"]["parallel"] == 1
