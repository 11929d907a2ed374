#!/usr/bin/env bash
# First-time set-up on a Debian machine with the CUDA toolkit in /usr/local/cuda: install the Debian
# dependencies (libopenmpi-dev: the optional MPI launch of the distributed mode), build everything, and run spmm_run on a bundled matrix.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $(id -u) -eq 0 ]]; then sudo=""; else sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends \
  cmake g++ make libeigen3-dev catch2 libcli11-dev nlohmann-json3-dev zlib1g-dev libopenmpi-dev python3 python3-matplotlib >/dev/null
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-}
cmake --build build -j"$(nproc)"
build/apps/spmm_run data/xdys_1000x1000_2d3s.mtx --nmult 4
