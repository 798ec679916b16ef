#!/usr/bin/env bash
# The one script to run on a lent GPU (an H200), from the repository root:
#   tools/gpu-check.sh
# Builds for sm_90, then in this order, so that what the issues ask comes first and an
# experiment that runs long costs only other experiments: the GPU tests; the seed benchmark
# (bench_seed_cuda, every image checked against the exact CPU image before it is timed); the seed's
# Numba CUDA kernel on the same GPU (the ratio); das_cuda_check (the CUDA DAS kernels checked
# against the CPU, then timed); kernels_cuda_check (the kernel library's copy/map/sum/max bandwidth and
# tiled SGEMM vs cuBLAS, each validated, then timed); compute-sanitizer's memcheck and racecheck on
# kernels_cuda_check --small, memcheck on the DAS GPU tests, then on the seed's, and racecheck on
# the seed's; then the experiments: DAS at every lateral-lane count (das-check-lanes), as the
# plane-wave data outgrow the L2 cache (das-check-l2), the transmit-blocked kernel split over
# launches (das-check-split), the one-block-per-SM GEMM, and Nsight Compute's counters for the seed
# and plane-wave DAS kernels (profile). Prints a table of what was measured, its summary last.
# Finishes in under 8 minutes: every step runs under `timeout` with what is left of the budget,
# and a failed step is reported while the rest still runs, so the table always comes out. On
# gVisor (kernel 4.4.0) the ncu and compute-sanitizer steps are skipped: neither works there.
#
# The device machine may lack this project's C++ packages (OpenCV, CLI11, GTest, Google Benchmark,
# nlohmann-json) and cannot install any. So:
#   1. If the full CMake project configures (all packages there), it builds the test binaries
#      and the GPU programs, and runs the tests whose names hold "Cuda" (what `ctest -R Cuda` runs).
#   2. Otherwise it compiles what the GPU path needs with nvcc alone (kernels' CUDA core, the seed
#      and general-DAS CPU and CUDA backends, the kernels' sum and matmul, the three programs: no
#      package needed; kernels_cuda_check failing to build loses only its own rows). With
#      GoogleTest's sources at hand (`tools/gpu-check.sh --pack` on the development machine puts
#      them, and nlohmann-json, in .gpu-check/ for the device tool to carry) it also builds the
#      GPU test files, the ones `ctest -R Cuda` runs, as tests_kernels_gpu and tests_recon_gpu,
#      and runs them. bench_seed_cuda runs with --verify (bit-exact with the CPU on random data and
#      on grid sizes that are not multiples of the block); das_cuda_check compares each DAS kernel
#      with the CPU before timing it in both modes. This build also makes kernels_cuda_check_gemm1, the
#      tiled GEMM with plain launch bounds, one block per multiprocessor (kernels/cuda/matmul.cu,
#      USRECON_GEMM_MIN_BLOCKS_PER_SM=0: more registers, no spills), whose SGEMM is timed beside
#      the project's two-block kernel: the table's "1 block/SM" rows.
# The Numba script is looked for at ../shared/bench/seed_numba_cuda.py (beside the checkout; that
# folder does not travel to the device machine), shared/bench/ and .gpu-check/ in the checkout, or
# $SEED_NUMBA_SCRIPT. Logs go to $OUT (when set, as on the device machine) or build-gpu-check/.
#
# Environment: GPU_CHECK_BUDGET_S (default 460), GPU_CHECK_FRAMES (default 200), JOBS,
# GPU_CHECK_BUILD_S (the nvcc-only build's limit, default 300),
# GPU_CHECK_MINIMAL=1 (skip the CMake attempt: the nvcc-only build).
# `tools/gpu-check.sh --pack` only fills .gpu-check/ (see 2.) and exits; `tools/gpu-check.sh
# --build-only` only does the nvcc-only build, strictly, and exits (CI runs it).
set -euo pipefail

# GoogleTest's totals over GPU test logs, "passed/failed/skipped unrun": unrun counts the skipped
# tests whose reason is neither "a CUDA device is present" nor "an NVIDIA driver (libcuda.so.1) is
# installed" (the tests of the no-device and no-driver paths, which a GPU machine skips by
# design): those did not run for lack of a usable device. `tools/gpu-check.sh --gtest-counts
# LOG...` prints it alone (the test CliGpuCheckCountsTheGpuTests).
gtest_counts() {
  awk '
    /^\[  PASSED  \] [0-9]+ test/ { passed += $4 }
    /^\[  FAILED  \] [0-9]+ test/ { failed += $4 }
    /^\[  SKIPPED \] [0-9]+ test/ { skipped += $4 }
    /: Skipped$/ {
      if ((getline reason) > 0 && reason !~ /device is present|driver \(libcuda\.so\.1\) is installed/) unrun += 1
    }
    END { printf "%d/%d/%d %d", passed, failed, skipped, unrun }' "$@"
}
if [[ ${1:-} == --gtest-counts ]]; then
  shift
  (($# > 0)) || { echo "gpu-check --gtest-counts: name the GoogleTest logs to count" >&2; exit 2; }
  gtest_counts "$@"
  echo
  exit 0
fi

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)

# --pack, on this (development) machine: fills .gpu-check/ (ignored by git) with what the device
# machine lacks and the nvcc-only build needs, for the device tool to carry.
if [[ ${1:-} == --pack ]]; then
  PACK=$ROOT/.gpu-check
  mkdir -p "$PACK/include"
  missing=0
  if [[ -f $ROOT/../shared/bench/seed_numba_cuda.py ]]; then
    cp "$ROOT/../shared/bench/seed_numba_cuda.py" "$PACK/"
  else
    echo "gpu-check --pack: ../shared/bench/seed_numba_cuda.py not found (the Numba rows will be n/a)" >&2
    missing=1
  fi
  if [[ -f /usr/src/googletest/googletest/src/gtest-all.cc ]]; then
    rm -rf "$PACK/googletest"
    cp -r /usr/src/googletest "$PACK/googletest"
  else
    echo "gpu-check --pack: /usr/src/googletest not found (Debian's googletest; tools/install-deps.sh)" >&2
    missing=1
  fi
  if [[ -f /usr/include/nlohmann/json.hpp ]]; then
    rm -rf "$PACK/include/nlohmann"
    cp -r /usr/include/nlohmann "$PACK/include/"
  else
    echo "gpu-check --pack: /usr/include/nlohmann not found (nlohmann-json3-dev)" >&2
    missing=1
  fi
  echo "gpu-check --pack: $PACK holds $(du -sh "$PACK" | cut -f1); on the device machine run"
  echo "  GPU_CHECK_MINIMAL=1 tools/gpu-check.sh      (carry: [\".gpu-check\"])"
  exit $missing
fi
# --build-only, on this (development) machine and in CI: the nvcc-only build of step 2 alone, for
# sm_90, where every program and test binary must build (a header the device machine cannot
# find, a source missing from its lists); runs nothing, needs no GPU, exits non-zero on failure.
BUILD_ONLY=0
if [[ ${1:-} == --build-only ]]; then
  BUILD_ONLY=1
  export GPU_CHECK_MINIMAL=1 GPU_CHECK_STRICT=1
  : "${GPU_CHECK_BUDGET_S:=1200}" "${GPU_CHECK_BUILD_S:=1100}"
fi
BUDGET=${GPU_CHECK_BUDGET_S:-460}
FRAMES=${GPU_CHECK_FRAMES:-200}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
START=$(date +%s)
WORK=$ROOT/build-gpu-check
LOGS=${OUT:-$WORK/logs}
mkdir -p "$WORK" "$LOGS"
rm -f "$WORK"/*.log  # the table reads this run's step logs only
LOG=$LOGS/gpu-check.log
: >"$LOG"

declare -A STATUS=()
ORDER=()

say() { echo "gpu-check: $*" | tee -a "$LOG"; }
left() { echo $((BUDGET - ($(date +%s) - START))); }

# run_step NAME MAX_SECONDS COMMAND...: runs with min(MAX, budget left - 20 s), logs, records.
run_step() {
  local name=$1 max=$2
  shift 2
  local limit
  limit=$(left)
  limit=$((limit - 20))
  ((limit > max)) && limit=$max
  ORDER+=("$name")
  if ((limit < 10)); then
    : >"$WORK/$name.log"  # the table reads step logs: an empty one, not a missing one
    STATUS[$name]="skipped (time budget spent)"
    say "$name: skipped, the time budget is spent"
    return 1
  fi
  say "== $name (limit ${limit}s)"
  local rc=0 step_start=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" >"$WORK/$name.log" 2>&1 || rc=$?
  local took=$(($(date +%s) - step_start))
  cat "$WORK/$name.log" >>"$LOG"
  tail -n 25 "$WORK/$name.log"
  if ((rc == 0)); then
    STATUS[$name]="ok (${took} s)"
  elif ((rc == 77)); then  # the programs' "no usable CUDA device": nothing was checked
    STATUS[$name]="skipped: no usable CUDA device (exit 77, ${took} s)"
  elif ((rc == 124 || rc == 137)); then
    STATUS[$name]="timed out after ${limit}s"
  else
    STATUS[$name]="failed (exit $rc, ${took} s)"
  fi
  say "$name: ${STATUS[$name]}"
  ((rc == 0))
}

say "started $(date -u +%FT%TZ) in $ROOT; budget ${BUDGET}s"
# The GPU, named again in the table (an H100 is lent where no kind is named; the targets are an
# H200's).
GPU_NAME="unknown GPU (nvidia-smi not found)"
if command -v nvidia-smi >/dev/null; then
  GPU_NAME=$(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader 2>&1 |
    head -n 1) || true
fi
say "GPU: $GPU_NAME; kernel $(uname -r)"
# gVisor (its kernel reports 4.4.0): ncu reads no counters there and compute-sanitizer refuses the
# device (/work/.library/device/KINDS.md), so their steps are skipped at once, not tried.
GVISOR=""
[[ $(uname -r) == 4.4.0* ]] && GVISOR="gVisor runtime: no hardware counters, no compute-sanitizer (KINDS.md)"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[[ -x $NVCC ]] || say "nvcc not found: nothing can be built"

# cuBLAS for the nvcc-only build: the toolkit's when a probe program compiles and links with
# -lcublas; otherwise (a toolkit without cuBLAS's headers or its unversioned .so) the first
# libcublas.so* (of its headers' major version, linked and run) with a cublas_v2.h beside it,
# searched in this order: the toolkit's folders, the system's, Python's NVIDIA wheels
# (PyTorch's nvidia-cublas), found on the library path at run time. Space-separated flags (no
# spaces in those paths), exported for build_minimal.
CUBLAS_CFLAGS=""
CUBLAS_LIBS="-lcublas"
find_cublas() {
  local probe=$WORK/cublas-probe
  mkdir -p "$probe"
  printf '#include <cublas_v2.h>\nint main() { return cublasGetStatusString(CUBLAS_STATUS_SUCCESS) ? 0 : 1; }\n' \
    >"$probe/probe.cu"
  "$NVCC" "$probe/probe.cu" -lcublas -o "$probe/probe" 2>"$probe/default.log" && return 0
  local roots=(/usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu)
  local site
  for site in $(python3 -c 'import site; print(*site.getsitepackages())' 2>/dev/null); do
    [[ -d $site/nvidia ]] && roots+=("$site/nvidia")
  done
  local lib dir include candidate root header_major lib_major
  for root in "${roots[@]}"; do
    while read -r lib; do
      dir=$(dirname "$lib")
      include=""
      for candidate in "$dir/../include" /usr/local/cuda/include; do
        [[ -f $candidate/cublas_v2.h ]] && { include=$(cd "$candidate" && pwd); break; }
      done
      [[ -n $include ]] || continue
      # Headers and library of one major version (libcublas.so.13 with CUDA 13's cublas_api.h).
      header_major=$(sed -n 's/^#define CUBLAS_VER_MAJOR \([0-9]*\).*/\1/p' "$include/cublas_api.h" 2>/dev/null)
      lib_major=$(basename "$(readlink -f "$lib")" | sed -n 's/^libcublas\.so\.\([0-9]*\).*/\1/p')
      [[ -n $header_major && -n $lib_major && $header_major != "$lib_major" ]] && continue
      # Only cuBLAS's own headers: a wheel's include folder also holds the CUDA runtime's, of its
      # own version, which must not shadow nvcc's.
      rm -rf "$probe/include" && mkdir -p "$probe/include"
      ln -s "$include"/cublas*.h "$probe/include/"
      # Linked and run (the probe needs no device): a library that cannot load fails here.
      if "$NVCC" -I"$probe/include" "$probe/probe.cu" -L"$dir" -l:"$(basename "$lib")" -o "$probe/probe" \
        2>>"$probe/fallback.log" && LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$probe/probe"; then
        CUBLAS_CFLAGS="-I$probe/include"
        CUBLAS_LIBS="-L$dir -l:$(basename "$lib")"
        export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        return 0
      fi
    done < <(find -H "$root" -name 'libcublas.so*' ! -name '*Lt*' 2>/dev/null | sort)
  done
  return 1
}
if [[ -x $NVCC ]]; then
  if find_cublas; then
    [[ $CUBLAS_LIBS == -lcublas ]] || say "cuBLAS: not in the toolkit's default paths; using $CUBLAS_LIBS $CUBLAS_CFLAGS"
  else
    say "cuBLAS: no libcublas that links was found (see $WORK/cublas-probe/*.log); the nvcc-only build will fail"
  fi
