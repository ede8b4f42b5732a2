#!/usr/bin/env bash
# Runs the 06_acas sample against a fresh maf-sandbox-acas-emulator (the ctest wrapper):
# starts the emulator on a free port, points the sample's ACAS_* variables at it, runs the
# sample, then asks the emulator's control plane that no sandbox is left live and stops it
# (SIGTERM: it deletes its containers). Needs a Docker engine and the busybox test image.
# Usage: run-with-emulator.sh EMULATOR SAMPLE
set -euo pipefail
emulator="$1" sample="$2"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/maf-sample-06.XXXXXX")"
emulator_pid=""
cleanup() {
  if [[ -n "$emulator_pid" ]]; then
    kill "$emulator_pid" 2>/dev/null || true
    wait "$emulator_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

"$emulator" --port 0 --token sample-token >"$tmp/url" 2>"$tmp/emulator.log" &
emulator_pid=$!
for _ in $(seq 100); do [[ -s "$tmp/url" ]] && break; sleep 0.1; done
url="$(head -n1 "$tmp/url")"
[[ "$url" == http://127.0.0.1:* ]] || { echo "the emulator did not start: $(cat "$tmp/emulator.log")" >&2; exit 1; }

# The emulator's default catalogue offers the prebuilt image `busybox` (the local test image).
ACAS_ENDPOINT="$url" ACAS_SUBSCRIPTION_ID=sub ACAS_RESOURCE_GROUP=rg ACAS_SANDBOX_GROUP=group \
ACAS_IMAGE=busybox ACAS_REGISTRY="" ACAS_ACCESS_TOKEN=sample-token "$sample"

# The control plane is open on loopback; no proxy may stand between (ProxyHandler({})).
live="$(python3 -c 'import json, sys, urllib.request
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
print(len(json.load(opener.open(sys.argv[1] + "/_emulator/sandboxes"))["live"]))' "$url")"
[[ "$live" == 0 ]] || { echo "the emulator still holds $live live sandbox(es)" >&2; exit 1; }
