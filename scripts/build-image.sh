#!/usr/bin/env bash
# Builds the container image every workload in deploy/ runs (switchyard:dev, or the tag given as
# the first argument) from local artifacts only; see the Dockerfile. The build context is a
# temporary directory holding one folder per image layer, the slowest-changing first:
#   base/          Node from the project's cache (stripped of debug symbols) at /usr/local/bin/node,
#                  the shared libraries it links against and the dynamic loader (found with ldd),
#                  /etc/passwd and group naming 65532, nsswitch.conf, an empty /tmp
#   node_modules/  the production node_modules (npm ci --omit=dev), without type declarations,
#                  source maps and docs
#   app/           package.json, src/ without its tests
#   compile-cache/ empty: the build fills it
# The stripped Node and the production node_modules are cached beside the Node they come from,
# keyed by version and lockfile, so a rebuild after a change of src/ only copies files.
source "$(dirname "${BASH_SOURCE[0]}")/lib/bootstrap.sh"

image="${1:-switchyard:dev}"
say() { printf '[build-image] %s\n' "$*" >&2; }

command -v docker >/dev/null || {
  say "no docker command: install Docker (scripts/check-image.sh installs Debian's docker.io as root)"
  exit 1
}
docker info >/dev/null 2>&1 || {
  say "no Docker engine answers (docker info failed, DOCKER_HOST=${DOCKER_HOST:-unset}):" \
    "start one (scripts/check-image.sh starts dockerd as root)"
  exit 1
}

mkdir -p "$SWITCHYARD_CACHE/image"
ensure_node
ensure_debian_package strip binutils
command -v npm >/dev/null || { say "npm is needed for the production node_modules"; exit 1; }
node_bin="$SWITCHYARD_CACHE/node-v$NODE_VERSION/bin/node"

ctx="$(mktemp -d "${TMPDIR:-/tmp}/switchyard-image.XXXXXX")"
trap 'rm -rf "$ctx"' EXIT
base="$ctx/base"
mkdir -p "$base/usr/local/bin" "$base/etc" "$ctx/app" "$ctx/compile-cache"

# Node, without its debug symbols (127 MB → 109 MB; nothing at run time reads them).
stripped="$SWITCHYARD_CACHE/image/node-v$NODE_VERSION-stripped"
if [[ ! -x "$stripped" ]]; then
  strip --strip-all -o "$stripped.partial" "$node_bin"
  mv "$stripped.partial" "$stripped"
fi
install -m 0755 "$stripped" "$base/usr/local/bin/node"

# Its shared libraries and the dynamic loader, at the paths ldd resolves them to (no ld.so.cache:
# these are the loader's default directories).
while read -r lib; do
  install -D -m 0755 "$(readlink -f "$lib")" "$base$lib"
done < <(ldd "$node_bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
[[ -n "$(find "$base" -name 'ld-linux*' -print -quit)" ]] || {
  say "ldd named no dynamic loader for $node_bin"
  exit 1
}

# The image's user (uid/gid 65532, runAsUser in deploy/), and name lookups: /etc/hosts, then DNS
# (Kubernetes and Docker mount both files). Node carries its own CA certificates.
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n' \
  >"$base/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$base/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$base/etc/nsswitch.conf"

# The production node_modules, once per lockfile.
lock_key="$(cat "$SWITCHYARD_ROOT/package.json" "$SWITCHYARD_ROOT/package-lock.json" | sha256sum | cut -c1-16)"
modules="$SWITCHYARD_CACHE/image/node_modules-$lock_key"
if [[ ! -d "$modules" ]]; then
  say "installing the production node_modules"
  work="$(mktemp -d "${TMPDIR:-/tmp}/switchyard-prod-modules.XXXXXX")"
  cp "$SWITCHYARD_ROOT/package.json" "$SWITCHYARD_ROOT/package-lock.json" "$SWITCHYARD_ROOT/.npmrc" "$work/"
  (cd "$work" && npm ci --omit=dev --ignore-scripts --prefer-offline --no-audit --no-fund --loglevel=error)
  find "$work/node_modules" -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' \
    -o -name '*.map' -o \( -iname '*.md' ! -iname 'license*' \) \) -delete
  chmod -R u+w,go-w,a+rX "$work/node_modules"
  rm -rf "$modules.partial"
  mv "$work/node_modules" "$modules.partial"
  rm -rf "$work"
  mv "$modules.partial" "$modules"
fi
# Hard links where the cache and the context share a filesystem: nothing below changes them.
if ! cp -al "$modules" "$ctx/node_modules" 2>/dev/null; then
  rm -rf "$ctx/node_modules"
  cp -a "$modules" "$ctx/node_modules"
fi

cp "$SWITCHYARD_ROOT/package.json" "$ctx/app/"
tar -C "$SWITCHYARD_ROOT" --exclude='*.test.ts' --exclude='*.itest.ts' --exclude='*.e2e.ts' -cf - src |
  tar -C "$ctx/app" -xf -

# Root owns everything (COPY makes it so); the process only reads. /tmp is there to mount on.
chmod -R u+w,go-w,a+rX "$base" "$ctx/app"
mkdir -m 1777 "$base/tmp"

cp "$SWITCHYARD_ROOT/Dockerfile" "$ctx/"
version="$(node -p 'require(process.argv[1]).version' "$SWITCHYARD_ROOT/package.json")"
say "building $image (switchyard $version) from $(du -sh "$ctx" | cut -f1) of local files"
# RUN steps need no network: the build uses none.
docker build --network none --build-arg "VERSION=$version" --tag "$image" "$ctx"
# The classic builder keeps the first stage as an untagged image, the cache of the next build: the
# newest is tagged, so that it stays, and the stages and images of earlier builds, replaced and
# untagged, are removed (BuildKit keeps its cache elsewhere: then there is nothing to tag).
stage="$(docker images --quiet --filter dangling=true --filter label=dev.switchyard.build=compile-cache | awk 'NR == 1')"
[[ -z "$stage" ]] || docker tag "$stage" switchyard-build:compile-cache
docker image prune --force --filter label=dev.switchyard.build >/dev/null
say "built $image: $(docker image inspect --format '{{.Size}}' "$image" | awk '{ printf "%.0f MB", $1 / 1e6 }')"
