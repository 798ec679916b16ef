#!/usr/bin/env bash
# tools/gpu-check.sh's count of the GPU tests (its table's "GPU tests" row and its exit status):
# "passed/failed/skipped unrun", where unrun are the tests skipped for want of a device. A test
# that a GPU machine skips by design (the no-device and no-driver paths) must not count as unrun,
# or every GPU run would read as incomplete. Usage: test_gpu_check_counts.sh SOURCE_DIR TESTS_KERNELS
# (TESTS_KERNELS "none" in a build without CUDA, whose tests_kernels holds no GPU tests: part 1 is
# then left out, said so).
set -euo pipefail
root=$1 tests_kernels=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
expect() {  # what got want
  if [[ $2 == "$3" ]]; then echo "ok: $1: $2"; else echo "FAILED: $1: got '$2', want '$3'"; fail=1; fi
}

# 1. GoogleTest's own output: two of the GPU tests, run as gpu-check runs them, here (not all: on
#    a GPU machine they would all run a second time). Without a driver the first runs and the
#    second skips for want of a device; on a GPU machine the first skips by design. Each skipped
#    test's reason is on the line after "FILE:LINE: Skipped"; the totals are GoogleTest's summary.
log=$work/gpu-tests-kernels.log
passed=0 failed=0 skipped=0 by_design=0
if [[ $tests_kernels == none ]]; then
  echo "note: a build without CUDA: no GPU tests to log here (part 2 still runs)"
  : >"$log"
else
  "$tests_kernels" --gtest_filter='KernelCuda.RequireCudaWithoutADriver*:KernelCuda.DeviceArrayRoundTrip*' \
    --gtest_color=no >"$log" 2>&1 || true
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log")
  skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log")
  failed=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log")
  by_design=$(grep -A1 ': Skipped$' "$log" | grep -c -e 'device is present' -e 'driver (libcuda.so.1) is installed' || true)
  expect "this machine's GPU tests" "$("$root/tools/gpu-check.sh" --gtest-counts "$log")" \
    "${passed:-0}/${failed:-0}/${skipped:-0} $((${skipped:-0} - by_design))"
  [[ $((${skipped:-0} + ${passed:-0} + ${failed:-0})) -eq 2 ]] || { echo "FAILED: not the two tests: $log"; cat "$log"; fail=1; }
fi

# 2. A GPU machine's log, in GoogleTest's layout: the two by-design skips are not unrun; a
#    missing device is, and so is any other reason.
cat >"$work/gpu-tests-recon.log" <<'LOG'
[==========] Running 6 tests from 3 test suites.
[ RUN      ] KernelCuda.RequireCudaWithoutADriverSaysThereIsNone
tests/kernels/test_kernel_cuda.cu:81: Skipped
an NVIDIA driver (libcuda.so.1) is installed

[  SKIPPED ] KernelCuda.RequireCudaWithoutADriverSaysThereIsNone (0 ms)
[ RUN      ] ReconSeedCuda.AutoFallsBackWithoutADevice
tests/recon/test_seed_cuda.cpp:42: Skipped
a CUDA device is present

[  SKIPPED ] ReconSeedCuda.AutoFallsBackWithoutADevice (0 ms)
[ RUN      ] ReconDasCuda.AgreesWithTheCpuWhenADeviceIsThere
tests/recon/test_das_cuda.cpp:448: Skipped
no usable CUDA device: out of memory

[  SKIPPED ] ReconDasCuda.AgreesWithTheCpuWhenADeviceIsThere (0 ms)
[==========] 6 tests from 3 test suites ran. (5 ms total)
[  PASSED  ] 2 tests.
[  SKIPPED ] 3 tests, listed below:
[  SKIPPED ] KernelCuda.RequireCudaWithoutADriverSaysThereIsNone
[  SKIPPED ] ReconSeedCuda.AutoFallsBackWithoutADevice
[  SKIPPED ] ReconDasCuda.AgreesWithTheCpuWhenADeviceIsThere
[  FAILED  ] 1 test, listed below:
[  FAILED  ] KernelCuda.Something
LOG
expect "a GPU machine's log" "$("$root/tools/gpu-check.sh" --gtest-counts "$work/gpu-tests-recon.log")" "2/1/3 1"
# Both logs together add up, as the table's row does over the kernels' and recon's binaries.
both=$("$root/tools/gpu-check.sh" --gtest-counts "$log" "$work/gpu-tests-recon.log")
expect "both logs" "$both" "$((${passed:-0} + 2))/$((${failed:-0} + 1))/$((${skipped:-0} + 3)) $((${skipped:-0} - by_design + 1))"
# 3. No log named: refused (awk would read standard input).
if "$root/tools/gpu-check.sh" --gtest-counts </dev/null >"$work/none.out" 2>&1; then
  echo "FAILED: --gtest-counts without a log was not refused"; fail=1
elif grep -q "name the GoogleTest logs" "$work/none.out"; then
  echo "ok: --gtest-counts without a log is refused"
else
  echo "FAILED: --gtest-counts without a log: $(cat "$work/none.out")"; fail=1
fi
exit $fail
