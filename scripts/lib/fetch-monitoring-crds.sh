# Fetches the ServiceMonitor, PodMonitor and PrometheusRule CRDs of the prometheus-operator release pinned in
# tools/monitoring-crds (checked against its go.sum) into "$SWITCHYARD_CACHE/monitoring-crds/<version>".
# The tests install them into the local apiserver and validate deploy/monitoring against them
# (server-side dry run), so a field the operator does not know fails CI, not a user's apply.
# Prints the directory on stdout; progress goes to stderr.

fetch_monitoring_crds() {
  local version out
  version="$(sed -n 's|^require github.com/prometheus-operator/prometheus-operator \(v[^ ]*\)$|\1|p' "$SWITCHYARD_ROOT/tools/monitoring-crds/go.mod")"
  out="$SWITCHYARD_CACHE/monitoring-crds/$version"
  if [[ -f "$out/monitoring.coreos.com_prometheusrules.yaml" && -f "$out/monitoring.coreos.com_podmonitors.yaml" ]]; then
    echo "$out"
    return 0
  fi
  command -v go >/dev/null || { echo "[bootstrap] Go is needed to fetch the monitoring CRDs" >&2; return 1; }
  echo "[bootstrap] fetching the prometheus-operator $version CRDs from Go modules (first time only)" >&2
  local dir
  dir="$(
    cd "$SWITCHYARD_ROOT/tools/monitoring-crds"
    export GOMODCACHE="$SWITCHYARD_CACHE/go/mod" GOFLAGS=-mod=readonly
    go mod download -json github.com/prometheus-operator/prometheus-operator | sed -n 's|^\t"Dir": "\(.*\)",$|\1|p'
  )"
  [[ -d "$dir" ]] || { echo "[bootstrap] the prometheus-operator module was not downloaded" >&2; return 1; }
  mkdir -p "$out.partial"
  cp "$dir/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml" \
    "$dir/example/prometheus-operator-crd/monitoring.coreos.com_podmonitors.yaml" \
    "$dir/example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml" "$out.partial/"
  rm -rf "$out"
  mv "$out.partial" "$out"
  echo "$out"
}
