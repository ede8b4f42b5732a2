#!/usr/bin/env bash
# Fails if any container, network or volume carrying maf-sandbox.scope remains on the engine.
set -euo pipefail
client="${MAF_SANDBOX_DOCKER:-docker}"
"$client" version >/dev/null || { echo "no Docker engine answers" >&2; exit 1; }
containers="$("$client" ps -a --filter label=maf-sandbox.scope --format '{{.Names}}')"
networks="$("$client" network ls --filter label=maf-sandbox.scope --format '{{.Name}}')"
volumes="$("$client" volume ls --filter label=maf-sandbox.scope --format '{{.Name}}')"
if [[ -n "$containers$networks$volumes" ]]; then
  printf 'left behind:\ncontainers: %s\nnetworks: %s\nvolumes: %s\n' "$containers" "$networks" "$volumes" >&2
  exit 1
fi
echo "no labelled container, network or volume remains"
