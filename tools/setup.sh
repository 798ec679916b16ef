#!/usr/bin/env bash
# First README command: install what is missing, build, and reconstruct the bundled example.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh
out=out/example
build/tools/usrecon reconstruct data/example.txt -o "$out" --save-raw --overwrite
echo
echo "Images are in $(pwd)/$out:"
ls -1 "$(pwd)/$out" | sed 's/^/  /'
echo "Try: build/tools/usrecon --help"
