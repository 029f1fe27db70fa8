# Builds KEDA's operator and metrics adapter from the release pinned in tools/keda (checked against
# its go.sum) into "$SWITCHYARD_CACHE/keda/<version>", beside the CRDs and RBAC of the same release
# (config/). The autoscaling test runs them against the local stack. KEDA is built inside a copy of
# its own module: its go.mod replaces k8s.io and Prometheus modules, which only the main module's
# replace directives do. Prints the directory on stdout; progress goes to stderr.

build_keda() {
  local version out
  version="$(sed -n 's|^require github.com/kedacore/keda/v2 \(v[^ ]*\)$|\1|p' "$SWITCHYARD_ROOT/tools/keda/go.mod")"
  out="$SWITCHYARD_CACHE/keda/$version"
  if [[ -x "$out/keda-operator" && -x "$out/keda-adapter" && -d "$out/config" ]]; then
    echo "$out"
    return 0
  fi
  command -v go >/dev/null || { echo "[bootstrap] Go is needed to build KEDA" >&2; return 1; }
  echo "[bootstrap] building KEDA $version (operator and metrics adapter) from Go modules (first time only, about 7 min on 2 cores)" >&2
  local started=$SECONDS module
  module="$(
    cd "$SWITCHYARD_ROOT/tools/keda"
    export GOMODCACHE="$SWITCHYARD_CACHE/go/mod" GOFLAGS=-mod=readonly
    go mod download -json github.com/kedacore/keda/v2 | sed -n 's|^\t"Dir": "\(.*\)",$|\1|p'
  )"
  [[ -d "$module" ]] || { echo "[bootstrap] the KEDA module was not downloaded" >&2; return 1; }
  rm -rf "$out.partial" "$out.src"
  mkdir -p "$out.partial"
  cp -r "$module" "$out.src"
  chmod -R u+w "$out.src"
  (
    cd "$out.src"
    export GOMODCACHE="$SWITCHYARD_CACHE/go/mod" GOCACHE="$SWITCHYARD_CACHE/go/build" GOFLAGS=-mod=readonly
    for cmd in operator adapter; do
      CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/kedacore/keda/v2/version.Version=$version" \
        -o "$out.partial/keda-$cmd" "./cmd/$cmd"
    done
  ) >&2 || { rm -rf "$out.src"; return 1; }
  cp -r "$out.src/config" "$out.partial/config"
  rm -rf "$out.src" "$out"
  mv "$out.partial" "$out"
  echo "[bootstrap] built KEDA $version in $((SECONDS - started)) s into $out" >&2
  echo "$out"
}
