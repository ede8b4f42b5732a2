#!/usr/bin/env bash
# The proxy's control channel (issue 46 items 5 and 6; docs/backends/egress-proxy.md "Control
# channel", EGU-1…EGU-6) end to end on this machine: the static proxy with `--control @name`
# (an abstract unix socket), a plain upstream the test starts, curl and a Python CONNECT
# client as the guest, and control_client.py as the host (an update sender and a decider).
# Run again against the proxy's --unsafe-broken-control double: each probe must fail there.
# Usage: test_proxy_control.sh PROXY_BINARY CONTROL_CLIENT_PY. Without python3 or curl it fails
# (scripts/setup installs both): a probe that did not run is not a pass.
set -uo pipefail
proxy="$(realpath "$1")"; client="$(realpath "$2")"
command -v python3 >/dev/null && command -v curl >/dev/null || { echo 'test_proxy_control: needs python3 and curl' >&2; exit 1; }
work="$(mktemp -d)"; pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT
cd "$work"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
mkdir -p www && echo "hello" >www/x
up=$(free_port)
python3 -m http.server --bind 127.0.0.1 --directory www "$up" >up.log 2>&1 & pids+=($!)
for _ in $(seq 50); do curl -s "http://127.0.0.1:$up/x" >/dev/null && break; sleep 0.1; done

# run_proxy NAME [EXTRA ARGS]: the proxy allowing a.test and b.test, its control channel at
# @maf-test-$$-NAME, a decider attached that answers by host; $port, $ctl set here.
run_proxy() {
  local name="$1"; shift
  port=$(free_port); ctl="@maf-test-$$-$name"
  local pins=()
  for h in a b c deny once life slow; do pins+=(--resolve "$h.test=127.0.0.1"); done
  "$proxy" --unsafe-allow-forwarding "$@" --listen "127.0.0.1:$port" "${pins[@]}" \
    --allow "a.test:$up,b.test:$up" --control "$ctl" --decider-timeout-ms 500 >"$name.log" 2>"$name.err" & pids+=($!)
  for _ in $(seq 50); do grep -q listening "$name.log" 2>/dev/null && break; sleep 0.1; done
  python3 "$client" decide "$ctl" '{"deny.test":["deny","not on my watch 42"],"once.test":["allow-once",""],
    "life.test":["allow-sandbox",""],"slow.test":["silent",""]}' "$name.asks" >"$name.decider" 2>&1 & pids+=($!)
  for _ in $(seq 50); do grep -q '"ok":true' "$name.decider" 2>/dev/null && break; sleep 0.1; done
}

