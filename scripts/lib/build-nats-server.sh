# Builds nats-server from the wrapper module in tools/nats-server (which pins the
# version with a `tool` directive) into "$SWITCHYARD_CACHE/nats-server/<key>", where
# the key is a digest of the module's files: a change of pinned version builds a new
# binary, an unchanged module reuses the old one. Prints the binary's path on stdout;
# progress goes to stderr. The server stamps its own version (server.VERSION).

nats_server_key() {
  (cd "$SWITCHYARD_ROOT/tools/nats-server" && cat go.mod go.sum) | sha256sum | cut -c1-16
}

build_nats_server() {
  local key out
  key="$(nats_server_key)"
  out="$SWITCHYARD_CACHE/nats-server/$key"
  if [[ -x "$out/nats-server" ]]; then
    echo "$out/nats-server"
    return 0
  fi
  command -v go >/dev/null || { echo "[bootstrap] Go is needed to build nats-server" >&2; return 1; }
  local version
  version="$(sed -n 's|^\tgithub.com/nats-io/nats-server/v2 \(v[^ ]*\).*|\1|p' "$SWITCHYARD_ROOT/tools/nats-server/go.mod")"
  echo "[bootstrap] building nats-server $version from Go modules (first time only, about 1 min on 2 cores)" >&2
  local started=$SECONDS
  (
    cd "$SWITCHYARD_ROOT/tools/nats-server"
    export GOMODCACHE="$SWITCHYARD_CACHE/go/mod" GOCACHE="$SWITCHYARD_CACHE/go/build" GOFLAGS=-mod=readonly
    mkdir -p "$out.partial"
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out.partial/nats-server" github.com/nats-io/nats-server/v2
  ) >&2
  rm -rf "$out"
  mv "$out.partial" "$out"
  echo "[bootstrap] built $("$out/nats-server" --version) in $((SECONDS - started)) s into $out" >&2
  echo "$out/nats-server"
}
