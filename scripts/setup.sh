#!/usr/bin/env bash
# First-time set-up on a Debian machine with the CUDA toolkit in /usr/local/cuda: install the Debian
# dependencies (libopenmpi-dev: the optional MPI launch of the distributed mode), build the library, the programs and
# the Python module for this machine's GPU, run spmm_run on a bundled matrix, and install the Python package into the
# virtual environment .venv/ at the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $(id -u) -eq 0 ]]; then sudo=""; else sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends \
  cmake ninja-build g++ make libeigen3-dev catch2 libcli11-dev nlohmann-json3-dev zlib1g-dev libmetis-dev libopenmpi-dev python3 python3-dev python3-venv python3-matplotlib >/dev/null
export PATH="/usr/local/cuda/bin:$PATH"
# The Python package (docs/PYTHON.md) is built by the same CMake tree as the library and programs, so every CUDA
# kernel compiles once: .venv gets the build and test requirements first (nanobind, numpy, scipy, pytest from PyPI),
# its interpreter goes to CMake, and the module and the package's files are installed from the build into .venv.
# (`pip install .` on its own still builds a wheel; it compiles the library again, in its own tree.)
python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -r python/requirements-build.txt \
  -r python/requirements-test.txt
# One CUDA architecture: the GPU's own (nvidia-smi's compute capability), or sm_90 where there is no GPU. Every
# architecture compiles the kernel table once more; CMAKE_ARGS="-DCMAKE_CUDA_ARCHITECTURES=80;90" builds several.
# The tests are left to scripts/build_and_test.sh, which builds them in the same tree.
arch=90
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 || true)
[[ $cap =~ ^([0-9]+)\.([0-9])$ ]] && arch=${BASH_REMATCH[1]}${BASH_REMATCH[2]}
echo "setup: building for sm_$arch (GPU compute capability: ${cap:-none found})"
# Ninja where it is installed and the folder is new (as scripts/build_and_test.sh): it overlaps the targets' compiles.
generator=()
[[ ! -f build/CMakeCache.txt ]] && command -v ninja > /dev/null && generator=(-G Ninja)
cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" \
  -DBCSR24_BUILD_TESTS=OFF -DBCSR24_PYTHON=ON -DPython_EXECUTABLE="$(pwd)/.venv/bin/python" ${CMAKE_ARGS:-}
cmake --build build -j"$(nproc)"
build/apps/spmm_run data/xdys_1000x1000_2d3s.mtx --nmult 4
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("platlib"))')
for component in bcsr24_python bcsr24_python_sources; do
  cmake --install build --component "$component" --prefix "$site" >/dev/null
done
(cd /tmp && "$OLDPWD/.venv/bin/python" -c 'import bcsr24, bcsr24.linalg')
echo "bcsr24 for Python is installed in $(pwd)/.venv: source .venv/bin/activate, then python -c 'import bcsr24'"
