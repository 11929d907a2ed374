#!/usr/bin/env bash
# A/B timing on the GPU machine: bench_spmm of git revision REV against this tree's build, on the same GPU in one
# session, matrix by matrix. REV's bench_spmm is built in its own source tree and build folder (build-ab/); this
# tree's is build-gpu/apps/bench_spmm (scripts/gpu_check.sh's build step). Per matrix the two binaries run back to
# back with the same methods, widths and repetitions, old then new, then new then old (two passes whose drift
# cancels); scripts/ab_report.py turns the two CSVs into new/old time ratios per matrix, method and n and flags every
# ratio above 1.03. Exit status 0 whatever the ratios (it reports, it does not judge); 2 when it cannot set up (no
# source tree of REV, a failed build, no binary of this tree).
#
# Usage: scripts/ab_compare.sh OUTDIR REV [MATRIX...]
#   REV       a commit of this repository, e.g. d3ca7bc (the tree before the kernel-table round)
#   MATRIX    one matrix per argument: bench_spmm's own source options in one word ("--xdys 10d0s --size 16384",
#             "--mesh 40x40x40,dofs=3"), a Matrix Market path (ending in .mtx or .mtx.gz), or the name of a shared
#             SuiteSparse matrix ($BCSR24_SHARED_DATA/suitesparse/NAME.mtx). Default: XdYs 10d0s, 0d10s, 5d5s at
#             16384, the 40^3 mesh with 3 dofs in lexicographic and random order, memplus, Andrews, rajat01,
#             dwt_992 and every real matrix of suitesparse/MANIFEST.tsv with at least 50,000 nonzeros.
# Environment:
#   AB_METHODS=auto,split_pipelined,csr_cuda_cores   methods of both binaries (options both
#                       bench_spmm versions have; no cuSPARSE baselines, which only cost time here)
#   AB_NEW_METHODS=auto_model   methods of the new binary only, compared with the old method ab_report.py pairs them
#                       with (AB_PAIRS="auto_model=auto": the cost model's plan against the old automatic plan, which
#                       was the cost model's; the new plain `auto` is the measured plan)
#   AB_N=2,4,7,8,16,32,64,128   widths of B            BENCH_REPS=20   timed runs per method (median)
#   AB_SRC=build-ab/src  REV's source tree: made with `git worktree add` where this is a git checkout; on a copy
#                       without .git, make it elsewhere and bring it along:
#                       mkdir -p build-ab/src && git archive REV | tar -x -C build-ab/src && echo REV > build-ab/src/AB_REV
#   AB_BUILD=build-ab/build   REV's build folder (only the bench_spmm target)
#   AB_NEW=build-gpu/apps/bench_spmm   the new binary
#   AB_OLD=PATH         an old binary built before (of REV): no source tree, no build
#   CUDA_ARCH=90  BCSR24_DEPS_PREFIX=DIR   as in scripts/gpu_check.sh's build step
#   BCSR24_SHARED_DATA=DIR   shared data (default ../shared/data)
# Writes OUTDIR/old.csv and OUTDIR/new.csv (bench_spmm's columns and ab_pass), their logs, OUTDIR/commands (every
# run), OUTDIR/build_old.log and OUTDIR/ab.md (the table).
set -uo pipefail
out=${1:?usage: scripts/ab_compare.sh OUTDIR REV [MATRIX...]}
rev=${2:?usage: scripts/ab_compare.sh OUTDIR REV [MATRIX...]}
shift 2
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.." || exit 2
export PATH="/usr/local/cuda/bin:$PATH"
methods=${AB_METHODS:-auto,split_pipelined,csr_cuda_cores}
new_only=${AB_NEW_METHODS-auto_model}
new_methods=$methods${new_only:+,$new_only}
widths=${AB_N:-2,4,7,8,16,32,64,128}
reps=${BENCH_REPS:-20}
shared=${BCSR24_SHARED_DATA:-../shared/data}
arch=${CUDA_ARCH:-90}
src=${AB_SRC:-build-ab/src}
abbuild=${AB_BUILD:-build-ab/build}
new_bin=${AB_NEW:-build-gpu/apps/bench_spmm}
die() { echo "ab_compare: $*" >&2; exit 2; }
started=$SECONDS

