#!/usr/bin/env bash
# Builds the libFuzzer target of the Matrix Market reader (clang, ASan + UBSan) and fuzzes it for N seconds.
#
# usage: scripts/fuzz_reader.sh [seconds=300] [extra libFuzzer flags...]
# Builds into build-fuzz/ directly from the io sources (no CMake), seeds build-fuzz/corpus from
# ../shared/data/mm-edge (or $BCSR24_SHARED_DATA/mm-edge) and from small inputs written below, and
# leaves crashes in build-fuzz/artifacts/. Rerun one with: build-fuzz/fuzz_matrix_market ARTIFACT
set -euo pipefail

seconds="${1:-300}"
shift || true
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/build-fuzz"
cxx="${CXX_FUZZ:-$(command -v clang++ || command -v clang++-14)}"
mkdir -p "$out/corpus" "$out/artifacts" "$out/seeds"

echo "building $out/fuzz_matrix_market with $cxx"
"$cxx" -std=c++17 -g -O1 -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$root/lib/include" -I"$root/lib/src" \
  "$root"/lib/src/io/*.cpp "$root/apps/fuzz/fuzz_matrix_market.cpp" \
  -lz -o "$out/fuzz_matrix_market"

# Seeds: every mm-edge file, plus small inputs like those of test/test_matrix_market.cpp.
shared="${BCSR24_SHARED_DATA:-$root/../shared/data}"
if [ -d "$shared/mm-edge" ]; then
  i=0
  while IFS= read -r -d '' f; do
    cp "$f" "$out/seeds/mm-edge-$i-$(basename "$f")"
    i=$((i + 1))
  done < <(find "$shared/mm-edge" -type f ! -name README.tsv -print0)
  echo "seeded $i mm-edge files"
else
  echo "warning: $shared/mm-edge not found; seeding from the built-in inputs only" >&2
fi
s="$out/seeds"
printf '%%%%MatrixMarket matrix coordinate real general\n%% c\n\n3 4 4\n3 4 -2.5e-3\n1 1 1.0\n2 3 7\n1 4 1e2\n' >"$s/t-general"
printf '%%%%MatrixMarket matrix coordinate real general\r\n3 3 3\r\n1 1 1\r\n2 2 .5\r\n3 3 +1\r\n' >"$s/t-crlf"
printf '%%%%MatrixMarket matrix coordinate real general\r3 3 2\r1 1 1\r\r3 3 12.\r' >"$s/t-cr"
printf '%%%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 1 4\n3 1 10\n3 2 20\n' >"$s/t-symmetric"
printf '%%%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 3 10\n2 3 20\n3 3 1\n' >"$s/t-symmetric-upper"
printf '%%%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 2\n3 1 10\n3 2 -20\n' >"$s/t-skew"
printf '%%%%MatrixMarket matrix coordinate pattern symmetric\n4 4 4\n1 1\n2 1\n3 2\n4 4\n' >"$s/t-pattern"
printf '%%%%MatrixMarket matrix coordinate real hermitian\n2 2 2\n1 1 1e-400\n2 1 1e308\n' >"$s/t-hermitian"
printf '%%%%MatrixMarket matrix array real general\n%%\n3 2\n1\n2\n3\n4\n5\n0\n' >"$s/t-array"
printf '%%%%MatrixMarket matrix array real symmetric\n3 3\n1\n2\n3\n4\n5\n6\n' >"$s/t-array-symmetric"
printf '%%%%MatrixMarket matrix array integer skew-symmetric\n3 3\n1\n2\n3\n' >"$s/t-array-skew"
printf '%%%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n2 1 1.5e308\n2 1 1.5e308\n' >"$s/t-dup-overflow"
printf '%%%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n2 2 0\n1 1 -1\n' >"$s/t-dup-zero"
if command -v gzip >/dev/null; then gzip -c "$s/t-general" >"$s/t-general.gz"; fi

# Keywords and tokens that random mutation rarely spells.
cat >"$out/mm.dict" <<'DICT'
"%%MatrixMarket"
"matrix"
"vector"
"coordinate"
"array"
"real"
"double"
"integer"
"unsigned-integer"
"pattern"
"complex"
"general"
"symmetric"
"skew-symmetric"
"hermitian"
"\x0d\x0a"
"\x0d"
"1e310"
"1e-400"
"2147483647"
"2147483648"
"9223372036854775808"
"nan"
"inf"
"\x1f\x8b"
"BZh"
DICT

echo "fuzzing for $seconds s"
# The corpus directory comes first: new inputs are written there; the seeds are read once.
exec "$out/fuzz_matrix_market" "$out/corpus" "$out/seeds" \
  -max_total_time="$seconds" -max_len=4096 -rss_limit_mb=2048 -timeout=10 \
  -dict="$out/mm.dict" -artifact_prefix="$out/artifacts/" -print_final_stats=1 "$@"
