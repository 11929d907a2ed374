#!/usr/bin/env bash
# On a GPU machine: run bcsr24_solve with --compare (inner products through bcsr24, then cuSPARSE CSR fp32, in
# one process) on the generated 3D mesh (>= 1M nonzeros) and on every bcsstk*.mtx of the shared SuiteSparse
# set (inner solve on A, and on D^-1/2 A D^-1/2; fp16 inner products, then split ones), then write logs, JSON and
# a Markdown summary table.
# Usage: scripts/solver_check.sh OUTDIR
# Environment:
#   BUILD_DIR=build-gpu        build folder holding apps/solver/bcsr24_solve (built if missing)
#   BCSR24_SHARED_DATA=DIR     folder with suitesparse/ (default: ./shared/data, else ../shared/data)
#   MESH="40 40 40" DOFS=3 RHS=8   the generated case and the number of right-hand sides
#   SOLVER_ARGS="..."          extra bcsr24_solve options for every run
#   INNER_PRECISIONS="split"   further --inner-precision runs of every bcsstk matrix (the default runs are fp16)
# Exit status: 0 when the mesh converged with both backends (the bcsstk outcomes are reported, not judged).
set -uo pipefail  # no -e: a run that stops unconverged exits 3 and the others must still run
out=${1:?usage: scripts/solver_check.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-gpu}
exe="$build/apps/solver/bcsr24_solve"
if [[ ! -x "$exe" ]]; then
  echo "== building bcsr24_solve in $build"
  cmake --build "$build" -j"$(nproc)" --target bcsr24_solve || { echo "configure $build first (scripts/gpu_check.sh)"; exit 1; }
fi
data=${BCSR24_SHARED_DATA:-}
if [[ -z "$data" ]]; then
  for d in shared/data ../shared/data; do [[ -d "$d/suitesparse" ]] && { data=$d; break; }; done
fi
rhs=${RHS:-8}
read -r -a extra <<< "${SOLVER_ARGS:-}"

run_case() {  # name, then bcsr24_solve arguments
  local name=$1
  shift
  echo "== $name: bcsr24_solve $* --compare"
  "$exe" "$@" --rhs "$rhs" --compare --json "$out/$name.json" "${extra[@]}" > "$out/$name.log" 2>&1
  local rc=$?
  grep -E "^(converged|stopped|fallback|max true|time:|per inner)" "$out/$name.log" | sed 's/^/   /'
  echo "   exit status $rc"
  return $rc
}

read -r -a mesh <<< "${MESH:-40 40 40}"
run_case mesh --generate-mesh "${mesh[@]}" --dofs-per-node "${DOFS:-3}"
mesh_status=$?

if [[ -n "$data" && -d "$data/suitesparse" ]]; then
  for f in "$data"/suitesparse/bcsstk*.mtx; do
    [[ -e "$f" ]] || continue
    b=$(basename "$f" .mtx)
    run_case "$b" --matrix "$f"
    run_case "${b}_inner_jacobi" --matrix "$f" --inner-scaling jacobi
    # Split (about fp32-accurate) inner products: does the inner solve then keep helping where fp16's stops?
    for precision in ${INNER_PRECISIONS:-split}; do
      run_case "${b}_${precision}" --matrix "$f" --inner-precision "$precision"
      run_case "${b}_${precision}_inner_jacobi" --matrix "$f" --inner-precision "$precision" --inner-scaling jacobi
    done
  done
else
  echo "== no suitesparse folder found (set BCSR24_SHARED_DATA): bcsstk matrices skipped"
fi

if command -v python3 > /dev/null; then
  python3 - "$out" <<'PY' > "$out/solver_summary.md"
import glob, json, os, sys
out = sys.argv[1]
print("| case | inner backend | stop | outer (Jacobi) | inner products | max rel. residual | max rel. error | solve s | "
      "inner product s | share of solve | ms per product | fallback |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for path in sorted(glob.glob(os.path.join(out, "*.json")), key=lambda p: (not os.path.basename(p).startswith("mesh"), p)):
    d = json.load(open(path))
    case = os.path.basename(path)[:-5]
    for r in d["runs"]:
        g = r.get("gpu", {})
        per = g.get("inner_spmm_seconds", 0) * 1e3 / g["inner_products"] if g.get("inner_products") else 0
        fb = "at %d" % r["fallback_iteration"] if r["fallback_iteration"] >= 0 else "-"
        err = "%.1e" % r["max_relative_error"] if "max_relative_error" in r else "-"
        print("| %s | %s | %s | %d (%d) | %d | %.1e | %s | %.3f | %.3f | %.1f%% | %.4f | %s |" % (
            case, r["backend"], r["stop"], r["outer_iterations"], r["jacobi_iterations"], r["inner_products"],
            r["max_relative_residual"], err, r["solve_seconds"], g.get("inner_spmm_seconds", 0),
            100 * g.get("inner_spmm_share", 0), per, fb))
m = json.load(open(os.path.join(out, "mesh.json"))) if os.path.exists(os.path.join(out, "mesh.json")) else None
if m:
    mm = m["matrix"]
    print("\nmesh: %d rows, %d nonzeros; bcsr24 census: %s" % (mm["rows"], mm["nnz"], json.dumps(mm.get("bcsr24", {}))))
PY
  echo "== summary: $out/solver_summary.md"
  cat "$out/solver_summary.md"
fi
exit $mesh_status