fi
export CUBLAS_CFLAGS CUBLAS_LIBS

# ---- 1. Build -------------------------------------------------------------------------------------
BENCH=""
DAS_CHECK=""
KERNELS_CHECK=""
KERNELS_CHECK_GEMM1=""  # nvcc-only build: the tiled GEMM with one block per multiprocessor
MODE=""
if [[ ${GPU_CHECK_MINIMAL:-0} == 1 ]]; then
  say "GPU_CHECK_MINIMAL=1: skipping the full CMake build"
elif run_step configure 60 cmake -S "$ROOT" -B "$WORK/cmake" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_COMPILER="$NVCC" -DUSRECON_CUDA=ON; then
  if run_step build 240 cmake --build "$WORK/cmake" --target tests_kernels tests_recon bench_seed_cuda \
    das_cuda_check kernels_cuda_check -j "$JOBS"; then
    MODE=cmake
    BENCH=$WORK/cmake/tools/bench/bench_seed_cuda
    DAS_CHECK=$WORK/cmake/tools/bench/das_cuda_check
    KERNELS_CHECK=$WORK/cmake/tools/bench/kernels_cuda_check
  fi
fi
if [[ -z $MODE ]]; then
  say "full CMake build unavailable (see above); building the GPU path with nvcc alone"
  build_minimal() {
    local obj=$WORK/min
    mkdir -p "$obj/include/usrecon/kernels"
    # usrecon/kernels/config.hpp as CMake writes it for a build with CUDA, the version from
    # CMakeLists.txt's project() line.
    local version major minor patch
    version=$(sed -n 's/^project(usrecon VERSION \([0-9]*\.[0-9]*\.[0-9]*\).*/\1/p' "$ROOT/CMakeLists.txt")
    IFS=. read -r major minor patch <<< "$version"
    sed -e 's/^#cmakedefine USRECON_HAVE_CUDA 1$/#define USRECON_HAVE_CUDA 1/' \
      -e "s/@PROJECT_VERSION@/$version/; s/@PROJECT_VERSION_MAJOR@/$major/" \
      -e "s/@PROJECT_VERSION_MINOR@/$minor/; s/@PROJECT_VERSION_PATCH@/$patch/" \
      "$ROOT/kernels/include/usrecon/kernels/config.hpp.in" > "$obj/include/usrecon/kernels/config.hpp"
    if grep -q '@' "$obj/include/usrecon/kernels/config.hpp"; then
      say "config.hpp keeps a placeholder (is the project() line in CMakeLists.txt still 'project(usrecon VERSION X.Y.Z'?)"
      return 1
    fi
    local flags=(-std=c++20 -O3 --fmad=false -arch=sm_90 -Xcompiler -ffp-contract=off -I"$obj/include"
                 -I"$ROOT/kernels/include" -I"$ROOT/io/include" -I"$ROOT/recon/include"
                 -DUSRECON_SOURCE_DIR="\"$ROOT\"" -DUSRECON_BINARY_DIR="\"$WORK\""
                 -DUSRECON_SHARED_DIR="\"$ROOT/../shared\"" $CUBLAS_CFLAGS)
    local cublas=($CUBLAS_LIBS)
    local common=(kernels/cpu/parallel.cpp kernels/cpu/errors.cpp kernels/cuda/cuda_info.cu
                  kernels/cuda/cuda_memory.cu)
    local seed=(recon/cpu/seed_cpu.cpp recon/cpu/seed_reference.cpp recon/cuda/seed_cuda.cu)
    local das_host=(recon/cpu/das_cpu.cpp recon/pipeline/das_geometry.cpp)
    local das=("${das_host[@]}" recon/cuda/das_cuda.cu)
    # sum(), matmul() and monte_carlo_count() dispatch in cpu/reduce.cpp, cpu/matmul.cpp and
    # cpu/random.cpp; matmul.cpp needs the CPU GEMM tiles (compiled here without their -m flags:
    # correct, only the unused CPU path is slower); add() on device arrays is instantiated in
    # cuda/ufuncs.cu. No OpenBLAS: CPU blas would throw.
    local kernels=(kernels/cpu/reduce.cpp kernels/cpu/matmul.cpp kernels/cpu/gemm_generic.cpp
                   kernels/cpu/gemm_avx2.cpp kernels/cpu/gemm_avx512.cpp kernels/cpu/random.cpp
                   kernels/cuda/ufuncs.cu kernels/cuda/reduce.cu kernels/cuda/matmul.cu
                   kernels/cuda/cublas.cu kernels/cuda/random.cu)
    # The GoogleTest GPU tests, when GoogleTest's sources are at hand: carried in .gpu-check/ by
    # `tools/gpu-check.sh --pack`, or Debian's /usr/src/googletest. test_seed_cuda.cpp also needs
    # nlohmann/json.hpp (carried in .gpu-check/include/ by --pack) and the seed backends' factory.
    local gtest="" candidate
    for candidate in "$ROOT/.gpu-check/googletest" /usr/src/googletest; do
      if [[ -f $candidate/googletest/src/gtest-all.cc ]]; then gtest=$candidate/googletest; break; fi
    done
    # -isystem, as CMake includes packages: nvcc then does not warn (#177) of each TEST macro's
    # unreferenced registration member.
    local test_flags=(-isystem "$ROOT/.gpu-check/include" -isystem "$gtest/include" -I"$gtest" -I"$ROOT/tests")
    local test_support=(recon/pipeline/backend.cpp recon/pipeline/das_simulate.cpp recon/pipeline/simulate.cpp
                        recon/cpu/das_reference.cpp)
    local kernel_tests=(tests/kernels/test_kernel_cuda.cu)
    local recon_tests=(tests/recon/test_seed_cuda.cpp tests/recon/test_das_cuda.cpp)
    local gtest_sources=()
    [[ -n $gtest ]] && gtest_sources=("$gtest/src/gtest-all.cc" "$gtest/src/gtest_main.cc")

    # o SOURCE: its object's path. Sources are compiled in parallel, in three groups whose failures
    # cost different things: the core (the seed and DAS checks need it), the kernel library's
    # check, and the GoogleTest binaries.
    o() { echo "$obj/$(basename "$1").o"; }
    compile() {  # compile PIDS_ARRAY_NAME EXTRA_FLAGS_ARRAY_NAME SOURCES...
      local -n pids_=$1 extra_=$2
      shift 2
      local src path
      for src in "$@"; do
        path=$src
        [[ $path == /* ]] || path=$ROOT/$src
        "$NVCC" "${flags[@]}" "${extra_[@]}" -c "$path" -o "$(o "$src")" &
        pids_+=($!)
      done
    }
    # The libraries' error messages name their sources from the tree's root (kernels/cuda/...), as
    # CMake's usrecon_relative_file_names does; tests and benchmarks keep full paths. Not under a
    # path with a space or a comma, which -Xcompiler would split.
    local library=()
    [[ $ROOT == *[\ ,]* ]] || library=(-Xcompiler "-fmacro-prefix-map=$ROOT/=")
    local none=() core_pids=() kernel_pids=() gtest_pids=() kernel_test_pids=() recon_test_pids=()
    compile core_pids library "${common[@]}" "${seed[@]}" "${das[@]}"
    compile core_pids none tools/bench/bench_seed_cuda.cu tools/bench/das_cuda_check.cu
    compile kernel_pids library "${kernels[@]}"
    compile kernel_pids none tools/bench/kernels_cuda_check.cu
    # The tiled GEMM once more with plain __launch_bounds__(256), for kernels-check-gemm1: ptxas's
    # report (registers, spills) goes to this step's log. Optional, like kernels_cuda_check.
    mkdir -p "$obj/gemm1"
    "$NVCC" "${flags[@]}" -DUSRECON_GEMM_MIN_BLOCKS_PER_SM=0 -Xptxas -v -c "$ROOT/kernels/cuda/matmul.cu" \
      -o "$obj/gemm1/matmul.cu.o" &
    local gemm1_pid=$!
    if [[ -n $gtest ]]; then
      compile gtest_pids test_flags "${gtest_sources[@]}"
      compile kernel_test_pids test_flags "${kernel_tests[@]}"
      compile recon_test_pids test_flags "${test_support[@]}" "${recon_tests[@]}"
    fi
    local failed=0 kernels_failed=0 gtest_failed=0 kernel_tests_failed=0 recon_tests_failed=0 pid
    for pid in "${core_pids[@]}"; do wait "$pid" || failed=1; done
    for pid in "${kernel_pids[@]}"; do wait "$pid" || kernels_failed=1; done
    for pid in "${gtest_pids[@]}"; do wait "$pid" || gtest_failed=1; done
    for pid in "${kernel_test_pids[@]}"; do wait "$pid" || kernel_tests_failed=1; done
    for pid in "${recon_test_pids[@]}"; do wait "$pid" || recon_tests_failed=1; done
    local gemm1_failed=0
    wait "$gemm1_pid" || gemm1_failed=1
    ((failed == 0)) || return 1
    objects() { local s; for s in "$@"; do o "$s"; done; }
    local link=("$NVCC" -arch=sm_90 -Xcompiler -pthread)
    # kernels_cuda_check and the test binaries are optional here: a failure is reported, the
    # seed and DAS checks still run.
    rm -f "$obj/kernels_cuda_check" "$obj/tests_kernels_gpu" "$obj/tests_recon_gpu" \
      "$obj/kernels_cuda_check_gemm1"
    if ((kernels_failed == 0)); then
      "${link[@]}" $(objects "${common[@]}" "${kernels[@]}" tools/bench/kernels_cuda_check.cu) "${cublas[@]}" \
        -o "$obj/kernels_cuda_check" || kernels_failed=1
    fi
    ((kernels_failed == 0)) || echo "build_minimal: kernels_cuda_check did not build (see above)"
    if ((kernels_failed == 0 && gemm1_failed == 0)); then
      local gemm1_objects=() object
      for object in $(objects "${common[@]}" "${kernels[@]}" tools/bench/kernels_cuda_check.cu); do
        [[ $object == */matmul.cu.o ]] && object=$obj/gemm1/matmul.cu.o
        gemm1_objects+=("$object")
      done
      "${link[@]}" "${gemm1_objects[@]}" "${cublas[@]}" -o "$obj/kernels_cuda_check_gemm1" || gemm1_failed=1
    fi
    ((kernels_failed == 0 && gemm1_failed == 0)) || echo "build_minimal: kernels_cuda_check_gemm1 did not build"
    # Each test binary links when its own objects compiled (a recon test that fails to compile
    # must not cost the kernel library's tests, nor the other way round). Only the kernel
    # library's programs use cuBLAS: the others link without it, so that a device whose cuBLAS
    # cannot be found still runs the seed and DAS checks and their tests.
    if [[ -z $gtest ]]; then
      echo "build_minimal: no GoogleTest sources (run tools/gpu-check.sh --pack and carry .gpu-check)"
    elif ((gtest_failed != 0)); then
      echo "build_minimal: GoogleTest's own sources did not compile (see above)"
    else
      if ((kernel_tests_failed == 0 && kernels_failed == 0)); then
        "${link[@]}" $(objects "${common[@]}" "${kernels[@]}" "${kernel_tests[@]}" "${gtest_sources[@]}") \
          "${cublas[@]}" -o "$obj/tests_kernels_gpu" || echo "build_minimal: tests_kernels_gpu did not link"
      else
        echo "build_minimal: tests_kernels_gpu not built: its sources or the kernel library's did not compile (see above)"
      fi
      if ((recon_tests_failed == 0)); then
        "${link[@]}" $(objects "${common[@]}" "${seed[@]}" "${das[@]}" "${test_support[@]}" \
          "${recon_tests[@]}" "${gtest_sources[@]}") -o "$obj/tests_recon_gpu" ||
          echo "build_minimal: tests_recon_gpu did not link"
      else
        echo "build_minimal: tests_recon_gpu not built: its sources did not compile (see above)"
      fi
    fi
    "${link[@]}" $(objects "${common[@]}" "${seed[@]}" tools/bench/bench_seed_cuda.cu) \
      -o "$obj/bench_seed_cuda" &&
      "${link[@]}" $(objects "${common[@]}" "${das[@]}" tools/bench/das_cuda_check.cu) \
        -o "$obj/das_cuda_check" || return 1
    # --build-only (CI on the development machine): everything must build, optional parts too.
    if [[ ${GPU_CHECK_STRICT:-0} == 1 ]]; then
      local program missing=0
      for program in bench_seed_cuda das_cuda_check kernels_cuda_check kernels_cuda_check_gemm1 \
        tests_kernels_gpu tests_recon_gpu; do
        [[ -x $obj/$program ]] || { echo "build_minimal: $program was not built"; missing=1; }
      done
      ((missing == 0)) || return 1
    fi
  }
  export -f build_minimal
  export NVCC ROOT WORK
  if run_step build-minimal "${GPU_CHECK_BUILD_S:-300}" bash -c build_minimal; then
    MODE=minimal
    BENCH=$WORK/min/bench_seed_cuda
    DAS_CHECK=$WORK/min/das_cuda_check
    KERNELS_CHECK=$WORK/min/kernels_cuda_check
    [[ -x $WORK/min/kernels_cuda_check_gemm1 ]] && KERNELS_CHECK_GEMM1=$WORK/min/kernels_cuda_check_gemm1
  fi
fi
if ((BUILD_ONLY)); then
  # As the CMake build does, a machine without the CUDA Toolkit builds without the CUDA backends.
  [[ -x $NVCC ]] || { say "build-only: skipped, no nvcc (the CUDA backends are not built here)"; exit 0; }
  [[ $MODE == minimal ]] || { say "build-only: the nvcc-only build failed (see $WORK/build-minimal.log)"; exit 1; }
  say "build-only: every GPU program and test binary built (nvcc-only, sm_90)"
  exit 0
fi

# ---- 2. GPU tests ---------------------------------------------------------------------------------
# The GoogleTest binaries themselves (not ctest), so that each skipped test's reason is in the log:
# the table counts a test skipped for lack of a device as not run. In the nvcc-only build they
# hold the same test files as ctest -R Cuda selects, and their host-only tests (seconds).
GTEST_BINARIES=()
[[ $MODE == cmake ]] && GTEST_BINARIES=("$WORK/cmake/tests/tests_kernels" "$WORK/cmake/tests/tests_recon")
[[ $MODE == minimal ]] && GTEST_BINARIES=("$WORK/min/tests_kernels_gpu" "$WORK/min/tests_recon_gpu")
gtest_built=0
for binary in "${GTEST_BINARIES[@]}"; do
  [[ -x $binary ]] || continue
  gtest_built=1
  module=$(basename "$binary" _gpu)
  # Not the consumer tests whose names hold "Cuda" (the full build's tests_kernels): each builds
  # and installs whole packages, minutes the step's limit does not have.
  run_step "gpu-tests-${module#tests_}" 200 "$binary" --gtest_filter='*Cuda*-KernelConsumer.*' --gtest_color=no || true
done
if [[ -n $MODE ]] && ((gtest_built == 0)); then
  ORDER+=(gpu-tests)
  STATUS[gpu-tests]="not built (see build-minimal.log: no GoogleTest sources, or they did not compile)"
  say "gpu-tests: ${STATUS[gpu-tests]}; bench_seed_cuda --verify still compares the seed backend with the CPU"
fi

# ---- 3. Benchmark ---------------------------------------------------------------------------------
BENCH_OUT=$WORK/bench.out
: >"$BENCH_OUT"
if [[ -n $BENCH ]]; then
  verify=()
  [[ $MODE == minimal ]] && verify=(--verify)
  run_step bench 150 "$BENCH" --data "$ROOT/data/example.txt" --frames "$FRAMES" --streams 3 \
    "${verify[@]}" || true
  cp "$WORK/bench.log" "$BENCH_OUT" 2>/dev/null || true
fi
get() { sed -n "s/^RESULT $1=//p" "$BENCH_OUT" | tail -n 1; }  # a bench figure (the table, the profile step)

# ---- 4. The seed's Numba CUDA kernel on the same GPU (the issue's ratio: right after the bench) ---
NUMBA=""
for candidate in "${SEED_NUMBA_SCRIPT:-}" "$ROOT/../shared/bench/seed_numba_cuda.py" \
  "$ROOT/shared/bench/seed_numba_cuda.py" "$ROOT/.gpu-check/seed_numba_cuda.py"; do
  if [[ -n $candidate && -f $candidate ]]; then NUMBA=$candidate; break; fi
done
NUMBA_OUT=$WORK/numba.log
: >"$NUMBA_OUT"
if [[ -z $NUMBA ]]; then
  ORDER+=(numba)
  STATUS[numba]="skipped (seed_numba_cuda.py not found; copy it to .gpu-check/ and carry it)"
  say "${STATUS[numba]}"
else
  # The first Python that has numba and numpy: PATH's python3 may be another installation's
  # (pyenv) without them, while Debian's python3-numba lives under /usr/bin.
  PYTHON=python3
  for candidate in python3 /usr/bin/python3; do
    if "$candidate" -c 'import numba, numpy' 2>/dev/null; then PYTHON=$candidate; break; fi
  done
  # Through run_numba_seed.py: it restores NumPy names that the machine's numba-cuda still
  # registers and its NumPy removed (np.row_stack), then runs the seed's script as it is.
  PYTHONUNBUFFERED=1 run_step numba 180 "$PYTHON" "$ROOT/tools/bench/run_numba_seed.py" "$NUMBA" \
    "$ROOT/data/example.txt" || true
fi

# ---- 5. General DAS: the CUDA kernels against the CPU, then timed ---------------------------------
DAS_OUT=$WORK/das-check.log
: >"$DAS_OUT"
if [[ -n $DAS_CHECK ]]; then
  run_step das-check 120 "$DAS_CHECK" --reps 10 || true
fi
# ---- 6. The kernel library: copy/map/sum bandwidth, tiled SGEMM vs cuBLAS, validated then timed ---
KERNELS_OUT=$WORK/kernels-check.log
: >"$KERNELS_OUT"
if [[ -n $KERNELS_CHECK && -x $KERNELS_CHECK ]]; then
  run_step kernels-check 120 "$KERNELS_CHECK" --reps 10 || true
elif [[ -n $KERNELS_CHECK ]]; then
  ORDER+=(kernels-check)
  STATUS[kernels-check]="not built (see the build-minimal log)"
  say "kernels-check: ${STATUS[kernels-check]}"
fi
# ---- 7. compute-sanitizer, at small sizes, before the experiments ---------------------------------
# memcheck (out-of-bounds and misaligned accesses) and racecheck (shared-memory hazards: a missing
# __syncthreads in the tiled GEMM or the sum's tree) on `kernels_cuda_check --small`, then memcheck
# on the DAS and seed GPU tests (small problems: every DAS kernel, model and option, the seed
# kernels on odd grid sizes) and racecheck on the seed's (its pair splits' shared memory). Skipped when the budget is spent or the tool is missing; neither, nor
# a time-out, makes the check fail (the status says so).
SANITIZER=""
for candidate in "$(command -v compute-sanitizer 2>/dev/null || true)" /usr/local/cuda/bin/compute-sanitizer \
  /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
  if [[ -n $candidate && -x $candidate ]]; then SANITIZER=$candidate; break; fi
done
RECON_TESTS=${GTEST_BINARIES[1]:-}  # the recon tests' binary, of either build
# Under gVisor, compute-sanitizer refuses the device ("Device not supported", then error 999 in
# the program: /work/.library/device/KINDS.md): that is the tool's limit, not the code's, so the
# step says so and counts as skipped, and the other sanitizer steps are not tried.
SANITIZER_REFUSED=$GVISOR
sanitizer_step() {  # sanitizer_step NAME LIMIT_S ARGS...: run_step, the refusal told apart
  local name=$1
  if [[ -n $SANITIZER_REFUSED ]]; then
    ORDER+=("$name")
    STATUS[$name]="skipped ($SANITIZER_REFUSED)"
    return 0
  fi
  run_step "$@" || true
  # Looked for whatever the exit status: a program that found no usable device under the tool
  # may still exit 0 (its tests skipped), and then nothing was checked either.
  if grep -qi "device not supported" "$WORK/$name.log" 2>/dev/null; then
    SANITIZER_REFUSED="compute-sanitizer: device not supported on this machine"
    STATUS[$name]="skipped ($SANITIZER_REFUSED)"
    say "$name: ${STATUS[$name]}"
  elif [[ ${STATUS[$name]} == ok* ]] && grep -q '^\[  PASSED  \] 0 tests' "$WORK/$name.log" 2>/dev/null; then
    # A GoogleTest binary whose tests all skipped (no device under the tool) exits 0: no kernel ran.
    STATUS[$name]="skipped (every test skipped: no usable device under compute-sanitizer)"
    say "$name: ${STATUS[$name]}"
  fi
}
if [[ -z $SANITIZER ]]; then
  ORDER+=(memcheck)
  STATUS[memcheck]="skipped (no compute-sanitizer found)"
  say "compute-sanitizer steps skipped (no compute-sanitizer found)"
else
  if [[ -n $KERNELS_CHECK && -x $KERNELS_CHECK ]]; then
    for tool in memcheck racecheck; do
      sanitizer_step "$tool" 90 "$SANITIZER" --tool "$tool" --error-exitcode 3 "$KERNELS_CHECK" --small
    done
  else
    for name in memcheck racecheck; do
      ORDER+=("$name")
      STATUS[$name]="skipped (kernels_cuda_check not built)"
    done
  fi
  if [[ -z $RECON_TESTS || ! -x $RECON_TESTS ]]; then
    # Listed as not run, so that the sanitizer row cannot read clean for the kernel library's
    # two steps alone when the seed and DAS kernels went unchecked.
    for name in memcheck-das memcheck-seed racecheck-recon; do
      ORDER+=("$name")
      STATUS[$name]="skipped (tests_recon_gpu not built)"
    done
  else
    # DAS first: the seed's bit-exactness test builds every seed kernel variant (hundreds of
    # beamformers), slow under memcheck; were it first, a time-out would leave the DAS unchecked.
    sanitizer_step memcheck-das 90 "$SANITIZER" --tool memcheck --error-exitcode 3 "$RECON_TESTS" \
      --gtest_filter='ReconDasCuda.*'
    # The bit-exactness test's cases up to 32 channels (USRECON_TEST_SEED_MAX_CHANNELS): its
    # 200x150x128 case is 98 % of its GPU work, which the sanitizers slow 10-100x; every split,
    # precision and sample type is in the smaller cases, and gpu-tests-recon ran them all.
    USRECON_TEST_SEED_MAX_CHANNELS=32 sanitizer_step memcheck-seed 120 "$SANITIZER" --tool memcheck \
      --error-exitcode 3 "$RECON_TESTS" --gtest_filter='ReconSeedCuda.BitExact*:ReconSeedCuda.Overlapped*'
    # The seed kernel's pair splits hand their sums over in shared memory behind a barrier; the
    # other splits use no shared memory, so only those (keys with "_s2") are built here, 11 of 23
    # of the test's beamformers (USRECON_TEST_SEED_SPLITS).
    USRECON_TEST_SEED_MAX_CHANNELS=32 USRECON_TEST_SEED_SPLITS=_s2 sanitizer_step racecheck-recon 120 \
      "$SANITIZER" --tool racecheck --error-exitcode 3 "$RECON_TESTS" --gtest_filter='ReconSeedCuda.BitExact*'
  fi
fi

# ---- 8. Experiments, last: lateral lanes, L2 sizes, split launches, one-block GEMM, profile -------
# Their rows say what the defaults should be; none fails the check, and none may cost the rows
# above (the issues' targets and the sanitizers), so they get what time is left.
# Warps of 32 / L depths x L image columns (DasCudaTuning::lateral_lanes) against the measured 32
# depths of one column, every kernel: a depth step moves a sample position ~1.3 samples, a lateral
# step ~0.1, so wider warps touch fewer cache lines (counted, not timed: 3.4 -> 1.3 lines a warp's
# load at L = 8; a block's sectors from L2 0.33 -> 0.05 a point). Each L must give the L = 1 image
# bit for bit. The rows say which L the defaults should take. An experiment: its failure does not
# fail the check.
DAS_LANES_OUT=$WORK/das-check-lanes.log
: >"$DAS_LANES_OUT"
if [[ -n $DAS_CHECK ]]; then
  run_step das-check-lanes 100 "$DAS_CHECK" --reps 5 --cases rfdata1,picmus,dw7 --lateral-lanes 1,2,4,8,16,32 || true
fi
# The plane-wave kernels as the channel data outgrow the L2 cache (50 MiB on an H200): 8, 16 and
# 32 plane waves of PICMUS's size, 28, 56 and 111 MB of (I, Q) pairs (padded channels). On the first GPU run
# transmit-blocked was the fastest with 7 transmits (20 MB) and 0.76 times as fast as
# element-outer with PICMUS's 75 (260 MB); these rows say where between the two it turns, for --cuda-kernel auto.
# transmit-blocked runs as its default here: past 1.25 x the L2 (pw32 on an H200) in launches of 8
# transmits, not the one launch of 2026-12-04's rows; das-check-split times both.
# An experiment: its failure does not fail the check.
DAS_L2_OUT=$WORK/das-check-l2.log
: >"$DAS_L2_OUT"
if [[ -n $DAS_CHECK ]]; then
  run_step das-check-l2 60 "$DAS_CHECK" --reps 5 --cases pw8,pw16,pw32 \
    --kernels element-outer,transmit-blocked || true
fi
# Transmit-blocked launches of a few transmits each (Plan::transmits_per_launch), so that each
# launch's data stay in the L2, against one launch over all the transmits: PICMUS's 75 and pw32's
# 32 plane waves, in one launch (0) and in launches of 8, 16 and 24 transmits. The rows beside
# element-outer say whether --cuda-kernel auto should take the split transmit-blocked kernel past
# the cache. An experiment: its failure does not fail the check.
DAS_SPLIT_OUT=$WORK/das-check-split.log
: >"$DAS_SPLIT_OUT"
if [[ -n $DAS_CHECK ]]; then
  run_step das-check-split 90 "$DAS_CHECK" --reps 5 --cases picmus,pw32 \
    --kernels transmit-blocked --transmits-per-launch 0,8,16,24 || true
fi

# The tiled GEMM with one block per multiprocessor: its SGEMM validated in the same way, then
# timed with cuBLAS again. An experiment, like das-check-l2: it does not fail the check.
KERNELS_GEMM1_OUT=$WORK/kernels-check-gemm1.log
: >"$KERNELS_GEMM1_OUT"
if [[ -n $KERNELS_CHECK_GEMM1 ]]; then
  run_step kernels-check-gemm1 60 "$KERNELS_CHECK_GEMM1" --reps 10 --sgemm-only || true
fi

# ---- 8e. Nsight Compute: what bounds the kernels that miss their targets --------------------------
# The seed kernel (75x Numba where the issue asks 100x) and the plane-wave DAS kernels (1.0e12
# points/s on PICMUS's size where it asks 1.2e12) are timed above; the counters say why they take
# that long: occupancy, issue-slot use, L1/L2/DRAM throughput and hit rates, and what the warps
# wait on. Seed: the default split in both precisions, the fastest split of each precision from the
# bench step, and the single-precision splits built to attack latency and L1 lines (two lateral
# lanes, two pair splits, four pairs a step, P = 16 at two pair splits, one and two steps of
# loads ahead); one launch each
# (bench_seed_cuda --profile, each image checked bit for bit). DAS: element-outer and
# transmit-blocked on RFdata1's and PICMUS's sizes at one and eight lateral lanes
# (das_cuda_check --profile; transmit-blocked on PICMUS runs in launches of 8 transmits). Then the
# seed's default single-precision kernel once more with sampled stalls per SASS instruction (the
# source page). Reports, their raw pages (CSV) and details go to the logs; ncu_summary.py prints a
# line a launch. Clocks left alone (--clock-control none: the device's README). An experiment: its
# failure does not fail the check; under gVisor ncu reads no counters (KINDS.md).
NCU=""
for candidate in "$(command -v ncu 2>/dev/null || true)" /usr/local/cuda/bin/ncu \
  $(ls -d /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | sort -V -r); do  # the newest installed
  if [[ -n $candidate && -x $candidate ]]; then NCU=$candidate; break; fi
done
PROFILE_SUMMARY=$WORK/profile-summary.txt
: >"$PROFILE_SUMMARY"
if [[ -z $NCU || -n $GVISOR ]]; then
  ORDER+=(profile)
  STATUS[profile]="skipped (${GVISOR:-no ncu found})"
  say "profile: ${STATUS[profile]}"
elif [[ -z $BENCH || -z $DAS_CHECK ]]; then
  ORDER+=(profile)
  STATUS[profile]="skipped (nothing built to profile)"
  say "profile: ${STATUS[profile]}"
else
  SEED_PROFILE="single:px8,double:px8,single:px8_l2,single:px8_s2,single:px8_p4,single:px16_s2,single:px8_a1,single:px8_a2"
  for prec in single double; do  # the bench step's fastest split (its WorkSplit::key())
    [[ -n $(get best_key_$prec) ]] || continue
    key="$prec:$(get best_key_$prec)"
    [[ ,$SEED_PROFILE, == *,$key,* ]] || SEED_PROFILE+=",$key"
  done
  profile_all() {
    local listed sections=() section rc=0
    listed=$("$NCU" --list-sections 2>&1) || { echo "$listed"; return 1; }
    for section in SpeedOfLight Occupancy LaunchStats WarpStateStats SchedulerStats MemoryWorkloadAnalysis \
      ComputeWorkloadAnalysis; do
      if grep -qw "$section" <<<"$listed"; then sections+=(--section "$section"); else echo "profile: ncu has no section $section"; fi
    done
    local common=(--target-processes all --clock-control none --force-overwrite)
    # Nothing of an earlier run may pass for this one's (build-gpu-check/ and the logs persist).
    rm -f "$WORK"/profile-*.ncu-rep "$LOGS"/profile-*-raw.csv "$LOGS/profile-seed-sass.csv" "$PROFILE_SUMMARY"
    : >"$LOGS/profile-details.txt"
    # profile_report NAME NCU-ARGS... -- PROGRAM...: profiles, then writes the report's raw page
    # and details at once and summarizes every report so far, so that a step cut short by its
    # time limit keeps what it measured.
    profile_report() {
      local name=$1 args=()
      shift
      while [[ $1 != -- ]]; do args+=("$1"); shift; done
      shift
      "$NCU" "${common[@]}" "${sections[@]}" "${args[@]}" --export "$WORK/profile-$name" "$@" || rc=1
      [[ -f $WORK/profile-$name.ncu-rep ]] || { echo "profile: no $name report"; rc=1; return; }
      # Base units (times in nanoseconds in every row); without, if this ncu lacks the option.
      "$NCU" --import "$WORK/profile-$name.ncu-rep" --page raw --csv --print-units base \
        >"$LOGS/profile-$name-raw.csv" 2>/dev/null ||
        "$NCU" --import "$WORK/profile-$name.ncu-rep" --page raw --csv >"$LOGS/profile-$name-raw.csv" || rc=1
      "$NCU" --import "$WORK/profile-$name.ncu-rep" >>"$LOGS/profile-details.txt" || rc=1
      "$PYTHON_FOR_SUMMARY" "$ROOT/tools/bench/ncu_summary.py" "$LOGS"/profile-*-raw.csv >"$PROFILE_SUMMARY" || rc=1
    }
    echo "profile: seed kernel launches: $SEED_PROFILE"
    profile_report seed --kernel-name regex:seed_kernel -- "$BENCH" --data "$ROOT/data/example.txt" \
      --profile "$SEED_PROFILE"
    # DAS launches in this order: RFdata1's element-outer and transmit-blocked at 1 and 8 lanes,
    # PICMUS's element-outer at 1 and 8, then its transmit-blocked in launches of 8 transmits
    # (10 a frame): 16 launches keep the first lane count's.
    profile_report das --kernel-name 'regex:das_(planewave_)?kernel' --launch-count 16 -- "$DAS_CHECK" --profile \
      --cases rfdata1,picmus --kernels element-outer,transmit-blocked --lateral-lanes 1,8
    cat "$PROFILE_SUMMARY"
    # Where the default seed kernel's warps wait, instruction by instruction (sampled).
    "$NCU" "${common[@]}" --section SourceCounters --section WarpStateStats --kernel-name regex:seed_kernel \
      --launch-count 1 --export "$WORK/profile-seed-source" "$BENCH" --data "$ROOT/data/example.txt" \
      --profile single:px8 >/dev/null || rc=1
    "$NCU" --import "$WORK/profile-seed-source.ncu-rep" --page source --csv --print-source sass \
      >"$LOGS/profile-seed-sass.csv" || rc=1
    return $rc
  }
  PYTHON_FOR_SUMMARY=$(command -v python3 || echo /usr/bin/python3)
  export -f profile_all
  export NCU BENCH DAS_CHECK ROOT WORK LOGS SEED_PROFILE PROFILE_SUMMARY PYTHON_FOR_SUMMARY
  run_step profile 150 bash -c profile_all || true
fi

# ---- 9. The table ---------------------------------------------------------------------------------
NUMBA_S=$(sed -n 's/^kernel seconds median \([0-9.eE+-]*\).*/\1/p' "$NUMBA_OUT" 2>/dev/null | tail -n 1)
KD=$(get kernel_ms_double)
KS=$(get kernel_ms_single)
FD=$(get batch_fps_double)
FS=$(get batch_fps_single)
fmt() { [[ -n ${1:-} ]] && printf '%.4g' "$1" || printf 'n/a'; }
# a / b shown to one decimal with an x; its target is checked on the quotient itself (rounding
# 99.5x to "100x" passed the >= 100x target).
ratio() { [[ -n ${1:-} && -n ${2:-} ]] && awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else printf "n/a" }' || printf 'n/a'; }
# a / b to 4 digits (or printf format $3); nothing (which fmt shows as n/a) unless both are
# numbers and b > 0 (gawk stops at a division by zero).
quotient() {
  awk -v a="${1:-}" -v b="${2:-}" -v f="${3:-%.4g}" 'BEGIN { n = "^[-+]?[0-9.]+([eE][-+]?[0-9]+)?$"
    if (a ~ n && b ~ n && b + 0 > 0) printf f, a / b }'
}
meets() {  # value op target; '?' when the value was not measured
  [[ ${1:-} =~ ^[0-9.eE+-]+$ ]] || { printf '?'; return; }
  awk -v v="$1" -v t="$3" -v op="$2" 'BEGIN { ok = (op == "<=") ? (v <= t) : (v >= t); printf ok ? "yes" : "NO" }'
}
gpu_test_counts() {
  local logs=() f
  for f in "$WORK"/gpu-tests-*.log; do [[ -s $f ]] && logs+=("$f"); done
  ((${#logs[@]} > 0)) || { printf 'n/a -1'; return; }
  gtest_counts "${logs[@]}"
}
read -r GPU_TESTS GPU_TESTS_UNRUN <<<"$(gpu_test_counts)"
NUMBA_MS=""
[[ -n $NUMBA_S ]] && NUMBA_MS=$(awk -v s="$NUMBA_S" 'BEGIN { printf "%.6g", s * 1000 }')
RATIO_S=$(ratio "$NUMBA_MS" "$KS")
RATIO_D=$(ratio "$NUMBA_MS" "$KD")
# Unrounded for the target (4 digits print 99.996 as 100).
RATIO_S_EXACT=$(quotient "$NUMBA_MS" "$KS" %.12g)
# compute-sanitizer: "clean/run/not run" over its steps (a step that timed out or was skipped
# checked nothing; one that failed found an error, or could not run).
sanitizer_counts() {
  local clean=0 ran=0 not_run=0 name
  for name in "${ORDER[@]}"; do
    [[ $name == memcheck* || $name == racecheck* ]] || continue
    case ${STATUS[$name]} in
      ok*) clean=$((clean + 1)); ran=$((ran + 1)) ;;
      failed*) ran=$((ran + 1)) ;;
      *) not_run=$((not_run + 1)) ;;
    esac
  done
  printf '%d/%d/%d' "$clean" "$ran" "$not_run"
}
SANITIZERS=$(sanitizer_counts)
{
  echo
  echo "usrecon gpu-check ($(date -u +%FT%TZ), $(($(date +%s) - START)) s, build: ${MODE:-none})"
  echo "GPU: $GPU_NAME"
  echo "steps:"
  for name in "${ORDER[@]}"; do printf '  %-18s %s\n' "$name" "${STATUS[$name]}"; done
  echo
  printf '| %-44s | %12s | %10s | %4s |\n' "measure" "value" "target" "met"
  printf '|%s|%s|%s|%s|\n' "----------------------------------------------" "--------------" "------------" "------"
  gpu_met="?"
  if [[ $GPU_TESTS == */*/* ]]; then
    gpu_met=NO
    (($(cut -d/ -f2 <<<"$GPU_TESTS") == 0 && GPU_TESTS_UNRUN == 0)) && gpu_met=yes
    # A binary that crashed or timed out prints no totals: its step's status says so.
    for name in "${ORDER[@]}"; do
      [[ $name == gpu-tests-* && ${STATUS[$name]} != ok* ]] && gpu_met=NO
    done
  fi
  printf '| %-44s | %12s | %10s | %4s |\n' "GPU tests passed/failed/skipped (GoogleTest)" "$GPU_TESTS" "all ran" "$gpu_met"
  [[ $GPU_TESTS_UNRUN -gt 0 ]] &&
    printf '| %-44s | %12s | %10s | %4s |\n' "  of them skipped for want of a device" "$GPU_TESTS_UNRUN" "0" "NO"
  # yes: every step ran and was clean; NO: one found an error (or could not run its program);
  # ?: none found one, but some did not run (skipped, timed out), so not all was checked.
  IFS=/ read -r san_clean san_ran san_not_run <<<"$SANITIZERS"
  san_met="?"
  ((san_clean < san_ran)) && san_met=NO
  ((san_clean == san_ran && san_ran > 0 && san_not_run == 0)) && san_met=yes
  printf '| %-44s | %12s | %10s | %4s |\n' "compute-sanitizer steps clean/ran/not run" "$SANITIZERS" "all clean" "$san_met"
  printf '| %-44s | %12s | %10s | %4s |\n' "kernel ms/frame, double (exact)" "$(fmt "$KD")" "" ""
  printf '| %-44s | %12s | %10s | %4s |\n' "kernel ms/frame, single" "$(fmt "$KS")" "<= 5" "$(meets "$KS" '<=' 5)"
  printf '| %-44s | %12s | %10s | %4s |\n' "seed kernel waves (blocks/resident), single" "$(fmt "$(get kernel_waves_single)")" "" ""
  for prec in single double; do  # every work split (gpu::work_splits), checked then timed
    # Keys kernel_ms_<prec>_px<P>[_l<L>][_s<S>][_p<step>][_a<ahead>] (each left out at its
    # default: L1 S1 step 2 ahead 0).
    splits=$(sed -n "s/^RESULT kernel_ms_${prec}_px\\([0-9]*\\(_[lspa][0-9]*\\)*\\)=.*/\\1/p" "$BENCH_OUT" | tr '\n' ' ')
    for px in ${splits:-8 16}; do
      lanes=1 pair_splits=1 step=2 ahead=0
      [[ $px =~ _l([0-9]+) ]] && lanes=${BASH_REMATCH[1]}
      [[ $px =~ _s([0-9]+) ]] && pair_splits=${BASH_REMATCH[1]}
      [[ $px =~ _p([0-9]+) ]] && step=${BASH_REMATCH[1]}
      [[ $px =~ _a([0-9]+) ]] && ahead=${BASH_REMATCH[1]}
      printf '| %-44s | %12s | %10s | %4s |\n' \
        "  $prec P${px%%_*} L$lanes S$pair_splits x$step a$ahead ($(fmt "$(get kernel_waves_${prec}_px$px)") waves) ms" \
        "$(fmt "$(get kernel_ms_${prec}_px$px)")" "" ""
    done
    v=n/a
    [[ -n $(get best_pixels_$prec) ]] &&
      v="P$(get best_pixels_$prec) L$(get best_lanes_$prec) S$(get best_splits_$prec) x$(get best_step_$prec) a$(get best_ahead_$prec)"
    printf '| %-44s | %12s | %10s | %4s |\n' "  fastest split (P L S xpairs ahead), $prec" "$v" "" ""
  done
  printf '| %-44s | %12s | %10s | %4s |\n' "batch frames/s, double ($FRAMES frames, pinned)" "$(fmt "$FD")" ">= 150" "$(meets "$FD" '>=' 150)"
  printf '| %-44s | %12s | %10s | %4s |\n' "batch frames/s, single ($FRAMES frames, pinned)" "$(fmt "$FS")" ">= 150" "$(meets "$FS" '>=' 150)"
  # Overlap: 3 streams must beat 1 (the copies, about 8 MB a frame, are a few percent of a frame's
  # kernel, so that is all overlapping can gain), and a frame of the 3-stream batch should take
  # little more than its kernel alone (the copies hidden).
  for prec in double single; do
    r=$(get batch_overlap_$prec)
    printf '| %-44s | %12s | %10s | %4s |\n' "batch frames/s, 3 streams / 1 stream, $prec" "$(fmt "$r")" ">= 1.01" "$(meets "$r" '>=' 1.01)"
    r=""
    [[ -n $(get batch_fps_$prec) && -n $(get kernel_ms_$prec) ]] &&
      r=$(quotient "$(quotient 1000 "$(get batch_fps_$prec)")" "$(get kernel_ms_$prec)")
    printf '| %-44s | %12s | %10s | %4s |\n' "  batch ms/frame / kernel ms, $prec" "$(fmt "$r")" "<= 1.1" "$(meets "$r" '<=' 1.1)"
  done
  printf '| %-44s | %12s | %10s | %4s |\n' "single vs exact: fraction of pixels differing" "$(fmt "$(get fraction_differing_single)")" "" ""
  printf '| %-44s | %12s | %10s | %4s |\n' "single vs exact: relative L2" "$(fmt "$(get relative_l2_single)")" "<= 1e-4" "$(meets "$(get relative_l2_single)" '<=' 1e-4)"
  printf '| %-44s | %12s | %10s | %4s |\n' "double vs exact: fraction of pixels differing" "$(fmt "$(get fraction_differing_double)")" "0" "$(meets "$(get fraction_differing_double)" '<=' 0)"
  printf '| %-44s | %12s | %10s | %4s |\n' "seed Numba CUDA kernel ms/frame" "$(fmt "$NUMBA_MS")" "" ""
  printf '| %-44s | %12s | %10s | %4s |\n' "speed-up vs Numba, single kernel" "$RATIO_S" ">= 100x" "$(meets "$RATIO_S_EXACT" '>=' 100)"
  printf '| %-44s | %12s | %10s | %4s |\n' "speed-up vs Numba, double kernel" "$RATIO_D" "" ""
  printf '| %-44s | %12s | %10s | %4s |\n' "CPU (this machine) ms/frame, exact" "$(fmt "$(get cpu_frame_ms)")" "" ""
  for das_case in rfdata1 picmus dw7 fw7; do
    for das_kernel in pixel-per-thread element-outer transmit-blocked; do
      [[ $das_case == [df]w7 && $das_kernel != pixel-per-thread ]] && continue  # plane waves only
      v=$(sed -n "s/^RESULT das_${das_case}_${das_kernel}_points_per_s=//p" "$DAS_OUT" 2>/dev/null | tail -n 1)
      e=$(sed -n "s/^RESULT das_${das_case}_${das_kernel}_rel_l2_vs_cpu=//p" "$DAS_OUT" 2>/dev/null | tail -n 1)
      if [[ $das_case == [df]w7 ]]; then  # the issue's 1.2e12 target is for plane waves
        printf '| %-44s | %12s | %10s | %4s |\n' "DAS $das_case $das_kernel points/s" "$(fmt "$v")" "" ""
      else
        printf '| %-44s | %12s | %10s | %4s |\n' "DAS $das_case $das_kernel points/s" "$(fmt "$v")" ">= 1.2e12" "$(meets "$v" '>=' 1.2e12)"
      fi
      printf '| %-44s | %12s | %10s | %4s |\n' "DAS $das_case $das_kernel rel. L2 vs CPU" "$(fmt "$e")" "<= 1e-5" "$(meets "$e" '<=' 1e-5)"
    done
    w=$(sed -n "s/^RESULT das_${das_case}_weighted_fraction=//p" "$DAS_OUT" 2>/dev/null | tail -n 1)
    printf '| %-44s | %12s | %10s | %4s |\n' "DAS $das_case: of the points, weights not 0" "$(fmt "$w")" "" ""
    v=$(sed -n "s/^RESULT das_${das_case}_auto_kernel=//p" "$DAS_OUT" 2>/dev/null | tail -n 1)
    [[ $das_case == [df]w7 ]] || printf '| %-44s | %12s | %10s | %4s |\n' "DAS $das_case: --cuda-kernel auto takes" "${v:-n/a}" "" ""
  done
  for das_case in pw8 pw16 pw32; do  # transmit-blocked against element-outer as the data grow
    eo=$(sed -n "s/^RESULT das_${das_case}_element-outer_points_per_s=//p" "$DAS_L2_OUT" 2>/dev/null | tail -n 1)
    tb=$(sed -n "s/^RESULT das_${das_case}_transmit-blocked_points_per_s=//p" "$DAS_L2_OUT" 2>/dev/null | tail -n 1)
    printf '| %-44s | %12s | %10s | %4s |\n' "DAS $das_case element-outer points/s" "$(fmt "$eo")" "" ""
    printf '| %-44s | %12s | %10s | %4s |\n' "DAS $das_case transmit-blocked points/s" "$(fmt "$tb")" "" ""
    r=$(fmt "")
    [[ -n $eo && -n $tb ]] && r=$(quotient "$tb" "$eo")
    printf '| %-44s | %12s | %10s | %4s |\n' "  $das_case transmit-blocked / element-outer" "$r" "" ""
    v=$(sed -n "s/^RESULT das_${das_case}_auto_kernel=//p" "$DAS_L2_OUT" 2>/dev/null | tail -n 1)
    printf '| %-44s | %12s | %10s | %4s |\n' "  $das_case: --cuda-kernel auto takes" "${v:-n/a}" "" ""
  done
  v=$(sed -n "s/^RESULT das_picmus_transmit-blocked_transmits_per_launch=//p" "$DAS_OUT" 2>/dev/null | tail -n 1)
  printf '| %-44s | %12s | %10s | %4s |\n' "DAS picmus TB transmits/launch (its default)" "${v:-n/a}" "" ""
  for das_case in rfdata1 picmus dw7; do  # lateral lanes (das-check-lanes): points/s and x L1
    for das_kernel in pixel-per-thread element-outer transmit-blocked; do
      [[ $das_case == dw7 && $das_kernel != pixel-per-thread ]] && continue
      lanes_get() { sed -n "s/^RESULT das_${das_case}_${das_kernel}_l$1_points_per_s=//p" "$DAS_LANES_OUT" 2>/dev/null | tail -n 1; }
      one=$(lanes_get 1)
      row=""
      for lanes in 1 2 4 8 16 32; do
        v=$(lanes_get $lanes)
        r="n/a"
        [[ -n $one && -n $v ]] && r=$(quotient "$v" "$one")
        row+="L$lanes $(fmt "$v") ($r); "
      done
      printf '| %-44s | %s\n' "  $das_case $das_kernel by lateral lanes (x L1)" "${row%; }"
    done
  done
  for das_case in picmus pw32; do  # transmit-blocked split over launches (das-check-split)
    eo=$(sed -n "s/^RESULT das_${das_case}_element-outer_points_per_s=//p" "$DAS_OUT" "$DAS_L2_OUT" 2>/dev/null | tail -n 1)
    for tpl in 0 8 16 24; do
      v=$(sed -n "s/^RESULT das_${das_case}_transmit-blocked_tpl${tpl}_points_per_s=//p" "$DAS_SPLIT_OUT" 2>/dev/null | tail -n 1)
      r=$(fmt "")
      [[ -n $eo && -n $v ]] && r=$(quotient "$v" "$eo")
      printf '| %-44s | %12s | %10s | %4s |\n' "  $das_case TB, $tpl transmits/launch (x EO)" "$(fmt "$v") ($r)" "" ""
    done
  done
  kget() { sed -n "s/^RESULT kernels_$1=//p" "$KERNELS_OUT" 2>/dev/null | tail -n 1; }
  printf '| %-44s | %12s | %10s | %4s |\n' "kernels d2d copy GB/s (2^27 floats)" "$(fmt "$(kget d2d_copy_gbs)")" "" ""
  for kernels_op in "map_add:map add a + b" "map_add_scalar:map add a + 10" "sum:sum float" \
    "sum_int32:sum int32" "max:max float"; do
    v=$(kget "${kernels_op%%:*}_gbs")
    r=$(kget "${kernels_op%%:*}_vs_copy")
    printf '| %-44s | %12s | %10s | %4s |\n' "kernels ${kernels_op#*:} GB/s" "$(fmt "$v")" "" ""
    printf '| %-44s | %12s | %10s | %4s |\n' "kernels ${kernels_op#*:} / d2d copy" "$(fmt "$r")" ">= 0.8" "$(meets "$r" '>=' 0.8)"
  done
  for axis in 0 1; do  # a first measurement: no target yet
    printf '| %-44s | %12s | %10s | %4s |\n' "kernels sum along axis $axis GB/s" "$(fmt "$(kget "sum_axis${axis}_gbs")")" "" ""
  done
  printf '| %-44s | %12s | %10s | %4s |\n' "kernels tiled SGEMM 4096 GFLOP/s" "$(fmt "$(kget sgemm4096_tiled_gflops)")" "" ""
  printf '| %-44s | %12s | %10s | %4s |\n' "kernels cuBLAS SGEMM 4096 GFLOP/s (TF32 off)" "$(fmt "$(kget sgemm4096_cublas_gflops)")" "" ""
  r=$(kget sgemm4096_tiled_vs_cublas)
  printf '| %-44s | %12s | %10s | %4s |\n' "kernels tiled / cuBLAS SGEMM 4096" "$(fmt "$r")" ">= 0.5" "$(meets "$r" '>=' 0.5)"
  # One block per multiprocessor, plain launch bounds (nvcc-only build): GFLOP/s, the project's
  # two-block kernel timed in kernels-check against it, and it against cuBLAS timed again beside it.
  g1() { sed -n "s/^RESULT kernels_$1=//p" "$KERNELS_GEMM1_OUT" 2>/dev/null | tail -n 1; }
  v=$(g1 sgemm4096_tiled_gflops)
  printf '| %-44s | %12s | %10s | %4s |\n' "  tiled SGEMM 4096, 1 block/SM GFLOP/s" "$(fmt "$v")" "" ""
  r=$(fmt "")
  [[ -n $v && -n $(kget sgemm4096_tiled_gflops) ]] &&
    r=$(quotient "$(kget sgemm4096_tiled_gflops)" "$v")
  # A build that failed its check is not timed: say so rather than n/a.
  [[ -n $(g1 sgemm4096_tiled_fused_mismatches) && $(g1 sgemm4096_tiled_fused_mismatches) != 0 ]] &&
    r="$(g1 sgemm4096_tiled_fused_mismatches) wrong"
  printf '| %-44s | %12s | %10s | %4s |\n' "  tiled SGEMM 4096, 2 blocks/SM / 1 block/SM" "$r" "" ""
  printf '| %-44s | %12s | %10s | %4s |\n' "  tiled SGEMM 4096, 1 block/SM / cuBLAS" "$(fmt "$(g1 sgemm4096_tiled_vs_cublas)")" "" ""
  r=$(kget sgemm4096_tiled_fused_mismatches)
  printf '| %-44s | %12s | %10s | %4s |\n' "kernels tiled SGEMM vs fused dot, mismatches" "$(fmt "$r")" "0" "$(meets "$r" '<=' 0)"
  r=$(kget monte_carlo_gpu_minus_cpu)
  printf '| %-44s | %12s | %10s | %4s |\n' "kernels Monte-Carlo count, GPU - CPU" "$(fmt "$r")" "0" "$( [[ -n $r ]] && awk -v v="$r" 'BEGIN { printf (v == 0) ? "yes" : "NO" }' || printf '?')"
  if [[ -s $PROFILE_SUMMARY ]]; then
    echo
    echo "Nsight Compute, a line a launch (profile step; raw pages and details in the logs):"
    cat "$PROFILE_SUMMARY"
  fi
  # Last, so that a reply that keeps only the output's tail still has them: the GPU, the steps
  # that did not pass, and the issues' headline figures.
  echo
  echo "summary: $GPU_NAME"
  for name in "${ORDER[@]}"; do
    [[ ${STATUS[$name]} == ok* ]] || printf '  step %-18s %s\n' "$name" "${STATUS[$name]}"
  done
  echo "  GPU tests p/f/s $GPU_TESTS ($gpu_met); sanitizers clean/ran/not run $SANITIZERS ($san_met)"
  echo "  seed kernel ms single $(fmt "$KS") (<= 5: $(meets "$KS" '<=' 5)), double $(fmt "$KD");" \
    "batch frames/s single $(fmt "$FS"), double $(fmt "$FD") (>= 150: $(meets "$FS" '>=' 150)/$(meets "$FD" '>=' 150))"
  echo "  Numba $(fmt "$NUMBA_MS") ms: single ${RATIO_S} (>= 100x: $(meets "$RATIO_S_EXACT" '>=' 100)), double ${RATIO_D}"
  for das_case in rfdata1 picmus; do
    row=""
    for das_kernel in pixel-per-thread element-outer transmit-blocked; do
      v=$(sed -n "s/^RESULT das_${das_case}_${das_kernel}_points_per_s=//p" "$DAS_OUT" 2>/dev/null | tail -n 1)
      row+=" ${das_kernel} $(fmt "$v");"
    done
    echo "  DAS $das_case points/s:${row%;} (target 1.2e12)"
  done
} | tee -a "$LOG" | tee "$LOGS/gpu-check-table.txt"

failed=0
((GPU_TESTS_UNRUN > 0)) && failed=1  # a GPU test that did not run is not a pass
for name in "${ORDER[@]}"; do
  # Without the C++ packages the CMake attempt fails by design: the nvcc-only build replaces it.
  [[ $MODE == minimal && ($name == configure || $name == build) ]] && continue
  [[ $name == das-check-l2 || $name == das-check-split || $name == das-check-lanes || $name == kernels-check-gemm1 ||
     $name == profile ]] &&
    continue  # experiments: their rows say what they found
  # The sanitizer steps run in whatever time is left: skipping them is not a failure.
  [[ $name == memcheck* || $name == racecheck* ]] && [[ ${STATUS[$name]} == skipped* || ${STATUS[$name]} == timed* ]] &&
    continue
  [[ ${STATUS[$name]} == ok* ]] || failed=1
done
exit $failed
