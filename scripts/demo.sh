#!/usr/bin/env bash
# Starts the embedded local stack and keeps it running until Ctrl-C.
source "$(dirname "${BASH_SOURCE[0]}")/lib/bootstrap.sh"
bootstrap
cd "$SWITCHYARD_ROOT"
exec node src/cli/main.ts demo "$@"
