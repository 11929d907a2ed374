#!/usr/bin/env bash
# Downloads the test requirements as wheels into .deps/wheels (ignored by git), for GPU machines without network:
# python/gpu_check.sh installs them from there. Usage: python/fetch_wheels.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.deps/wheels}
mkdir -p "$dir"
python3 -m pip download -q --only-binary=:all: -d "$dir" -r python/requirements-test.txt
ls "$dir"
