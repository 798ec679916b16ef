#!/usr/bin/env bash
# Configures and builds usrecon (Release) into ${BUILD_DIR:-build}. Extra arguments go to CMake.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "$@" > "$build_dir.configure.log" 2>&1 \
  || { cat "$build_dir.configure.log"; exit 1; }
grep -E "usrecon:" "$build_dir.configure.log" || true
cmake --build "$build_dir" -j "$(nproc)"
