#!/usr/bin/env bash
# Installs the Debian packages usrecon needs, only those missing. Safe to run again.
# The CUDA Toolkit is not a Debian package here: when /usr/local/cuda/bin/nvcc exists the CUDA
# backends are built, otherwise usrecon builds without them.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libopencv-dev libcli11-dev nlohmann-json3-dev libx11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  googletest                          # GoogleTest's sources: tools/gpu-check.sh's nvcc-only build
  libopenblas-dev libmatio-dev libhdf5-dev zlib1g-dev
  python3-numpy python3-numba
  xvfb x11-apps x11-utils xdotool
  clang libclang-rt-14-dev            # tools/fuzz.sh: libFuzzer, ASan and UBSan runtimes for clang
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all Debian packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
