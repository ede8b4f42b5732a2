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
