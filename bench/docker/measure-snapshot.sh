#!/usr/bin/env bash
# Docker SNAPSHOT by commit-and-recreate, measured against a cold create+start (issue 26 item
# 4; the figures and the decision: docs/backends/docker.md "Cleanup"). Bare CLI, no backend.
# Usage: RUNS=5 bench/docker/measure-snapshot.sh   (needs the engine and scripts/docker-test-images)
set -euo pipefail
img=maf-sandbox-test/busybox:1
label="maf-sandbox-measure=cleanup-$$"
ms() { date +%s%N; }
# Whatever an interrupted run created goes with it (only this run's label).
trap 'docker ps -aq --filter "label=$label" | xargs -r docker rm -f >/dev/null' EXIT
runs=${RUNS:-5}
for i in $(seq 1 "$runs"); do
  t0=$(ms); c=$(docker run -d --label "$label" --network none "$img" sleep 3600); t1=$(ms)
  docker exec "$c" sh -c 'mkdir -p /maf-sandbox/work && for i in $(seq 1 50); do echo x > /maf-sandbox/work/f$i; done' >/dev/null
  t2=$(ms); snap=$(docker commit "$c" "maf-sandbox-measure/snap-$$-$i:1"); t3=$(ms)
  docker exec "$c" sh -c 'echo dirty > /maf-sandbox/work/new; rm /maf-sandbox/work/f1' >/dev/null
  t4=$(ms); docker rm -f "$c" >/dev/null; c2=$(docker run -d --label "$label" --network none "maf-sandbox-measure/snap-$$-$i:1" sleep 3600); t5=$(ms)
  ok=$(docker exec "$c2" sh -c 'test ! -e /maf-sandbox/work/new && test -e /maf-sandbox/work/f1 && echo restored')
  docker rm -f "$c2" >/dev/null; docker rmi "maf-sandbox-measure/snap-$$-$i:1" >/dev/null
  echo "run $i: cold_create_start_ms=$(( (t1-t0)/1000000 )) commit_ms=$(( (t3-t2)/1000000 )) reset_rm_recreate_ms=$(( (t5-t4)/1000000 )) $ok"
done