[[ -x "$new_bin" ]] || die "$new_bin not found: build this tree first (STEPS=\"build ab\" scripts/gpu_check.sh OUT)"

if [[ -n "${AB_OLD:-}" ]]; then
  old_bin=$AB_OLD
  [[ -x "$old_bin" ]] || die "AB_OLD=$old_bin is not an executable"
  echo "== old binary: $old_bin (taken to be $rev)"
else
  # --- REV's source tree: a prepared copy (AB_REV names its commit), or a git worktree at REV
  if [[ -f "$src/CMakeLists.txt" && ! -e "$src/.git" ]]; then
    if [[ -f "$src/AB_REV" ]]; then
      [[ $(cat "$src/AB_REV") == "$rev" ]] || die "$src holds $(cat "$src/AB_REV"), not $rev"
    else
      echo "ab_compare: $src has no AB_REV file: taking it to be $rev"
    fi
  elif git rev-parse --git-dir > /dev/null 2>&1; then
    commit=$(git rev-parse --verify --quiet "$rev^{commit}") || die "$rev is not a commit of this repository"
    if [[ ! -e "$src/.git" ]]; then
      rm -rf "$src"
      git worktree prune
      git worktree add --detach "$src" "$commit" > /dev/null || die "git worktree add $src $rev failed"
    elif [[ $(git -C "$src" rev-parse HEAD) != "$commit" ]]; then
      git -C "$src" checkout --quiet --detach "$commit" || die "cannot check out $rev in $src"
    fi
    [[ $(git -C "$src" rev-parse HEAD) == "$commit" ]] || die "$src is not at $rev"
  else
    die "no git here and no source tree of $rev in $src: make one where git is (mkdir -p $src && git archive $rev |" \
        "tar -x -C $src && echo $rev > $src/AB_REV) and bring it along"
  fi

  # --- REV's bench_spmm (the library and that one program; no tests)
  echo "== building bench_spmm of $rev in $abbuild"
  cfg=(-S "$src" -B "$abbuild" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" -DBCSR24_BUILD_TESTS=OFF
       -DBCSR24_PYTHON=OFF)
  if [[ -n "${BCSR24_DEPS_PREFIX:-}" ]]; then
    p=$(cd "$BCSR24_DEPS_PREFIX" && pwd)/usr
    cfg+=(-DCMAKE_PREFIX_PATH="$p" -DZLIB_INCLUDE_DIR="$p/include" -DZLIB_LIBRARY="$p/lib/x86_64-linux-gnu/libz.a")
  fi
  if command -v ccache > /dev/null; then
    cfg+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  fi
  build_start=$SECONDS
  { cmake "${cfg[@]}" && cmake --build "$abbuild" -j"$(nproc)" --target bench_spmm; } > "$out/build_old.log" 2>&1 ||
    { tail -n 20 "$out/build_old.log"; die "the build of $rev failed (see $out/build_old.log)"; }
  old_bin=$abbuild/apps/bench_spmm
  [[ -x "$old_bin" ]] || die "the build of $rev made no $old_bin"
  echo "   built in $((SECONDS - build_start)) s"
fi

