#!/usr/bin/env bash
# The egress proxy terminating TLS for a host with a method/path rule (issue 45), end to end
# on this machine with real TLS (Debian's OpenSSL on every side): a test upstream HTTPS
# server with the test's own CA, the static proxy binary, curl and openssl s_client as the
# guest's clients. Rule ids in each check: C-9 (methods), C-10 (paths).
# Usage: test_proxy_tls.sh PROXY_BINARY UPSTREAM_PY. Exit 77 (skip) without python3/curl.
set -uo pipefail
proxy="$1"; upstream_py="$2"
command -v python3 >/dev/null && command -v curl >/dev/null && command -v openssl >/dev/null || exit 77
work="$(mktemp -d)"; pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT
cd "$work"
failures=0
check() {  # check NAME EXPECTED ACTUAL
  if [[ "$3" == *"$2"* ]]; then echo "ok   $1"; else echo "FAIL $1: expected '$2' in: $3"; failures=$((failures + 1)); fi
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The test's CA (trusted by nothing else) and an upstream certificate for allowed.test; a
# second CA the proxy does not trust, for the 502.
mkca() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" -out "$1.pem" -days 2 \
    -subj "/CN=$1" -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
}
mkleaf() {  # mkleaf CA NAME
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$2.key" -out "$2.csr" -subj "/CN=$2" 2>/dev/null
  printf 'subjectAltName=DNS:allowed.test,DNS:untrusted.test,DNS:whole.test\nextendedKeyUsage=serverAuth\n' >ext
  openssl x509 -req -in "$2.csr" -CA "$1.pem" -CAkey "$1.key" -CAcreateserial -out "$2.pem" -days 2 -extfile ext 2>/dev/null
}
mkca testca && mkleaf testca up && mkca otherca && mkleaf otherca bad || { echo "FAIL making certificates"; exit 1; }
mkdir -p www/repo && echo "hello from repo" >www/repo/x && echo "secret" >www/admin && echo "anything" >www/open

up_port=$(free_port); bad_port=$(free_port); proxy_port=$(free_port)
python3 "$upstream_py" "$up_port" www up.pem up.key >up.log 2>&1 & pids+=($!)
python3 "$upstream_py" "$bad_port" www bad.pem bad.key >bad.log 2>&1 & pids+=($!)
rules='[{"host":"allowed.test:'$up_port'","methods":["GET","POST"],"paths":["/repo/"]},
        {"host":"untrusted.test:'$bad_port'","methods":["GET"]}]'
"$proxy" --unsafe-allow-forwarding --listen "127.0.0.1:$proxy_port" --rules "$rules" --upstream-ca testca.pem \
  --resolve allowed.test=127.0.0.1 --resolve untrusted.test=127.0.0.1 --resolve whole.test=127.0.0.1 \
  --allow "whole.test:$up_port" >proxy.log 2>proxy.err & pids+=($!)
for _ in $(seq 50); do grep -q listening proxy.log 2>/dev/null && grep -q ready up.log && grep -q ready bad.log && break; sleep 0.1; done
python3 -c 'import json,sys
for l in open("proxy.log"):
    j = json.loads(l)
    if j.get("event") == "listening": open("sandboxca.pem", "w").write(j["ca_certificate"])' || { cat proxy.err; exit 1; }

export https_proxy="http://127.0.0.1:$proxy_port" http_proxy="http://127.0.0.1:$proxy_port"
c() { curl -s --max-time 10 --cacert sandboxca.pem -w ' %{http_code}' "$@"; }
a="https://allowed.test:$up_port"
check "C-10 allowed GET under /repo/ reaches the upstream" $'hello from repo\n 200' "$(c "$a/repo/x")"
check "C-10 refused path gets a readable 403" "refused GET /admin on allowed.test: path /admin matches no path of rule allowed.test:$up_port methods [GET,POST] paths [/repo/]
 403" "$(c "$a/admin")"
