#!/usr/bin/env bash
# check-headers.sh COMPILER INCLUDE_DIR MODE
#   self-contained: every public header compiles alone (-fsyntax-only), each in a TU of its own
#   light-entry:    <maf/sandbox.hpp>'s include graph holds no Asio, Boost, JSON, fmt or spdlog
#                   header — the property that makes it the light entry (include/maf/sandbox.hpp)
#                   — and none of our headers in it includes <memory>, <filesystem>,
#                   <functional>, <set> or <bitset> itself: together a third of what it used to
#                   cost a consumer (bench/RESULTS.md, "Compile cost"). Only our own #include
#                   lines are held to that; what a standard header pulls in is the toolchain's.
#   front-doors:    every public header is reached from a front door (the two umbrellas,
#                   tools.hpp, authoring.hpp) or is the one header of a library of its own
#                   (otel.hpp, testing/in_process.hpp); and fwd.hpp agrees with the definitions:
#                   one TU holding fwd.hpp and every front door compiles, tags checked.
set -euo pipefail
cxx="$1" include="$2" mode="$3"
flags=(-std=c++20 -fsyntax-only -Wall -Wextra -Wpedantic -Werror -I"$include")
case "$mode" in
  self-contained)
    failed=0 n=0
    while IFS= read -r header; do
      rel="${header#"$include"/}"
      n=$((n + 1))
      if ! printf '#include <%s>\n' "$rel" | "$cxx" "${flags[@]}" -x c++ - 2>"${TMPDIR:-/tmp}/maf-header-$$.err"; then
        echo "not self-contained: $rel" >&2
        sed -n 1,20p "${TMPDIR:-/tmp}/maf-header-$$.err" >&2
        failed=$((failed + 1))
      fi
    done < <(find "$include/maf" -name '*.hpp' | sort)
    rm -f "${TMPDIR:-/tmp}/maf-header-$$.err"
    echo "$n public headers, $failed not self-contained"
    [[ $n -gt 0 && $failed -eq 0 ]]
    ;;
  light-entry)
    graph="$(printf '#include <maf/sandbox.hpp>\n' | "$cxx" "${flags[@]}" -H -x c++ - 2>&1 >/dev/null | grep '^\.' || true)"
    [[ -n "$graph" ]] || { echo "no include graph was printed" >&2; exit 1; }
    heavy="$(grep -E '/(boost|nlohmann|fmt|spdlog)/' <<<"$graph" || true)"
    if [[ -n "$heavy" ]]; then
      echo "<maf/sandbox.hpp> pulls in headers the light entry must not:" >&2
      echo "$heavy" | head -20 >&2
      exit 1
    fi
    ours="$(grep -oE "$include/maf/[^ ]+\.hpp" <<<"$graph" | sort -u)"
    [[ -n "$ours" ]] || { echo "no maf header in the include graph" >&2; exit 1; }
    costly="$(xargs grep -HnE '^#include <(memory|filesystem|functional|set|bitset)>' <<<"$ours" || true)"
    if [[ -n "$costly" ]]; then
      echo "a header of the light entry includes a standard header it keeps out:" >&2
      echo "$costly" >&2
      exit 1
    fi
    echo "<maf/sandbox.hpp>: $(wc -l <<<"$graph") headers in its include graph, none of Boost, JSON, fmt or spdlog;" \
         "$(wc -l <<<"$ours") of ours, none including <memory>, <filesystem>, <functional>, <set> or <bitset>"
    ;;
  front-doors)
    doors=(maf/sandbox.hpp maf/sandbox/async.hpp maf/sandbox/tools.hpp maf/sandbox/authoring.hpp)
    own_library=(maf/sandbox/otel.hpp maf/sandbox/testing/in_process.hpp maf/sandbox/fwd.hpp)
    tu="$(printf '#include <maf/sandbox/fwd.hpp>\n'; printf '#include <%s>\n' "${doors[@]}" "${own_library[@]}")"
    graph="$("$cxx" "${flags[@]}" -Wmismatched-tags -H -x c++ - <<<"$tu" 2>&1 >/dev/null)" \
      || { echo "fwd.hpp and the front doors do not compile together:" >&2; grep -v '^\.' <<<"$graph" | head -20 >&2; exit 1; }
    reached="$(grep '^\.' <<<"$graph" | grep -oE "$include/maf/[^ ]+\.hpp" | sed "s#^$include/##" | sort -u)"
    missing="$(comm -23 <(cd "$include" && find maf -name '*.hpp' | sort) \
                        <(printf '%s\n' $reached "${doors[@]}" "${own_library[@]}" | sort -u))"
    if [[ -n "$missing" ]]; then
      echo "public headers no front door reaches:" >&2
      echo "$missing" >&2
      exit 1
    fi
    echo "every public header is reached from ${doors[*]} or is a library's own (${own_library[*]})"
    ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
