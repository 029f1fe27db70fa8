# Builds promtool from the wrapper module in tools/prometheus (which pins the Prometheus
# version with a `tool` directive) into "$SWITCHYARD_CACHE/promtool/<key>", where the key is a
# digest of the module's files: a change of pinned version builds a new binary, an unchanged
# module reuses the old one. Prints the binary's path on stdout; progress goes to stderr.
# The alert rules' unit tests run it (`promtool test rules`).

promtool_key() {
  (cd "$SWITCHYARD_ROOT/tools/prometheus" && cat go.mod go.sum) | sha256sum | cut -c1-16
}

build_promtool() {
  local key out
  key="$(promtool_key)"
  out="$SWITCHYARD_CACHE/promtool/$key"
  if [[ -x "$out/promtool" ]]; then
    echo "$out/promtool"
    return 0
  fi
  command -v go >/dev/null || { echo "[bootstrap] Go is needed to build promtool" >&2; return 1; }
  local version
  version="$(sed -n 's|^\tgithub.com/prometheus/prometheus \(v[^ ]*\).*|\1|p' "$SWITCHYARD_ROOT/tools/prometheus/go.mod")"
  echo "[bootstrap] building promtool (prometheus $version) from Go modules (first time only, about 3 min on 2 cores)" >&2
  local started=$SECONDS
  (
    cd "$SWITCHYARD_ROOT/tools/prometheus"
    export GOMODCACHE="$SWITCHYARD_CACHE/go/mod" GOCACHE="$SWITCHYARD_CACHE/go/build" GOFLAGS=-mod=readonly
    mkdir -p "$out.partial"
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out.partial/promtool" github.com/prometheus/prometheus/cmd/promtool
  ) >&2
  rm -rf "$out"
  mv "$out.partial" "$out"
  echo "[bootstrap] built promtool in $((SECONDS - started)) s into $out" >&2
  echo "$out/promtool"
}
