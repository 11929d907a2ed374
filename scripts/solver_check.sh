#!/usr/bin/env bash
# On a GPU machine: run bcsr24_solve on generated hard SPD problems (3-D diffusion with high-contrast inclusions,
# anisotropic layers and log-normal coefficients, >= 1M rows; a 2-D log-normal problem of the G3_circuit class) and
# on the shared symmetric SuiteSparse matrices, each with all backends in one process (--compare: the block solver
# with bcsr24 products, the same solver with cuSPARSE fp32 products, and k Jacobi-PCG solves in fp64), then write a
# summary (Markdown, CSV, JSON) into OUTDIR. Builds nothing: configure and build first (scripts/gpu_check.sh, or
# cmake --build BUILD --target bcsr24_solve).
#
# Usage: scripts/solver_check.sh OUTDIR
# Environment:
#   BUILD_DIR=build-gpu        build folder holding apps/solver/bcsr24_solve
#   BCSR24_SHARED_DATA=DIR     folder with suitesparse/ (default: ./shared/data, else ../shared/data)
#   N=100                      cells per axis of the 3-D problems (100: 1,000,000 rows); N2=1300 for the 2-D one
#   RHS=16                     right-hand sides
#   TOL=1e-8                   true fp64 relative residual of every column
#   SOLVE_TIME_LIMIT=120       wall-clock cap of each solve inside bcsr24_solve (--time-limit; stop reason time_limit)
#   RUN_TIMEOUT=900            wall-clock cap of each bcsr24_solve process (timeout(1); exit status 124)
#   PRECISIONS="split fp16"    inner precisions of the block solver on the generated problems (the first with
#                              --compare, the others the block solver alone)
#   DEGREES="31"               further Chebyshev degrees of the block solver alone on the generated problems (the
#                              default degree, 15, runs with --compare)
#   CASES="..."                generated cases to run (default: all, see below); SUITESPARSE=0 skips the matrices
#   SOLVER_ARGS="..."          extra bcsr24_solve options for every run
# Exit status: 0 when every generated problem converged with every backend and precision and every matrix of the
# known-SPD list converged with the block solver; 1 otherwise (the summary says which).
set -uo pipefail  # no -e: a run that stops unconverged exits 3 and the others must still run
out=${1:?usage: scripts/solver_check.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-gpu}
exe="$build/apps/solver/bcsr24_solve"
if [[ ! -x "$exe" ]]; then
  echo "solver_check: $exe not found: build it first (cmake --build $build --target bcsr24_solve)" >&2
  exit 1
fi
data=${BCSR24_SHARED_DATA:-}
if [[ -z "$data" ]]; then
  for d in shared/data ../shared/data; do [[ -d "$d/suitesparse" ]] && { data=$d; break; }; done
fi
n=${N:-100}
n2=${N2:-1300}
rhs=${RHS:-16}
tol=${TOL:-1e-8}
limit=${SOLVE_TIME_LIMIT:-120}
run_timeout=${RUN_TIMEOUT:-900}
read -r -a precisions <<< "${PRECISIONS:-split fp16}"
read -r -a degrees <<< "${DEGREES-31}"
read -r -a extra <<< "${SOLVER_ARGS:-}"
# shellcheck source=check_verdict.sh
source scripts/check_verdict.sh
failures=()
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
  echo "settings: N=$n N2=$n2 RHS=$rhs TOL=$tol SOLVE_TIME_LIMIT=$limit RUN_TIMEOUT=$run_timeout PRECISIONS=${precisions[*]} DEGREES=${degrees[*]}"
} > "$out/environment.txt"
cat "$out/environment.txt"

# run NAME JUDGED ARGS...: one bcsr24_solve process, log and JSON in OUTDIR; JUDGED=1 counts a non-zero exit as a
# failure of the check.
run() {
  local name=$1 judged=$2
  shift 2
  echo "== $name: bcsr24_solve $*"
  local start=$SECONDS
  # --verbose: a line per iteration in the log, so that a run the timeout kills (no JSON) still shows its history.
  timeout "$run_timeout" "$exe" "$@" --rhs "$rhs" --tol "$tol" --time-limit "$limit" --json "$out/$name.json" \
    --verbose "${extra[@]}" > "$out/$name.log" 2>&1
  local rc=$?
  grep -E "^(converged|stopped|chebyshev|bcsr24 plan|time to solution|device time|host synchronisations|speedup|fallback)" \
    "$out/$name.log" | sed 's/^/   /' | cut -c1-240
  echo "   exit status $rc ($((SECONDS - start)) s)"
  ((rc == 124)) && echo "   KILLED by the $run_timeout s timeout (RUN_TIMEOUT)"
  if ((rc != 0)); then
    tail -n 5 "$out/$name.log" | sed 's/^/   | /'
    ((judged)) && failures+=("$name")
  fi
  return 0
}

