#!/usr/bin/env bash
# Runs every check: types, lint, unit and property tests, and the integration and
# end-to-end tests against the real local stack (etcd, kube-apiserver,
# kube-controller-manager, the local node agent and NATS JetStream).
source "$(dirname "${BASH_SOURCE[0]}")/lib/bootstrap.sh"
bootstrap
cd "$SWITCHYARD_ROOT"
echo "[test] typecheck"
npx tsc -p tsconfig.json
echo "[test] lint"
npx biome check .
echo "[test] vitest"
exec npx vitest run "$@"