probes() {
  local name="$1"
  c() { curl -s --max-time 10 --proxy "http://127.0.0.1:$port" -w ' %{http_code}' "$@"; }
  send() { "$proxy" --control-send "$ctl" "$1"; }
  local got
  # EGU-1: the guest's side of the proxy is HTTP only; a control line sent there is a bad
  # request and changes nothing.
  got=$(printf '{"op":"update","id":1,"allow":"c.test:%s"}\n\n' "$up" | python3 -c '
import socket,sys; s=socket.create_connection(("127.0.0.1",int(sys.argv[1]))); s.sendall(sys.stdin.buffer.read())
print(s.recv(200).split(b"\r\n")[0].decode())' "$port")
  if [[ "$got" == "HTTP/1.1 400"* ]] && [[ "$(c "http://c.test:$up/x")" == *" 403" ]]; then
    echo "ok   EGU-1 a control line on the guest's port is a bad request and changes nothing"
  else echo "FAIL EGU-1 the guest's port took a control line ($got)"; fi
  # EGU-2: a tunnel to b.test is open; the update that drops b.test closes it and refuses the next.
  python3 "$client" hold "$ctl" b.test "$up" "$port" "$name.hold" & pids+=($!)
  for _ in $(seq 50); do grep -q open "$name.hold" 2>/dev/null && break; sleep 0.1; done
  got=$(send '{"op":"update","id":7,"allow":"a.test:'"$up"'"}')
  for _ in $(seq 30); do [[ $(wc -l <"$name.hold" 2>/dev/null || echo 0) -ge 2 ]] && break; sleep 0.1; done
  if grep -qx closed "$name.hold"; then echo "ok   EGU-2 the update closed the open tunnel to the host it dropped ($got)"
  else echo "FAIL EGU-2 the open tunnel outlived the update: $(tr '\n' ' ' <"$name.hold") ($got)"; fi
  if [[ "$(c "http://b.test:$up/x")" == *" 403" ]] && [[ "$(c "http://a.test:$up/x")" == *"hello"*" 200" ]]; then
    echo "ok   EGU-2 the narrowed policy refuses the next request (the kept host still answers)"
  else echo "FAIL EGU-2 the narrowed policy still lets b.test through"; fi
  send '{"op":"update","id":8,"allow":"a.test:'"$up"',c.test:'"$up"'"}' >/dev/null
  if [[ "$(c "http://c.test:$up/x")" == *"hello"*" 200" ]]; then echo "ok   EGU-3 a widening update lets the new host through"
  else echo "FAIL EGU-3 the widened host is still refused"; fi
  # EGU-4: the decider's reason reaches the guest's 403 body and the decision log.
  got=$(c "http://deny.test:$up/x")
  if [[ "$got" == *"not on my watch 42"*" 403" ]] && grep -q '"host":"deny.test".*not on my watch 42' "$name.log"; then
    echo "ok   EGU-4 the decider's reason reaches the guest and the decision log"
  else echo "FAIL EGU-4 the decider's reason did not reach the guest ($got)"; fi
  local once1 once2 life1 life2
  once1=$(c "http://once.test:$up/x"); once2=$(c "http://once.test:$up/x")
  life1=$(c "http://life.test:$up/x"); life2=$(c "http://life.test:$up/x")
  if [[ "$once1$once2$life1$life2" == *"hello"*" 200"*"hello"*" 200"*"hello"*" 200"*"hello"*" 200" ]] \
     && [[ $(grep -c '"once.test"' "$name.asks") == 2 && $(grep -c '"life.test"' "$name.asks") == 1 ]]; then
    echo "ok   EGU-4 allow-once asks again next time; allow-sandbox is not asked again"
  else echo "FAIL EGU-4 allow-once/allow-sandbox ($once1|$once2|$life1|$life2; asks: $(wc -l <"$name.asks"))"; fi
  # EGU-5: a decider that does not answer in time is a deny, naming the wait.
  got=$(c "http://slow.test:$up/x")
  if [[ "$got" == *"did not answer within 500 ms"*" 403" ]]; then echo "ok   EGU-5 the decider's silence denies"
  else echo "FAIL EGU-5 the decider's silence did not deny ($got)"; fi
}

run_proxy real
real=$(probes real)
echo "$real"
fails=0
grep -q FAIL <<<"$real" && fails=1
grep -q '"event":"policy-updated"' real.log || { echo "FAIL the decision log has no policy-updated line"; fails=1; }

# EGU-6: with a channel but no decider attached, a host no rule covers is refused as before.
plain_port=$(free_port)
"$proxy" --unsafe-allow-forwarding --listen "127.0.0.1:$plain_port" --resolve deny.test=127.0.0.1 \
  --allow "a.test:$up" --control "@maf-test-$$-plain" >plain.log 2>plain.err & pids+=($!)
for _ in $(seq 50); do grep -q listening plain.log 2>/dev/null && break; sleep 0.1; done
got=$(curl -s --max-time 10 --proxy "http://127.0.0.1:$plain_port" -w ' %{http_code}' "http://deny.test:$up/x")
if [[ "$got" == " 403" ]] && grep -q '"host":"deny.test".*"reason":"not on the allowlist"' plain.log; then
  echo "ok   EGU-6 no decider attached: a host no rule covers is refused, as without a channel"
else echo "FAIL EGU-6 no decider: $got"; fails=1; fi

# The double must fail each probe that guards the channel's promises.
run_proxy broken --unsafe-broken-control
broken=$(probes broken)
echo "--- against --unsafe-broken-control (each must FAIL):"
echo "$broken"
for probe in "EGU-2 the open tunnel" "EGU-2 the narrowed policy" "EGU-4 the decider's reason" "EGU-5"; do
  grep -q "^FAIL $probe" <<<"$broken" || { echo "FAIL the double passed: $probe"; fails=1; }
done
exit $fails
