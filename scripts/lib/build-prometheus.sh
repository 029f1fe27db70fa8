# Builds prometheus and promtool from the wrapper module in tools/prometheus (which pins the
# Prometheus version with `tool` directives) into "$SWITCHYARD_CACHE/prometheus/<key>", where
# the key is a digest of the module's files: a change of pinned version builds new binaries, an
# unchanged module reuses the old ones. Prints the directory on stdout; progress goes to stderr.
# The alert rules' unit tests run promtool (`promtool test rules`); the move e2e runs the server.

prometheus_key() {
  (cd "$SWITCHYARD_ROOT/tools/prometheus" && cat go.mod go.sum) | sha256sum | cut -c1-16
}

build_prometheus() {
  local key out
  key="$(prometheus_key)"
  out="$SWITCHYARD_CACHE/prometheus/$key"
  if [[ -x "$out/promtool" && -x "$out/prometheus" ]]; then
    echo "$out"
    return 0
  fi
  command -v go >/dev/null || { echo "[bootstrap] Go is needed to build Prometheus" >&2; return 1; }
  local version
  version="$(sed -n 's|^\tgithub.com/prometheus/prometheus \(v[^ ]*\).*|\1|p' "$SWITCHYARD_ROOT/tools/prometheus/go.mod")"
  echo "[bootstrap] building prometheus and promtool ($version) from Go modules (first time only, about 4 min on 2 cores)" >&2
  local started=$SECONDS
  (
    cd "$SWITCHYARD_ROOT/tools/prometheus"
    export GOMODCACHE="$SWITCHYARD_CACHE/go/mod" GOCACHE="$SWITCHYARD_CACHE/go/build" GOFLAGS=-mod=readonly
    mkdir -p "$out.partial"
    for cmd in promtool prometheus; do
      CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out.partial/$cmd" "github.com/prometheus/prometheus/cmd/$cmd"
    done
  ) >&2
  rm -rf "$out"
  mv "$out.partial" "$out"
  echo "[bootstrap] built prometheus and promtool in $((SECONDS - started)) s into $out" >&2
  echo "$out"
}
