#!/usr/bin/env bash
# Compiles the library's kernel translation units with `ptxas -v` for every CUDA architecture a build targets, lists
# each kernel entry point with its registers and spills, and fails if any entry point spills registers to local
# memory (a spill is a local-memory store and load in the kernel's inner loop: slower, and never planned).
#
# Usage: [SPILL_ARCHS="80 90"] scripts/check_spills.sh BUILD_DIR [OUTDIR]
#   BUILD_DIR    a configured build (its CMakeCache.txt names the architectures and nvcc); nothing in it is rebuilt
#   OUTDIR       where the ptxas logs and the table go (default BUILD_DIR/spill_check)
#   SPILL_ARCHS  the architectures to check instead of the build's own (a build for sm_90 can be checked for sm_80
#                too: the register budgets follow each architecture's shared memory, so each must be compiled)
# Writes OUTDIR/entries.tsv (arch, registers, stack bytes, spill store bytes, spill load bytes, kernel) and prints
# the entry points per architecture. Needs only nvcc (device code only: no host compiler pass, no GPU).
set -euo pipefail
build=${1:?usage: scripts/check_spills.sh BUILD_DIR [OUTDIR]}
build=$(cd "$build" && pwd)
out=${2:-$build/spill_check}
mkdir -p "$out"
out=$(cd "$out" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
cache=$build/CMakeCache.txt
[[ -f $cache ]] || { echo "check_spills: $cache not found (configure the build first)" >&2; exit 2; }
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$cache" | head -n 1; }
nvcc=$(cache_value CMAKE_CUDA_COMPILER)
nvcc=${nvcc:-nvcc}
archs=${SPILL_ARCHS:-$(cache_value CMAKE_CUDA_ARCHITECTURES)}
archs=${archs//;/ }
[[ -n $archs ]] || { echo "check_spills: no CMAKE_CUDA_ARCHITECTURES in $cache" >&2; exit 2; }

# Every kernel translation unit of the library: the hand-written ones and those of the kernel table, which CMake
# writes into the build tree when it configures it (lib/CMakeLists.txt).
generated=$build/lib/kernels_generated
compgen -G "$generated/*.cu" > /dev/null ||
  { echo "check_spills: no kernel-table units in $generated (configure the build first)" >&2; exit 2; }
mapfile -t units < <(ls "$src"/lib/src/kernels/*.cu "$generated"/*.cu)
jobs=()
for arch in $archs; do
  case $arch in
    *-virtual) continue ;;  # PTX only: ptxas does not run at build time
    all | all-major | native)
      echo "check_spills: CMAKE_CUDA_ARCHITECTURES=$arch; configure with explicit numbers (e.g. 80;90)" >&2
      exit 2 ;;
  esac
  sm=sm_${arch%-real}
  for unit in "${units[@]}"; do jobs+=("$sm $unit"); done
done

compile() {  # one (architecture, translation unit): ptxas's report in a log of its own
  local sm=$1 unit=$2
  local log=$out/$sm.$(basename "$unit" .cu).log
  "$nvcc" -std=c++17 -O3 -DNDEBUG --expt-relaxed-constexpr -arch="$sm" -cubin -Xptxas -v \
    -I"$src/lib/include" -I"$src/lib/src" -I"$src/lib/experimental" "$unit" -o "$out/$sm.$(basename "$unit" .cu).cubin" > "$log" 2>&1 ||
    { echo "check_spills: $unit failed to compile for $sm (see $log)" >&2; return 1; }
}
export -f compile
export nvcc src out
printf '%s\n' "${jobs[@]}" | xargs -P "$(nproc)" -L 1 bash -c 'compile "$0" "$1"'

# ptxas prints, per entry point: "Compiling entry function 'NAME' for 'sm_XX'", then "N bytes stack frame,
# S bytes spill stores, L bytes spill loads" and "Used R registers".
awk '
  /Compiling entry function/ { split($0, q, "'"'"'"); name = q[2]; arch = q[4]; entry = 1; next }
  entry && /bytes stack frame/ { stack = $1; stores = $5; loads = $9; next }
  entry && /Used [0-9]+ registers/ {
    for (i = 1; i <= NF; ++i) if ($i == "Used") regs = $(i + 1)
    print arch "\t" regs "\t" stack "\t" stores "\t" loads "\t" name
    entry = 0
  }' "$out"/*.log | sort -u > "$out/entries.raw"
# Demangled names (the cubins of every unit are compiled separately, so a kernel appears once per architecture).
cut -f 6 "$out/entries.raw" | c++filt > "$out/names.txt"
paste <(cut -f 1-5 "$out/entries.raw") "$out/names.txt" > "$out/entries.tsv"
rm -f "$out/entries.raw" "$out/names.txt" "$out"/*.cubin

status=0
for arch in $archs; do
  [[ $arch == *-virtual ]] && continue
  sm=sm_${arch%-real}
  total=$(awk -F'\t' -v a="$sm" '$1 == a' "$out/entries.tsv" | wc -l)
  spilling=$(awk -F'\t' -v a="$sm" '$1 == a && ($4 > 0 || $5 > 0)' "$out/entries.tsv" | wc -l)
  tile=$(awk -F'\t' -v a="$sm" '$1 == a && $6 ~ /bcsr24_spmm_kernel</' "$out/entries.tsv" | wc -l)
  csr=$(awk -F'\t' -v a="$sm" '$1 == a && $6 ~ /csr_spmm_kernel</' "$out/entries.tsv" | wc -l)
  other=$((total - tile - csr))
  echo "$sm: $total kernel entry points ($tile tile kernel, $csr CSR kernel, $other other); $spilling spill"
  if ((spilling > 0)); then
    status=1
    echo "  spilling (registers, spill store / load bytes, kernel):"
    awk -F'\t' -v a="$sm" '$1 == a && ($4 > 0 || $5 > 0) {
      printf "    %s regs, %s / %s bytes: %s\n", $2, $4, $5, $6 }' \
      "$out/entries.tsv"
  fi
done
echo "table: $out/entries.tsv"
exit $status
