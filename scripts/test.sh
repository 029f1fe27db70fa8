#!/usr/bin/env bash
# Runs every check: types, lint, the container image (built and run as deploy/
# runs it), unit and property tests, and the integration and end-to-end tests
# against the real local stack (etcd, kube-apiserver, kube-controller-manager,
# the local node agent and NATS JetStream).
source "$(dirname "${BASH_SOURCE[0]}")/lib/bootstrap.sh"
bootstrap
# KEDA only runs in the autoscaling test, Crossplane in the XRD tests, the reference engine's
# harness in the differential tests (test/reference-engine): the plain demo does without them
# (scripts/demo.sh builds Crossplane for --crossplane only).
ensure_keda
ensure_crossplane
ensure_reference
cd "$SWITCHYARD_ROOT"
echo "[test] typecheck"
npx tsc -p tsconfig.json
echo "[test] lint"
npx biome check .
# A Docker engine for the image and the testcontainers run: installed and started if none
# answers, and then stopped again (scripts/lib/docker-engine.sh).
# shellcheck source=lib/docker-engine.sh
source "$SWITCHYARD_ROOT/scripts/lib/docker-engine.sh"
trap stop_docker_engine_if_started EXIT
ensure_docker_engine
echo "[test] image"
./scripts/check-image.sh
echo "[test] bus suite, NATS through testcontainers"
# A 3-node cluster runs as processes only (src/local-cluster/nats-cluster.ts): bus suites that start
# one are named *.cluster.itest.ts and run in the main pass.
SWITCHYARD_NATS_BACKEND=testcontainers npx vitest run --project integration src/bus --exclude '**/*.cluster.itest.ts'
stop_docker_engine_if_started
echo "[test] vitest"
report="$SWITCHYARD_CACHE/vitest-report.json"
rm -f "$report"
status=0
npx vitest run --reporter=default --reporter=json --outputFile.json="$report" "$@" || status=$?
if [[ -f "$report" ]]; then
  node -e 'const r = require(process.argv[1]);
    console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`);' "$report"
fi
exit "$status"
