#!/usr/bin/env bash
# Builds the image (scripts/build-image.sh) and checks it the way deploy/ runs it: read-only root
# filesystem, uid/gid 65532, every capability dropped.
#   1. `switchyard --version` names the version in package.json, and Node reads the compile cache
#      the build made;
#   2. `switchyard bus setup` creates the topology on a local nats-server;
#   3. the router worker becomes ready on /readyz (it needs no Kubernetes), and exits 0 on SIGTERM
#      as the container's PID 1.
# Needs a Docker engine: when none answers, scripts/lib/docker-engine.sh installs and starts one
# (no bridge network, no iptables rules) and stops it again when this script ends. Removes
# everything it started; safe to run again.
source "$(dirname "${BASH_SOURCE[0]}")/lib/bootstrap.sh"
# shellcheck source=lib/docker-engine.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/docker-engine.sh"

image="${1:-switchyard:dev}"
say() { printf '[check-image] %s\n' "$*" >&2; }
fail() {
  say "FAILED: $*"
  exit 1
}
began=$SECONDS

router=""
nats_pid=""
tmp=""
cleanup() {
  [[ -z "$router" ]] || docker rm --force "$router" >/dev/null 2>&1 || true
  if [[ -n "$nats_pid" ]]; then
    kill "$nats_pid" 2>/dev/null || true
    wait "$nats_pid" 2>/dev/null || true
  fi
  [[ -z "$tmp" ]] || rm -rf "$tmp"
  stop_docker_engine_if_started
}
trap cleanup EXIT

free_port() {
  node -e 'const s = require("node:net").createServer();
    s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

# The status code of GET http://127.0.0.1:<port><path>, or nothing if nothing answers.
http_status() {
  timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" &&
    printf "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" "$2" >&3 && head -n 1 <&3' _ "$1" "$2" \
    2>/dev/null | awk '{ print $2 }' || true
}

mkdir -p "$SWITCHYARD_CACHE"
ensure_node
ensure_nats_server
ensure_docker_engine || fail "no Docker engine to build and run the image with"

"$SWITCHYARD_ROOT/scripts/build-image.sh" "$image"

# As deploy/ runs it. --pull never: the image is the one just built, never a registry's.
run=(docker run --pull never --read-only --user 65532:65532 --cap-drop ALL --security-opt no-new-privileges)

[[ "$(docker image inspect --format '{{.Config.User}}' "$image")" == 65532:65532 ]] ||
  fail "$image does not run as 65532:65532"
expected="switchyard $(node -p 'require(process.argv[1]).version' "$SWITCHYARD_ROOT/package.json")"
got="$("${run[@]}" --rm --network none "$image" --version)" || fail "switchyard --version exited $?"
[[ "$got" == "$expected" ]] || fail "switchyard --version printed '$got', not '$expected'"
say "switchyard --version: $got"
# Node's own report of its compile cache: the image's cache, made at build time, is read.
cache_log="$("${run[@]}" --rm --network none --env NODE_DEBUG_NATIVE=COMPILE_CACHE "$image" --version 2>&1)"
if ! grep -q 'V8 code cache for ESM file:///app/src/cli/main.ts was accepted' <<<"$cache_log" ||
  grep -q 'permission denied' <<<"$cache_log"; then
  printf '%s\n' "$cache_log" >&2
  fail "the image's compile cache is not used"
fi
say "the compile cache made at build time is used"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/switchyard-check-image.XXXXXX")"
nats_port="$(free_port)"
health_port="$(free_port)"
nats_url="nats://127.0.0.1:$nats_port"
"$SWITCHYARD_BIN_NATS" -js -a 127.0.0.1 -p "$nats_port" -sd "$tmp/nats" >"$tmp/nats.log" 2>&1 &
nats_pid=$!
deadline=$((SECONDS + 20))
until (exec 3<>"/dev/tcp/127.0.0.1/$nats_port") 2>/dev/null; do
  ((SECONDS < deadline)) || {
    cat "$tmp/nats.log" >&2
    fail "nats-server did not listen on $nats_port within 20 s"
  }
  sleep 0.2
done

"${run[@]}" --rm --network host "$image" bus setup --nats.url="$nats_url" >"$tmp/bus-setup.log" 2>&1 || {
  cat "$tmp/bus-setup.log" >&2
  fail "switchyard bus setup failed"
}
say "switchyard bus setup: the topology is on the local nats-server"

router="switchyard-check-image-router-$$-$RANDOM"
"${run[@]}" --detach --name "$router" --network host \
  --env "SWITCHYARD_HOST_PORT_8081=$health_port" --env "SWITCHYARD_NATS_URL=$nats_url" \
  "$image" router >/dev/null
deadline=$((SECONDS + 60))
until [[ "$(http_status "$health_port" /readyz)" == 200 ]]; do
  if [[ "$(docker inspect --format '{{.State.Running}}' "$router")" != true ]]; then
    docker logs "$router" >&2 || true
    fail "the router exited before it was ready"
  fi
  if ((SECONDS >= deadline)); then
    docker logs "$router" >&2 || true
    fail "the router was not ready on http://127.0.0.1:$health_port/readyz within 60 s"
  fi
  sleep 0.5
done
say "switchyard router: ready on /readyz after $((SECONDS - deadline + 60)) s"

docker stop --time 30 "$router" >/dev/null
code="$(docker inspect --format '{{.State.ExitCode}}' "$router")"
[[ "$code" == 0 ]] || {
  docker logs "$router" >&2 || true
  fail "the router exited $code on SIGTERM, not 0"
}
say "switchyard router: exited 0 on SIGTERM"

size="$(docker image inspect --format '{{.Size}}' "$image" | awk '{ printf "%.0f MB", $1 / 1e6 }')"
say "passed: $image ($size) in $((SECONDS - began)) s"
