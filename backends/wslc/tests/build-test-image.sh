#!/usr/bin/env bash
# maf-sandbox-test/wslc-busybox:1 — the wslc engine tests' image (wslc.md S-10): the shared
# busybox test image plus a real /usr/bin/test, which the engine stat (W-22) runs and stock
# busybox images lack. Built FROM the local busybox image (scripts/docker-test-images), so
# no registry is needed. Idempotent.
set -euo pipefail
client="${MAF_SANDBOX_DOCKER:-docker}"
image=maf-sandbox-test/wslc-busybox:1
"$client" image inspect "$image" >/dev/null 2>&1 && exit 0
"$client" image inspect maf-sandbox-test/busybox:1 >/dev/null 2>&1 \
  || { echo "maf-sandbox-test/busybox:1 is missing; run scripts/docker-test-images" >&2; exit 1; }
printf 'FROM maf-sandbox-test/busybox:1\nRUN ln -s /bin/busybox /usr/bin/test\n' \
  | "$client" build -q -t "$image" - >/dev/null
echo "built $image"
