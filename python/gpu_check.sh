#!/usr/bin/env bash
# The Python package on a GPU machine (the python step of scripts/gpu_check.sh): pip-installs it from this tree, runs
# the pytest suite (GPU tests included), the examples (small with --check, then the >= 1M-row mesh of issue 36's
# targets), python -m bcsr24.bench, and bench_spmm on the same matrix for the "within 5%" comparison.
# Usage: python/gpu_check.sh OUTDIR
# Environment:
#   PY_STEPS="install test examples large bench"   which parts to run (default: all; each GPU command of the
#                         lending machines is limited to 10 minutes: run "install test examples bench" and "large"
#                         as two commands, the second reusing the first's install)
#   PYTHON=python3        the interpreter that has numpy, scipy, cupy, torch, jax (and nanobind, scikit-build-core)
#   CUDA_ARCH=90          CUDA architectures of the build
#   PY_WHEELS=DIR         wheels installed first without network (default .deps/wheels when it exists; make it with
#                         python/fetch_wheels.sh on a machine with network, e.g. for pytest)
#   PY_MESH=70            mesh of the large example runs (70: 1.03M rows, 83M nonzeros; 0 skips them)
#   PY_GRID=1300          the 2-D log-normal problem of the large block CG run (1.69M rows)
#   PY_SMALL_MESH=12      mesh of the example checks
#   PY_BENCH_MESH=40      mesh written to .mtx for python -m bcsr24.bench and bench_spmm (206k rows)
#   BCSR24_BUILD=build-gpu  where bench_spmm was built (scripts/gpu_check.sh's build step); absent: no bench_spmm
#   BCSR24_DEPS_PREFIX    as in scripts/gpu_check.sh (zlib for machines without its headers)
set -uo pipefail
out=${1:?usage: python/gpu_check.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
root=$(pwd)
py=${PYTHON:-python3}
arch=${CUDA_ARCH:-90}
site="$root/build-python/gpu-site"
# shellcheck source=../scripts/check_verdict.sh
source "$root/scripts/check_verdict.sh"
failures=()
py_steps=" ${PY_STEPS:-install test examples large bench} "
part() { [[ "$py_steps" == *" $1 "* ]]; }
step() { local name=$1; shift; echo "== python: $name"; "$@" || { echo "   FAILED: $name"; failures+=("$name"); }; }

export PYTHONPATH="$site:$site/deps${PYTHONPATH:+:$PYTHONPATH}"
export BCSR24_SHARED_DATA=${BCSR24_SHARED_DATA:-$root/../shared/data}

install_wheels() {
  local wheels=${PY_WHEELS:-}
  [[ -z "$wheels" && -d .deps/wheels ]] && wheels=.deps/wheels
  [[ -z "$wheels" ]] && { echo "   none given (PY_WHEELS, .deps/wheels): pytest must be installed"; return 0; }
  "$py" -m pip install -q --upgrade --no-index --find-links "$wheels" --target "$site/deps" \
    -r python/requirements-test.txt
}
pip_install_package() {
  local cmake_args="-DCMAKE_CUDA_ARCHITECTURES=$arch" p
  if [[ -n "${BCSR24_DEPS_PREFIX:-}" ]]; then
    # Headers from the unpacked package; the library from the system's shared libz where there is one: the
    # extension module is position-independent and Debian's libz.a is not, so it cannot be linked into it.
    local lib
    p=$(cd "$BCSR24_DEPS_PREFIX" && pwd)/usr
    lib=$(ls /usr/lib/x86_64-linux-gnu/libz.so /lib/x86_64-linux-gnu/libz.so /usr/lib/x86_64-linux-gnu/libz.so.1 \
      /lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -n 1)
    cmake_args+=" -DZLIB_INCLUDE_DIR=$p/include -DZLIB_LIBRARY=${lib:-$p/lib/x86_64-linux-gnu/libz.a}"
    cmake_args+=" -DCMAKE_PREFIX_PATH=$p"  # Eigen's headers, to build bcsr24::solvers
  fi
  rm -rf "$site/bcsr24"
  CMAKE_ARGS="$cmake_args" "$py" -m pip install -v --no-build-isolation --no-deps --upgrade --target "$site" . \
    > "$out/pip_install.log" 2>&1
  local status=$?
  tail -n 3 "$out/pip_install.log"
  return $status
}
no_cudart() {
  local module
  module=$(ls "$site"/bcsr24/_bcsr24*.so 2>/dev/null | head -n 1)
  [[ -n "$module" ]] || { echo "   no module in $site/bcsr24"; return 1; }
  ldd "$module" | tee "$out/ldd.txt" | sed 's/^/   /'
  ! grep -q libcudart "$out/ldd.txt"
}
if part install; then
  step "test wheels" install_wheels
  step "pip install . (no build isolation, CUDA_ARCH=$arch)" pip_install_package
  step "the module needs no libcudart.so" no_cudart
fi
step "import" bash -c "cd /tmp && '$py' -c 'import bcsr24; print(\"  \", bcsr24.__file__, bcsr24.device_info())'"

part test && step "pytest (GPU tests run here)" bash -o pipefail -c "cd '$root' && '$py' -m pytest python/tests -rs -v \
  --junitxml='$out/pytest.xml' 2>&1 | tee '$out/pytest.log' | tail -n 25"

ex="$root/examples/python"
small=${PY_SMALL_MESH:-12}
part examples && step "lobpcg example (--mesh $small --check)" bash -o pipefail -c "'$py' '$ex/lobpcg.py' --mesh $small --k 8 \
  --maxiter 200 --check 2>&1 | tee '$out/lobpcg_small.log' | tail -n 6"
part examples && step "eigen example (--mesh $small --check)" bash -o pipefail -c "'$py' '$ex/eigen.py' --mesh $small --k 8 \
  --check 2>&1 | tee '$out/eigen_small.log' | tail -n 6"
part examples && step "block CG example (--grid 40 --check)" bash -o pipefail -c "'$py' '$ex/block_cg.py' --problem lognormal \
  --grid 40 --check 2>&1 | tee '$out/block_cg_small.log' | tail -n 6"
part examples && step "block CG example (scikit-fem elasticity, --cells 8 --check)" bash -o pipefail -c "'$py' \
  '$ex/block_cg.py' --problem elasticity --cells 8 --check 2>&1 | tee '$out/block_cg_skfem_small.log' | tail -n 6"
big=${PY_MESH:-70}
if part large && ((big > 0)); then
  step "lobpcg example (--mesh $big, k = 16: the targets)" bash -o pipefail -c "'$py' '$ex/lobpcg.py' --mesh $big \
    2>&1 | tee '$out/lobpcg_mesh$big.log' | awk 'NR <= 12'"
  step "lobpcg example (--mesh $big, converged: --maxiter 500 --tol 1e-3)" bash -o pipefail -c "'$py' '$ex/lobpcg.py' \
    --mesh $big --maxiter 500 --tol 1e-3 2>&1 | tee '$out/lobpcg_mesh${big}_converged.log' | awk 'NR <= 12'"
  step "lobpcg example (--mesh $big, fp16 A: products only, eigenvalues differ at fp16's level)" bash -o pipefail \
    -c "'$py' '$ex/lobpcg.py' --mesh $big --precision fp16 2>&1 | tee '$out/lobpcg_mesh${big}_fp16.log' | awk 'NR <= 12'"
  step "eigen example (--mesh $big, k = 16)" bash -o pipefail -c "'$py' '$ex/eigen.py' --mesh $big 2>&1 \
    | tee '$out/eigen_mesh$big.log' | awk 'NR <= 14'"
  step "block CG example (--problem mesh --mesh $big)" bash -o pipefail -c "'$py' '$ex/block_cg.py' --problem mesh \
    --mesh $big 2>&1 | tee '$out/block_cg_mesh$big.log' | tail -n 8"
  step "block CG example (--problem lognormal --grid ${PY_GRID:-1300})" bash -o pipefail -c "'$py' '$ex/block_cg.py' \
    --problem lognormal --grid ${PY_GRID:-1300} 2>&1 | tee '$out/block_cg_lognormal.log' | tail -n 8"
fi

# One matrix for both benchmarks: the examples' mesh written to Matrix Market.
if part bench; then
bm=${PY_BENCH_MESH:-40}
mtx="$root/build-python/mesh$bm.mtx"
if [[ ! -f "$mtx" ]]; then
  step "write mesh $bm to $mtx" bash -c "cd '$ex' && '$py' -c \"import scipy.io, mesh; \
scipy.io.mmwrite('$mtx', mesh.mesh_matrix($bm, $((bm + 1)), $((bm + 2)), 27, 3))\""
fi
for bt in float32 float16; do
  step "python -m bcsr24.bench (B $bt)" bash -o pipefail -c "'$py' -m bcsr24.bench '$mtx' --n 8,32,128 --b-dtype $bt \
    --csv '$out/bench_python_$bt.csv' 2>&1 | tee '$out/bench_python_$bt.log'"
done
bench_spmm="$root/${BCSR24_BUILD:-build-gpu}/apps/bench_spmm"
if [[ -x "$bench_spmm" ]]; then
  for bt in fp32 fp16; do
    step "bench_spmm auto (B $bt) on the same matrix" bash -o pipefail -c "'$bench_spmm' --matrix '$mtx' \
      --n 8,32,128 --methods auto,cusparse_csr_f32 --b-type $bt --reps 20 --csv '$out/bench_spmm_$bt.csv' 2>&1 \
      | tee '$out/bench_spmm_$bt.log' | tail -n 8"
  done
else
  echo "== python: bench_spmm not built ($bench_spmm): run scripts/gpu_check.sh's build step for the comparison"
fi
fi

check_verdict "== python: FAILED" "== python: all steps passed"
