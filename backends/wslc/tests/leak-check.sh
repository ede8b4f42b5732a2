#!/usr/bin/env bash
# Fails if any container or network of the wslc backend (name prefix maf-sandbox-wslc-,
# carrying maf-sandbox.scope) remains on the engine. The Docker backend's resources are not
# ours to judge: they are named maf-sandbox-docker-.
set -euo pipefail
client="${MAF_SANDBOX_DOCKER:-docker}"
"$client" version >/dev/null || { echo "no Docker engine answers" >&2; exit 1; }
containers="$("$client" ps -a --filter label=maf-sandbox.scope --filter name=maf-sandbox-wslc- --format '{{.Names}}')"
networks="$("$client" network ls --filter label=maf-sandbox.scope --filter name=maf-sandbox-wslc- --format '{{.Name}}')"
if [[ -n "$containers$networks" ]]; then
  printf 'wslc resources left behind:\ncontainers: %s\nnetworks: %s\n' "$containers" "$networks" >&2
  exit 1
fi
echo "no wslc container or network remains"