check "C-9 refused method gets a readable 403" "method DELETE is not allowed by rule" "$(c -X DELETE "$a/repo/x")"
check "C-10 encoded '/' traversal refused" "an encoded '/' (%2F)" "$(c --path-as-is "$a/repo/..%2fadmin")"
check "C-10 encoded '.' traversal refused" "an encoded '.' (%2E)" "$(c --path-as-is "$a/repo/%2e%2e/admin")"
check "C-10 '//' refused" "an empty path segment" "$(c --path-as-is "$a//repo/x")"
check "C-10 case matters" "path /Repo/x matches no path" "$(c "$a/Repo/x")"
check "C-10 overlong UTF-8 refused" "not valid UTF-8" "$(c --path-as-is "$a/repo/%C0%AE%C0%AE/admin")"
check "C-10 dot segments removed before matching" "path /admin matches no path" "$(c --path-as-is "$a/repo/../admin")"
check "C-10 second request on a kept-alive connection is checked" $'hello from repo\n 200maf-sandbox egress proxy: refused GET /admin' \
  "$(c "$a/repo/x" "$a/admin")"
check "C-9 POST body forwarded (Content-Length)" $'posted 6 to /repo/p\n 200' "$(c -d abcdef "$a/repo/p")"
check "C-9 POST body forwarded (chunked)" $'posted 8 to /repo/c\n 200' "$(c -H 'Transfer-Encoding: chunked' -d abcdefgh "$a/repo/c")"
check "C-10 Host header naming another host refused" "Host header names whole.test" "$(c -H "Host: whole.test:$up_port" "$a/repo/x")"
check "C-10 WebSocket upgrade refused" "protocol upgrades" "$(c -H 'Upgrade: websocket' -H 'Connection: Upgrade' "$a/repo/x")"
check "C-10 an upstream the trust store does not vouch for is a 502 naming why" "did not verify" \
  "$(c "https://untrusted.test:$bad_port/")"
check "C-10 a host allowed whole stays an opaque tunnel (the upstream's own certificate)" $'anything\n 200' \
  "$(curl -s --max-time 10 --cacert testca.pem -w ' %{http_code}' "https://whole.test:$up_port/open")"
check "C-10 a client pinning another CA fails closed" "000" "$(curl -s --max-time 10 --cacert testca.pem -w '%{http_code}' "$a/repo/x")"
check "C-10 plain http:// is checked against the same rule" "403" \
  "$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' -X DELETE "http://allowed.test:$up_port/repo/x")"
sni=$( (printf 'GET /repo/x HTTP/1.1\r\nHost: allowed.test\r\n\r\n'; sleep 1) |
      openssl s_client -quiet -proxy "127.0.0.1:$proxy_port" -connect "allowed.test:$up_port" -servername whole.test 2>&1)
check "C-10 a TLS server name other than the CONNECT target is refused" "is not the CONNECT target allowed.test" "$sni"
alpn=$(openssl s_client -proxy "127.0.0.1:$proxy_port" -connect "allowed.test:$up_port" -alpn h2,http/1.1 </dev/null 2>&1)
check "C-10 ALPN selects http/1.1 even when h2 is offered" "ALPN protocol: http/1.1" "$alpn"

# The upstream saw only what was allowed; the log says method, path and rule, never a body;
# no private key anywhere in what the proxy printed.
if grep -q 'UPSTREAM .*/admin' up.log || ! grep -q 'UPSTREAM GET /repo/x' up.log; then
  echo "FAIL C-10 the upstream saw a refused request (or no allowed one)"; failures=$((failures + 1))
else
  echo "ok   C-10 the upstream saw the allowed requests and no refused one"
fi
check "decision log carries method, canonical path and rule" '"method":"DELETE","host":"allowed.test"' "$(cat proxy.log)"
check "decision log carries the path" '"path":"/repo/p"' "$(cat proxy.log)"
if grep -q 'abcdef' proxy.log proxy.err; then echo "FAIL a request body reached the log"; failures=$((failures + 1)); fi
if grep -qi 'PRIVATE KEY' proxy.log proxy.err; then echo "FAIL a private key reached the proxy's output"; failures=$((failures + 1)); fi
check "the sandbox CA is constrained to the rules' hosts" "DNS:allowed.test" "$(openssl x509 -in sandboxca.pem -noout -text)"
[[ $failures -eq 0 ]] || { echo "--- proxy log"; cat proxy.log proxy.err; }
exit $((failures > 0))
