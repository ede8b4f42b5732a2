# Shared helpers for scripts/*. Sourced, not run.
set -euo pipefail
MAF_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export MAF_ROOT
log() { printf '\n== %s\n' "$*" >&2; }
die() { printf '\nFAILED: %s\n' "$*" >&2; exit 1; }
jobs_flag() { echo "-j$(nproc)"; }
