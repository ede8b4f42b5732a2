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
