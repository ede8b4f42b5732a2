# Shared helpers for scripts/*. Sourced, not run.
set -euo pipefail
MAF_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export MAF_ROOT
# ccache (the CMake project uses it as compiler launcher when present): one cache per machine,
# shared by every clone of the project — CI builds a fresh clone each time, and a clone-local
# cache would always be cold. BASEDIR turns paths under the clone into relative ones and
# NOHASHDIR leaves the build directory out of the hash, so a clone at another path hits what
# an earlier clone compiled. A cache is only ever a cache: a cold one gives the same build.
export CCACHE_DIR="${CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/maf-sandbox/ccache}"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$MAF_ROOT}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
log() { printf '\n== %s\n' "$*" >&2; }
die() { printf '\nFAILED: %s\n' "$*" >&2; exit 1; }
jobs_flag() { echo "-j$(nproc)"; }
# A plain-HTTP server for DIR on the host's loopback, on a port the kernel picks (issue 47:
# the process backend's EGRESS upstreams). Sets LOOPBACK_HTTP_PID and LOOPBACK_HTTP_PORT; the
# caller kills the pid.
loopback_http_server() {
  local dir="$1" portfile
  portfile="$(mktemp)"
  python3 -c 'import functools, http.server, sys
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h)
print(s.server_address[1], flush=True)
s.serve_forever()' "$dir" >"$portfile" 2>/dev/null &
  LOOPBACK_HTTP_PID=$!
  local i
  for i in $(seq 100); do [[ -s "$portfile" ]] && break; sleep 0.1; done
  LOOPBACK_HTTP_PORT="$(head -1 "$portfile")"
  rm -f "$portfile"
  [[ -n "$LOOPBACK_HTTP_PORT" ]] || die "the loopback HTTP server for $dir did not start"
}
# EGRESS_L7's upstreams on the host's loopback (issue 45, 47): the tree the Docker and wslc
# engine tests use too (backends/egress-proxy/tests/l7_upstream_tree.sh: testca.pem, the CA of
# the test's own that only the proxy is told to trust; bad.pem from one nobody trusts), an HTTPS
# server for each (backends/egress-proxy/tests/tls_upstream.py), and DIR/l7.json, the runner's
# --egress-l7 file (a GET-only /repo/ rule on allowed.test, other.test allowed whole,
# untrusted.test GET-only). Sets L7_UPSTREAM_PIDS (the caller kills them), L7_OTHER_ENTRY and
# L7_PROCESS_CONFIG (the process backend's configuration keys: pins and the upstream CA).
egress_l7_upstreams() {
  local dir="$1" tls_port bad_port base i
  mkdir -p "$dir"
  bash "$MAF_ROOT/backends/egress-proxy/tests/l7_upstream_tree.sh" "$dir" >/dev/null 2>&1 \
    || die "could not make the EGRESS_L7 test certificates and tree in $dir"
  chmod -R a+rX "$dir"
  tls_port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  bad_port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  python3 "$MAF_ROOT/backends/egress-proxy/tests/tls_upstream.py" "$tls_port" "$dir/www" "$dir/up.pem" "$dir/up.key" \
    >"$dir/up.out" 2>"$dir/up.err" &
  L7_UPSTREAM_PIDS="$!"
  python3 "$MAF_ROOT/backends/egress-proxy/tests/tls_upstream.py" "$bad_port" "$dir/www" "$dir/bad.pem" "$dir/bad.key" \
    >"$dir/bad.out" 2>/dev/null &
  L7_UPSTREAM_PIDS="$L7_UPSTREAM_PIDS $!"
  for i in $(seq 100); do grep -q ready "$dir/up.out" && grep -q ready "$dir/bad.out" && break; sleep 0.1; done
  grep -q ready "$dir/up.out" && grep -q ready "$dir/bad.out" || die "the EGRESS_L7 upstreams did not start"
  base="https://allowed.test:$tls_port"
  cat >"$dir/l7.json" <<JSON
{"allow": [{"host": "allowed.test:$tls_port", "methods": ["GET"], "paths": ["/repo/"]}, "other.test:$tls_port",
           {"host": "untrusted.test:$bad_port", "methods": ["GET"]}],
 "allowed_url": "$base/repo/x", "refused_path_url": "$base/admin", "refused_method": "DELETE",
 "traversal_base": "$base/repo/", "mixed_case_url": "$base/REPO/x", "other_host": "other.test",
 "untrusted_url": "https://untrusted.test:$bad_port/repo/x"}
JSON
  L7_OTHER_ENTRY="other.test:$tls_port"
  L7_TLS_PORT="$tls_port"  # the upstream of allowed.test and other.test; it logs request headers to up.err
  # ATTACHED_IDENTITY's targets (issue 46, 47; the runner's --attached-identity FILE): a
  # credential bound to allowed.test on this upstream, other.test allowed and unbound; the
  # caller appends the host paths searched for the value (attached_identity_targets).
  cat >"$dir/ai.json" <<JSON
{"allow": ["allowed.test:$tls_port", "other.test:$tls_port"],
 "credential": {"name": "stage", "hosts": ["allowed.test:$tls_port"], "env": "STAGE_TOKEN"},
 "bound_url": "https://allowed.test:$tls_port/repo/x", "other_url": "https://other.test:$tls_port/repo/x",
 "upstream_logs": ["$dir/up.err"], "search": []}
JSON
  L7_PROCESS_CONFIG="\"egress_upstream_ca_file\": \"$dir/testca.pem\", \"egress_proxy_args\": [\"--resolve\", \"allowed.test=127.0.0.1\", \"--resolve\", \"other.test=127.0.0.1\", \"--resolve\", \"untrusted.test=127.0.0.1\"]"
}

# attached_identity_targets SRC SEARCH OUT: egress_l7_upstreams' ai.json with SEARCH (the
# backend's root) as the host path the runner searches for the value.
attached_identity_targets() {
  python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); j["search"] = [sys.argv[2]]; print(json.dumps(j))' \
    "$1" "$2" >"$3" || die "could not write the ATTACHED_IDENTITY targets $3"
  chmod a+r "$3"
}