# 1. The GPU space against the CPU space on a small problem: every operation and a whole solve, both precisions.
#    A mismatch here explains a wrong result below.
for p in split fp16; do
  run "check_spaces_$p" 1 --generate-diffusion 20 20 20 --coefficients inclusions --check-spaces --inner-precision "$p"
done

# 2. Generated hard problems (>= 1M rows). Condition numbers of the small versions are in test/test_solver.cpp; the
#    JSON of each run holds the Lanczos estimate of the Jacobi-scaled spectrum.
declare -A case_args=(
  [inclusions]="--generate-diffusion $n $n $n --coefficients inclusions --contrast 1e6 --fill 0.1 --inclusion-size 4"
  [layers_aniso]="--generate-diffusion $n $n $n --coefficients layers --contrast 1e4 --layer-thickness 2 --anisotropy 1 1 1e-4"
  [lognormal]="--generate-diffusion $n $n $n --coefficients lognormal --sigma 2.5 --correlation 4"
  [lognormal_2d]="--generate-diffusion $n2 $n2 1 --coefficients lognormal --sigma 2.5 --correlation 6"
  [constant]="--generate-diffusion $n $n $n --coefficients constant"
)
read -r -a cases <<< "${CASES:-inclusions layers_aniso lognormal lognormal_2d constant}"
for c in "${cases[@]}"; do
  [[ -n "${case_args[$c]:-}" ]] || { echo "unknown case $c"; failures+=("$c"); continue; }
  read -r -a args <<< "${case_args[$c]}"
  first=1
  for p in "${precisions[@]}"; do
    if ((first)); then
      run "gen_${c}_${p}" 1 "${args[@]}" --inner-precision "$p" --compare
      first=0
    else
      run "gen_${c}_${p}" 1 "${args[@]}" --inner-precision "$p"
    fi
  done
  for d in "${degrees[@]}"; do
    run "gen_${c}_${precisions[0]}_degree$d" 1 "${args[@]}" --inner-precision "${precisions[0]}" --cheb-degree "$d"
  done
done

# 3. The shared symmetric SuiteSparse matrices (real or integer values), all backends. Those known to be SPD must
#    converge with the block solver; the others are reported (a breakdown names an indefinite matrix).
known_spd=" bcsstk03 bcsstk04 bcsstk05 bcsstk13 bcsstk16 bcsstk20 bcsstm07 nos1 nos4 494_bus Andrews mesh2em5 mesh3em5 Trefethen_200 Trefethen_200b Trefethen_300 Trefethen_500 "
if [[ "${SUITESPARSE:-1}" != 0 && -n "$data" && -f "$data/suitesparse/MANIFEST.tsv" ]]; then
  while IFS=$'\t' read -r name dir _ rows _ _ _ field symmetry _; do
    [[ "$symmetry" == symmetric && ( "$field" == real || "$field" == integer ) ]] || continue
    f="$data/$dir/$name.mtx"
    [[ -f "$f" ]] || continue
    judged=0
    [[ "$known_spd" == *" $name "* ]] && judged=1
    run "ss_$name" "$judged" --matrix "$f" --compare
  done < <(tail -n +2 "$data/suitesparse/MANIFEST.tsv")
else
  echo "== no suitesparse/MANIFEST.tsv found (set BCSR24_SHARED_DATA) or SUITESPARSE=0: matrices skipped"
fi

# 4. Summary: one row per solver run, Markdown + CSV + JSON.
if command -v python3 > /dev/null; then
  python3 - "$out" <<'PY'
