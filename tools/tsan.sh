#!/usr/bin/env bash
# The threaded parts under ThreadSanitizer: builds tests_recon, tests_io and tests_kernels
# (CPU-only, RelWithDebInfo, -fsanitize=thread) into ${BUILD_DIR:-build-tsan} and runs the batch
# pipelines' tests (three threads per batch, both models, callbacks that throw) --gtest_repeat
# times (default 10), then once the CPU beamformers' thread-pool tests, the HDF5 reads (one reader
# server for every thread) and the CUDA block programs in the block emulator (a missing
# __syncthreads shows as a race on the block's shared memory). Not part of .ci/run (the build
# alone takes ~8 min on 2 cores); run it after changing recon/pipeline/batch.cpp, the thread pool,
# io/src/hdf5.cpp or a block program (kernels/include/usrecon/kernels/gemm_tiled.hpp,
# block_reduce.hpp).
#   tools/tsan.sh [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build-tsan}
repeats=${1:-10}
tools/install-deps.sh
mkdir -p "$build_dir"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUSRECON_CUDA=OFF -DUSRECON_BUILD_BENCHMARKS=OFF \
  -DCMAKE_CXX_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" \
  > "$build_dir/configure.log" 2>&1 || { cat "$build_dir/configure.log"; exit 1; }
cmake --build "$build_dir" -j "$(nproc)" --target tests_recon tests_io tests_kernels
# libgdal (loaded by OpenCV's image codecs) reports a lock-order inversion in its own mutexes at
# start-up; that is not ours, so it alone is suppressed.
supp=$(mktemp)
trap 'rm -f "$supp"' EXIT
printf 'deadlock:libgdal.so\n' >"$supp"
export TSAN_OPTIONS="halt_on_error=1:suppressions=$supp"
"$build_dir/tests/tests_recon" --gtest_filter='*ReconDasBatch*:ReconPipeline.*:ReconBatchStages.*' --gtest_repeat="$repeats" \
  --gtest_brief=1
"$build_dir/tests/tests_recon" --gtest_filter='*ReconDasCpu.*:ReconSeedCpu.MatchesReference*:ReconSeedCpu.SeedSized*' --gtest_brief=1
"$build_dir/tests/tests_io" --gtest_filter='IoHdf5.*' --gtest_brief=1
"$build_dir/tests/tests_kernels" --gtest_filter='*Program*' --gtest_brief=1
echo "tsan: no data race reported"
