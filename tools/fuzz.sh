#!/usr/bin/env bash
# Fuzzes every parser with libFuzzer under AddressSanitizer + UBSan: builds tests/fuzz with clang++
# into ${BUILD_DIR:-build-fuzz} and runs each target for ${FUZZ_SECONDS:-60} s, starting from its
# seed corpus (tests/fuzz/corpus/<target>) and saved crashes (tests/corpus/regressions/<target>).
# Targets: source_txt, npy, mat and hdf5 (when their io headers exist), mat_fields (MAT struct
# fields and cells, --var A.b.c, C{1}, S(2).x), mat73_fields (the same in MAT v7.3 files), uff (USTB UFF and PICMUS files through reconstruct's readers and
# prepare_das) and config (reconstruct's --config file, TOML and INI, through CLI11 and the CLI's
# option checks, stopping before any input is read or output written); or name some:
#   tools/fuzz.sh npy
# Inputs are at most 4 KiB (8 KiB for hdf5, whose smallest files are 5-7 KiB; 32 KiB for uff), so
# one allocation over 256 MiB means a parser trusted a size field: libFuzzer reports it
# (-malloc_limit_mb) like a crash. The hdf5, uff and mat73_fields targets read each input in a worker process
# (io/src/hdf5.cpp isolates libhdf5, which crashes on some malformed files), so they run at tens of
# inputs per second; a worker that crashes is reported to the caller as an InputError, which is
# what the check expects.
# A crash (or leak, timeout, sanitizer finding, broken check) fails the script after it is
# minimised into ${BUILD_DIR}/fuzz-artifacts/<target>/; add that file to
# tests/corpus/regressions/<target>/ and IoFuzzRegression runs it in every test suite run.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build-fuzz}
seconds=${FUZZ_SECONDS:-60}
max_len=${FUZZ_MAX_LEN:-}

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(source_txt npy)
  [ -f io/include/usrecon/io/mat.hpp ] && targets+=(mat mat_fields)
  [ -f io/include/usrecon/io/hdf5.hpp ] && targets+=(hdf5 uff)
  [ -f io/include/usrecon/io/mat.hpp ] && [ -f io/include/usrecon/io/hdf5.hpp ] && targets+=(mat73_fields)
  targets+=(config)
fi

mkdir -p "$build_dir"
# The libraries get coverage instrumentation (fuzzer-no-link); the targets link libFuzzer itself.
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link -DUSRECON_SANITIZE=ON -DUSRECON_FUZZ=ON \
  -DUSRECON_CUDA=OFF -DUSRECON_BUILD_BENCHMARKS=OFF > "$build_dir/configure.log" 2>&1 \
  || { cat "$build_dir/configure.log"; exit 1; }
cmake --build "$build_dir" -j "$(nproc)" --target "${targets[@]/#/fuzz_}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1}
# Leaks inside third-party libraries (libmatio's, on malformed files) are suppressed by library
# name, as in tools/sanitize.sh; leaks in usrecon's own code still fail the run.
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$(pwd)/tools/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for target in "${targets[@]}"; do
  exe="$build_dir/tests/fuzz/fuzz_$target"
  work="$build_dir/fuzz-corpus/$target"          # grows from run to run
  artifacts="$build_dir/fuzz-artifacts/$target"
  rm -rf "$artifacts"                               # this run's findings only
  mkdir -p "$work" "$artifacts"
  seeds=("tests/fuzz/corpus/$target")
  [ -d "tests/corpus/regressions/$target" ] && seeds+=("tests/corpus/regressions/$target")
  log="$build_dir/fuzz-$target.log"
  target_max_len=${max_len:-4096}
  [ -z "$max_len" ] && [ "$target" = hdf5 ] && target_max_len=8192
  [ -z "$max_len" ] && [ "$target" = uff ] && target_max_len=32768  # its seeds are 6-32 KiB
  [ -z "$max_len" ] && [ "$target" = mat73_fields ] && target_max_len=32768  # its seed is 20 KiB
  echo "fuzz: $target for ${seconds} s (max_len $target_max_len)"
  if "$exe" -max_total_time="$seconds" -max_len="$target_max_len" -timeout=10 -rss_limit_mb=2048 \
       -malloc_limit_mb=256 -print_final_stats=1 -artifact_prefix="$artifacts/" \
       "$work" "${seeds[@]}" > "$log" 2>&1; then
    # One line of figures: runs, executions per second, coverage and corpus size.
    # The last figures are the fuzzer's own (hdf5's reader processes may print theirs before).
    runs=$(grep -ao 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)
    speed=$(grep -ao 'stat::average_exec_per_sec: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)
    last=$(grep -aE '^#[0-9]+' "$log" | tail -1 || true)
    echo "fuzz: $target clean: ${runs:-?} runs, ${speed:-?} exec/s; last: ${last}"
  else
    status=1
    echo "fuzz: $target FAILED; log $log:"
    grep -aE 'ERROR|SUMMARY|runtime error|Test unit written|uncaught|what\(\)' "$log" | head -20 || true
    for crash in "$artifacts"/*; do
      [ -f "$crash" ] || continue
      case "$crash" in *.min | *.log) continue ;; esac
      "$exe" -minimize_crash=1 -max_total_time=30 -malloc_limit_mb=256 -timeout=10 \
        -exact_artifact_path="$crash.min" "$crash" \
        > "$crash.minimize.log" 2>&1 || true
      echo "fuzz: minimised input: $crash.min (add it to tests/corpus/regressions/$target/)"
    done
  fi
done
exit $status