# --- the matrices: MATRIX arguments, or the default list
matrices=("$@")
if ((${#matrices[@]} == 0)); then
  matrices=("--xdys 10d0s --size 16384" "--xdys 0d10s --size 16384" "--xdys 5d5s --size 16384"
            "--mesh 40x40x40,dofs=3" "--mesh 40x40x40,dofs=3,order=random" memplus Andrews rajat01 dwt_992)
  manifest="$shared/suitesparse/MANIFEST.tsv"
  if [[ -f "$manifest" ]]; then
    # Real matrices with at least 50,000 nonzeros (nnz_full: both triangles of a symmetric one), by column name.
    while read -r name; do
      [[ " ${matrices[*]} " == *" $name "* ]] || matrices+=("$name")
    done < <(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
                         $col["field"] == "real" && $col["nnz_full"] + 0 >= 50000 { print $col["name"] }' "$manifest")
  else
    echo "ab_compare: no $manifest: only the named shared matrices"
  fi
fi

# source_args MATRIX: bench_spmm's source options (one per line) and, on the last line, the label both runs use.
source_args() {
  local spec=$1
  case $spec in
    --*)
      # shellcheck disable=SC2086
      printf '%s\n' $spec
      local label
      label=$(echo "$spec" | sed -E 's/--(xdys|size|seed) //g; s/--(mesh|graph|synth) /\1_/g; s/[ ,=:]+/_/g;
                                     s/[^A-Za-z0-9_.-]//g')
      echo "$label" ;;
    *.mtx | *.mtx.gz | */*)
      [[ -f $spec ]] || return 1
      printf '%s\n' --matrix "$spec"
      basename "${spec%.gz}" .mtx ;;
    *)
      local file="$shared/suitesparse/$spec.mtx"
      [[ -f $file ]] || return 1
      printf '%s\n' --matrix "$file" "$spec" ;;
  esac
}

# run_one SIDE PASS BINARY METHODS LABEL ARGS...: one bench_spmm run, its rows appended to OUTDIR/SIDE.csv with
# ab_pass = PASS (bench_spmm's own CSV of the run is kept apart, so that a failed run leaves no partial rows behind).
failed=()
run_one() {
  local side=$1 run_pass=$2 bin=$3 run_methods=$4 label=$5
  shift 5
  local args=("$@" --name "$label" --n "$widths" --methods "$run_methods" --reps "$reps")
  local part="$out/.$side.run.csv" t0=$SECONDS
  rm -f "$part"
  echo "$bin ${args[*]} --csv $part" >> "$out/commands"
  if "$bin" "${args[@]}" --csv "$part" >> "$out/$side.log" 2>&1 && [[ -f $part ]]; then
    if [[ ! -f "$out/$side.csv" ]]; then head -n 1 "$part" | sed 's/\r$//; s/$/,ab_pass/' > "$out/$side.csv"; fi
    tail -n +2 "$part" | sed "s/\r\$//; s/\$/,$run_pass/" >> "$out/$side.csv"
    echo "   $side (pass $run_pass): $((SECONDS - t0)) s"
  else
    echo "   $side (pass $run_pass): FAILED after $((SECONDS - t0)) s (see $out/$side.log)"
    failed+=("$side $label pass $run_pass")
  fi
  rm -f "$part"
}

rm -f "$out/old.csv" "$out/new.csv" "$out/old.log" "$out/new.log" "$out/commands"
runs_start=$SECONDS
for spec in "${matrices[@]}"; do
  mapfile -t words < <(source_args "$spec") || true
  if ((${#words[@]} < 2)); then
    echo "== $spec: not found, skipped"
    continue
  fi
  label=${words[-1]}
  unset 'words[-1]'
  echo "== $label"
  run_one old 1 "$old_bin" "$methods" "$label" "${words[@]}"
  run_one new 1 "$new_bin" "$new_methods" "$label" "${words[@]}"
  run_one new 2 "$new_bin" "$new_methods" "$label" "${words[@]}"
  run_one old 2 "$old_bin" "$methods" "$label" "${words[@]}"
done
echo "== runs took $((SECONDS - runs_start)) s (everything $((SECONDS - started)) s)"

if [[ ! -f "$out/old.csv" || ! -f "$out/new.csv" ]]; then
  echo "ab_compare: no comparable runs (see $out/old.log and $out/new.log)"
  exit 0
fi
pairs=()
for pair in ${AB_PAIRS-auto_model=auto}; do pairs+=(--pair "$pair"); done
command_text="BENCH_REPS=$reps AB_N=$widths AB_METHODS=$methods AB_NEW_METHODS=$new_only scripts/ab_compare.sh OUT $rev"
new_label="this tree"
[[ -n "${BCSR24_GIT_COMMIT:-}" ]] && new_label=$BCSR24_GIT_COMMIT
git rev-parse --git-dir > /dev/null 2>&1 && new_label="$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo +dirty)"
python3 scripts/ab_report.py "$out/old.csv" "$out/new.csv" --out "$out/ab.md" "${pairs[@]}" \
  --old-label "$rev" --new-label "$new_label" --date "$(date -u +%Y-%m-%d)" --command "$command_text"
grep -E '^\*\*' "$out/ab.md" || true
if ((${#failed[@]})); then echo "ab_compare: failed runs: ${failed[*]}"; fi
exit 0