import csv, glob, json, os, sys
out = sys.argv[1]
rows = []
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    name = os.path.basename(path)[:-5]
    if name.startswith("summary"):
        continue
    try:
        d = json.load(open(path))
    except Exception as e:
        rows.append({"case": name, "run": "(unreadable JSON: %s)" % e})
        continue
    m = d.get("matrix", {})
    if "space_check" in d:
        sc = d["space_check"]
        bad = [c["check"] for c in sc.get("checks", []) if not c.get("ok")]
        rows.append({"case": name, "rows": m.get("rows"), "run": "GPU vs CPU space check",
                     "stop": "ok" if sc.get("ok") else "MISMATCH: " + "; ".join(bad)})
        continue
    runs = d.get("runs", [])
    first = runs[0]["solve_seconds"] if runs else 0
    for r in runs:
        g = r.get("gpu", {})
        it = r.get("iterations", 0)
        cheb = r.get("chebyshev", {})
        rows.append({
            "case": name, "rows": m.get("rows"), "nnz": m.get("nnz"), "run": r.get("label", r.get("backend")),
            "stop": r.get("stop"), "iterations": it,
            "inner_products": r.get("inner_products", 0) + r.get("lanczos_products", 0),
            "outer_products": r.get("outer_products", 0),
            "residual": r.get("host_check_relative_residual"),
            "solve_s": r.get("solve_seconds"),
            "ms_per_iteration": 1e3 * r["solve_seconds"] / it if it else None,
            "product_share": g.get("product_share"), "inner_product_share": g.get("inner_product_share"),
            "vector_share": g.get("vector_share"), "block_share": g.get("block_algebra_share"),
            "other_share": g.get("other_share"),
            "ms_per_inner_product": g.get("ms_per_inner_product"),
            "syncs_per_iteration": r.get("synchronizations_per_iteration",
                                         (r.get("synchronizations", 0) / it) if it else None),
            "time_over_first": r["solve_seconds"] / first if first else None,
            "degree": cheb.get("degree"), "interval": "[%.3g, %.4g]" % (cheb["a"], cheb["b"]) if cheb else "",
            "theta_min": cheb.get("theta_min"),
            "fallback": r.get("fallback_iteration", -1) if r.get("fallback_iteration", -1) >= 0 else "",
            "message": r.get("message", "")})
# A run that ended before writing its JSON (a rejected matrix, a crash, the timeout): its log's last line.
for log in sorted(glob.glob(os.path.join(out, "*.log"))):
    name = os.path.basename(log)[:-4]
    if os.path.exists(os.path.join(out, name + ".json")):
        continue
    lines = [l.strip() for l in open(log, errors="replace") if l.strip()]
    rows.append({"case": name, "run": "(no JSON)", "stop": "error: " + (lines[-1][:160] if lines else "empty log")})
keys = ["case", "rows", "nnz", "run", "stop", "iterations", "inner_products", "outer_products", "residual", "solve_s",
        "ms_per_iteration", "product_share", "inner_product_share", "vector_share", "block_share", "other_share",
        "ms_per_inner_product", "syncs_per_iteration", "time_over_first", "degree", "interval", "theta_min",
        "fallback", "message"]
with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow(r)
json.dump(rows, open(os.path.join(out, "summary.json"), "w"), indent=1)
def fmt(v, spec):
    if v is None or v == "":
        return "-"
    try:
        return spec % v
    except TypeError:
        return str(v)
with open(os.path.join(out, "summary.md"), "w") as f:
    f.write("| case | rows | run | stop | iter | products inner / fp64 | true residual | time s | ms / iter | "
            "products share | ms / inner product | syncs / iter | time / first run | Chebyshev degree, interval |\n")
    f.write("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    for r in rows:
        f.write("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" % (
            r["case"], fmt(r.get("rows"), "%d"), r.get("run", ""), r.get("stop", ""), fmt(r.get("iterations"), "%d"),
            "%s / %s" % (fmt(r.get("inner_products"), "%d"), fmt(r.get("outer_products"), "%d")),
            fmt(r.get("residual"), "%.1e"), fmt(r.get("solve_s"), "%.3f"), fmt(r.get("ms_per_iteration"), "%.2f"),
            fmt(r.get("product_share") and 100 * r["product_share"], "%.0f%%"),
            fmt(r.get("ms_per_inner_product"), "%.4f"), fmt(r.get("syncs_per_iteration"), "%.2f"),
            fmt(r.get("time_over_first"), "%.2fx"),
            ("%s %s" % (r.get("degree"), r.get("interval"))) if r.get("degree") else "-"))
    f.write("\n'time / first run': time to solution over the first run of the same process (the block solver "
            "with bcsr24 products); > 1 means slower than it.\n")
print("== summary: %s/summary.md (.csv, .json)" % out)
PY
  cat "$out/summary.md"
else
  echo "== python3 not found: no summary table (the per-run JSON and logs are in $out)"
fi

check_verdict "== FAILED (did not converge, timed out, or mismatched)" "== all judged runs converged"
