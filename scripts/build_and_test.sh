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
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r python/requirements-build.txt \
    -r python/requirements-test.txt
  py_args=(-DBCSR24_PYTHON=ON -DPython_EXECUTABLE="$(cd "$venv/bin" && pwd)/python")
fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "${py_args[@]}" ${CMAKE_ARGS:-}
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" --output-on-failure
