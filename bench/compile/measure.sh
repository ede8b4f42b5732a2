#!/usr/bin/env bash
# What including maf-sandbox costs a consumer: an empty main() that includes one header,
# compiled as a consumer would (g++ -std=c++20 -O0 -c), measured as preprocessed lines, the
# median user CPU time of N compiles (user time, not wall: the machine is shared) and the
# compiler's peak RSS. Beside it, the floor: the same TU including only the standard
# headers the light entry includes, which no header of ours can go below.
#
#   bench/compile/measure.sh [BEFORE_REV] [RUNS]
#
# BEFORE_REV (default: none) also measures <maf/sandbox.hpp> of that git revision, for a
# before/after row. Prints a Markdown table on stdout.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
before="${1:-}" runs="${2:-5}"
cxx="${CXX:-g++}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# measure LABEL INCLUDE_DIR TU_TEXT
measure() {
  local label="$1" inc="$2" tu="$scratch/tu.cpp" times=() lines rss
  printf '%s\nint main() {}\n' "$3" >"$tu"
  lines="$("$cxx" -std=c++20 -E -I"$inc" "$tu" | wc -l)"
  for _ in $(seq "$runs"); do
    times+=("$( { /usr/bin/time -f '%U %M' "$cxx" -std=c++20 -O0 -I"$inc" -c "$tu" -o "$scratch/tu.o"; } 2>&1 | tail -1)")
  done
  local median
  median="$(printf '%s\n' "${times[@]}" | sort -n | awk -v n="$runs" 'NR == int((n + 1) / 2) {print $1}')"
  rss="$(printf '%s\n' "${times[@]}" | awk '{print $2}' | sort -n | tail -1)"
  printf '| %s | %s | %s | %s |\n' "$label" "$lines" "$median" "$((rss / 1024))"
}

echo "| translation unit (empty main) | preprocessed lines | user CPU, s (median of $runs) | peak RSS, MiB |"
echo "|---|---:|---:|---:|"
std_headers='#include <array>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>'
measure "floor: the standard headers the light entry includes" "$root/include" "$std_headers"
if [[ -n "$before" ]]; then
  git -C "$root" archive "$before" include | tar -x -C "$scratch"
  measure "<maf/sandbox.hpp> at $before (before)" "$scratch/include" '#include <maf/sandbox.hpp>'
fi
measure "<maf/sandbox.hpp> (the light entry)" "$root/include" '#include <maf/sandbox.hpp>'
measure "<maf/sandbox/async.hpp> (the coroutine API)" "$root/include" '#include <maf/sandbox/async.hpp>'
