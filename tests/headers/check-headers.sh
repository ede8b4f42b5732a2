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
  blocking-agent)
    # <maf/sandbox/conversation.hpp>, the agent layer's blocking door (docs/tools.md "A first
    # agent loop"): no Asio, no Boost at all, in its include graph.
    graph="$(printf '#include <maf/sandbox/conversation.hpp>\n' | "$cxx" "${flags[@]}" -H -x c++ - 2>&1 >/dev/null | grep '^\.' || true)"
    [[ -n "$graph" ]] || { echo "no include graph was printed" >&2; exit 1; }
    if grep -qE '/boost/' <<<"$graph"; then
      echo "<maf/sandbox/conversation.hpp> pulls in Boost:" >&2
      grep -E '/boost/' <<<"$graph" | head -10 >&2
      exit 1
    fi
    # Issue 52 item 7: no JSON library either (the door speaks JSON as text).
    if grep -qE '/nlohmann/' <<<"$graph"; then
      echo "<maf/sandbox/conversation.hpp> pulls in nlohmann/json:" >&2
      grep -E '/nlohmann/' <<<"$graph" | head -5 >&2
      exit 1
    fi
    echo "<maf/sandbox/conversation.hpp>: $(wc -l <<<"$graph") headers in its include graph, none of Boost or nlohmann"
    ;;
  refused-temporaries)
    # AGENT-1 (docs/tools.md "GCC 12 and temporaries"): a braced HostToolProgram,
    # BackgroundOptions, AdmitOptions, ExecInput or ExecStreamOptions temporary handed to its
    # awaitable does not compile, and the error says
    # to name it; the named form does compile.
    pre='#include <maf/sandbox/tools.hpp>
using namespace maf::sandbox;
boost::asio::awaitable<void> f(Sandbox& s, HostToolRun& r, std::shared_ptr<Sandbox> p, SandboxRouter& router,
                               OutputHandler h) {'
    for bad in 'co_await run_with_host_tools(s, r, HostToolProgram{.command = Command("true")});' \
               'co_await start_background(p, Command("true"), BackgroundOptions{.id = "x"});' \
               'co_await start_background(p, Command("true"), {.id = "x"});' \
               'co_await router.admit_call(SandboxKey{"s", "t"}, "shell", AdmitOptions{.exclusive = true});' \
               'co_await s.exec(Command("true"), ExecInput{.stdin_bytes = "x"});' \
               'co_await s.exec_stream(Command("true"), h, {.timeout = std::chrono::seconds(1)});'; do
      if err="$(printf '%s\n%s\n}\n' "$pre" "$bad" | "$cxx" "${flags[@]}" -x c++ - 2>&1)"; then
        echo "a braced temporary compiled: $bad" >&2; exit 1
      fi
      grep -q 'name the' <<<"$err" || { echo "refused without saying why: $bad" >&2; echo "$err" | head -5 >&2; exit 1; }
    done
    good='const HostToolProgram program{.command = Command("true")}; co_await run_with_host_tools(s, r, program);
const BackgroundOptions options{.id = "x"}; co_await start_background(p, Command("true"), options);
co_await start_background(p, Command("true"));
const AdmitOptions admit{.exclusive = true}; co_await router.admit_call(SandboxKey{"s", "t"}, "shell", admit);
co_await router.admit_call(SandboxKey{"s", "t"}, "shell");
const ExecInput input{.stdin_bytes = "x"}; co_await s.exec(Command("true"), input);
const ExecStreamOptions o{.timeout = std::chrono::seconds(1)}; co_await s.exec_stream(Command("true"), h, o);
co_await s.exec_stream(Command("true"), h);'
    printf '%s\n%s\n}\n' "$pre" "$good" | "$cxx" "${flags[@]}" -x c++ - || { echo "the named forms do not compile" >&2; exit 1; }
    echo "braced temporaries refused with the reason; named forms compile"
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
