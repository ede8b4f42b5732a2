#!/usr/bin/env bash
# Brokered credentials in the egress proxy (issue 46; docs/backends/egress-proxy.md
# "Brokered credentials", CRED-6…CRED-8), end to end on this machine with real TLS: a test
# upstream with its own CA that logs every header it receives, the static proxy binary given
# a credential's value through a file it reads and unlinks, curl as the guest's client. Run
# again against the proxy's --unsafe-pass-through double, each probe must fail there.
# Usage: test_proxy_credentials.sh PROXY_BINARY UPSTREAM_PY. Exit 77 (skip) without tools.
set -uo pipefail
proxy="$(realpath "$1")"; upstream_py="$(realpath "$2")"
command -v python3 >/dev/null && command -v curl >/dev/null && command -v openssl >/dev/null || exit 77
work="$(mktemp -d)"; pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT
cd "$work"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
mkca() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" -out "$1.pem" -days 2 \
    -subj "/CN=$1" -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
}
mkca testca
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout up.key -out up.csr -subj /CN=up 2>/dev/null
printf 'subjectAltName=DNS:bound.test,DNS:other.test\nextendedKeyUsage=serverAuth\n' >ext
openssl x509 -req -in up.csr -CA testca.pem -CAkey testca.key -CAcreateserial -out up.pem -days 2 -extfile ext 2>/dev/null \
  || { echo "FAIL making certificates"; exit 1; }
mkdir -p www && echo "hello" >www/x

secret="s3cr3t-$(openssl rand -hex 12)"
placeholder="maf-cred-github-$(openssl rand -hex 16)"
up_port=$(free_port)
python3 "$upstream_py" "$up_port" www up.pem up.key >up.log 2>&1 & pids+=($!)

# run_proxy NAME [EXTRA ARGS]: a proxy whose credential "github" is bound to bound.test only;
# its port in $port (not a subshell: the cleanup must know its pid).
run_proxy() {
  local name="$1"; shift
  port=$(free_port)
  local creds='[{"name":"github","hosts":["bound.test:'$up_port'"],"header":"Authorization","format":"Bearer {value}","placeholder":"'$placeholder'"}]'
  # The values file appears after the start, as the Docker backend writes it (CRED-7).
  "$proxy" --unsafe-allow-forwarding "$@" --listen "127.0.0.1:$port" --upstream-ca testca.pem \
    --resolve bound.test=127.0.0.1 --resolve other.test=127.0.0.1 \
    --allow "bound.test:$up_port,other.test:$up_port" --credentials "$creds" --credential-values "$name.values" \
    >"$name.log" 2>"$name.err" & pids+=($!)
  sleep 0.3
  printf '{"github":"%s"}' "$secret" >"$name.values"
  for _ in $(seq 50); do grep -q listening "$name.log" 2>/dev/null && grep -q ready up.log && break; sleep 0.1; done
  python3 -c 'import json,sys
for l in open(sys.argv[1]):
    j = json.loads(l)
    if j.get("event") == "listening": open(sys.argv[2], "w").write(j["ca_certificate"])' "$name.log" "$name.ca" \
    || { cat "$name.err"; exit 1; }
}

# probes PROXY_PORT NAME: prints one line per probe, "ok" or "FAIL".
probes() {
  local port="$1" name="$2"
  local before; before=$(wc -l <up.log)
  c() { curl -s --max-time 10 --proxy "http://127.0.0.1:$port" --cacert "$name.ca" -w ' %{http_code}' "$@"; }
  local got
  got=$(c -H "Authorization: Bearer $placeholder" "https://bound.test:$up_port/x")
  if [[ "$got" == *" 200" ]] && tail -n +$((before + 1)) up.log | grep -q "Bearer $secret"; then
    echo "ok   CRED-8 the bound upstream sees the real value"
  else echo "FAIL CRED-8 the bound upstream did not see the value ($got)"; fi
  before=$(wc -l <up.log)
  got=$(c -H "Authorization: Bearer $placeholder" "https://other.test:$up_port/x")
  if [[ "$got" == *"credential 'github'"*" 403" ]] && ! tail -n +$((before + 1)) up.log | grep -q "$secret"; then
    echo "ok   CRED-8 the placeholder toward another allowed host is refused; that upstream sees no secret"
  else echo "FAIL CRED-8 the placeholder toward another host was not refused ($got)"; fi
  before=$(wc -l <up.log)
  got=$(curl -s --max-time 10 --proxy "http://127.0.0.1:$port" -w ' %{http_code}' \
        -H "Authorization: Bearer $placeholder" "http://bound.test:$up_port/x")
  if [[ "$got" == *"plain http"*" 403" ]] && ! tail -n +$((before + 1)) up.log | grep -q "$secret"; then
    echo "ok   CRED-8 plain http:// is not brokered without allow_http"
  else echo "FAIL CRED-8 plain http:// was brokered ($got)"; fi
  if ! grep -q "$secret" "$name.log" "$name.err" && grep -q '"credentials":"github"' "$name.log" \
     && grep -q '"credential":"github"' "$name.log"; then
    echo "ok   CRED-9 the proxy's log names the credential, never the value"
  else echo "FAIL CRED-9 the proxy's log holds the value (or does not name the credential)"; fi
  if [[ ! -e "$name.values" ]]; then echo "ok   CRED-7 the values file is gone once read"
  else echo "FAIL CRED-7 the values file is still there"; fi
}

failures=0
run_proxy real
out=$(probes "$port" real); echo "$out"
failures=$(grep -c '^FAIL' <<<"$out")

# The same probes against the pass-through double: the refusals must not hold there.
run_proxy double --unsafe-pass-through
double=$(probes "$port" double)
for probe in "placeholder toward another host" "plain http://"; do
  if grep -qF "FAIL CRED-8 the $probe" <<<"$double" || grep -qF "FAIL CRED-8 $probe" <<<"$double"; then
    echo "ok   the probe '$probe' fails against the pass-through double"
  else
    echo "FAIL the probe '$probe' passed against the pass-through double"; failures=$((failures + 1))
  fi
done
[[ $failures -eq 0 ]] || { echo "--- proxy log"; cat real.log real.err; echo "--- double"; echo "$double"; }
exit $((failures > 0))
