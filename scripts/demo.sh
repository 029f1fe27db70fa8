#!/usr/bin/env bash
# Starts the embedded local stack and keeps it running until Ctrl-C. With --crossplane, builds
# Crossplane core on first use (scripts/lib/build-crossplane.sh) and runs the demo on XRD targets.
source "$(dirname "${BASH_SOURCE[0]}")/lib/bootstrap.sh"
bootstrap
for arg in "$@"; do
  [[ "$arg" == --crossplane ]] && ensure_crossplane
done
cd "$SWITCHYARD_ROOT"
exec node src/cli/main.ts demo "$@"
