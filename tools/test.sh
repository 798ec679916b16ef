#!/usr/bin/env bash
# Second README command: install what is missing, build, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 900 "$@"
