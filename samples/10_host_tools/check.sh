#!/bin/sh
# The sample's test: run it, then hold the landed output to what the guest was told.
# usage: check.sh <host_tools> <process|docker>
set -u
bin=$1 backend=$2
landing=$(mktemp -d)
trap 'rm -rf "$landing"' EXIT
out=$("$bin" --backend "$backend" "$landing")
rc=$?
printf '%s\n' "$out"
fail() { echo "check.sh: $*" >&2; exit 1; }
[ "$rc" -eq 0 ] || fail "the sample exited $rc"
printf '%s\n' "$out" | grep -q "2 request(s) served, 1 answered with a value" || fail "not two calls, one answered"
printf '%s\n' "$out" | grep -q "failed; the host's log has the detail" || fail "id 99 was not refused to the guest"
answer=$(find "$landing" -name answer.json | head -n 1)
[ -n "$answer" ] || fail "out/answer.json did not land in $landing"
grep -q '"known": {"id":7,"name":"Ada Lovelace"}' "$answer" || fail "the landed answer is wrong: $(cat "$answer")"
echo "check.sh: ok"
