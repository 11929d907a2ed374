#!/usr/bin/env bash
# Configure, build everything and run the whole test suite with ctest (GPU tests report "skipped" without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
build=${BUILD_DIR:-build}
# The Python package (python/, docs/PYTHON.md) is built in the same tree against the same libbcsr24 and tested by
# ctest (python_tests): a virtualenv in the build folder gets the build and test requirements, and its interpreter
# goes to CMake. BCSR24_PYTHON=OFF skips it.
py_args=()
if [[ "${BCSR24_PYTHON:-ON}" != "OFF" ]]; then
  venv="$build/python-venv"
  [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
  # --no-compile: no .pyc of every installed module up front (scipy's took ~12 s of CPU); Python compiles what the
  # tests import when they import it.
  "$venv/bin/python" -m pip install -q --no-compile --disable-pip-version-check -r python/requirements-build.txt \
    -r python/requirements-test.txt
  py_args=(-DBCSR24_PYTHON=ON -DPython_EXECUTABLE="$(cd "$venv/bin" && pwd)/python")
fi
# Ninja where it is installed and the folder is new (CMake keeps a folder's generator): it compiles a target's
# objects while the libraries it links are still being built, which Makefiles do not (docs/KERNELS.md, "Build time").
generator=()
[[ ! -f "$build/CMakeCache.txt" ]] && command -v ninja > /dev/null && generator=(-G Ninja)
# BCSR24_BUILD_TESTS=ON: a tree that scripts/setup.sh configured (tests off) gets its tests here.
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DBCSR24_BUILD_TESTS=ON "${py_args[@]}" ${CMAKE_ARGS:-}
cmake --build "$build" -j"$(nproc)"
# CTEST_PARALLEL_LEVEL=N in the environment runs N tests at a time (.ci/run does); on a GPU machine keep the default
# (one at a time), since the GPU tests' timing cases assume the device to themselves.
ctest --test-dir "$build" --output-on-failure
