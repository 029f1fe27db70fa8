# Builds Crossplane core (`crossplane`, from ./cmd/crossplane) at the commit pinned below into
# "$SWITCHYARD_CACHE/crossplane/<short commit>", beside a copy of the same snapshot's CRDs
# (cluster/crds/ as crds/). The Crossplane tests run it against the local stack
# (src/local-cluster/crossplane.ts). Prints the directory on stdout; progress goes to stderr.
#
# Crossplane is not a Go module the project can require (its own go.mod replaces its apis module
# with a local directory), so it is built from source, inside its own module. The source is:
#   * SWITCHYARD_CROSSPLANE_SRC: a .tar.gz snapshot (top folder `crossplane/` or the module at
#     the root; CI sets it to the one in shared/third-party/, whose sha256 is checked here) or a
#     checkout directory (a git checkout must be at the pinned commit);
#   * where it is unset, a clone of the upstream repository at the pinned commit.
# Where neither works the build stops and says to set SWITCHYARD_CROSSPLANE_SRC.

CROSSPLANE_REPOSITORY="https://github.com/crossplane/crossplane.git"
CROSSPLANE_COMMIT="2d040d2daf4e001799c4154a4a09b9e1f40d7fde"
# The snapshot of that commit kept in shared/third-party/ (its README lists the same digest).
CROSSPLANE_ARCHIVE_NAME="crossplane-${CROSSPLANE_COMMIT:0:9}.tar.gz"
CROSSPLANE_ARCHIVE_SHA256="36985add0785f61952557121f2c57f827d29c37f5bd6aa472e37945285b73a47"

_crossplane_fail() {
  echo "[bootstrap] $*" >&2
  echo "[bootstrap] set SWITCHYARD_CROSSPLANE_SRC to a source archive (.tar.gz) or a checkout of github.com/crossplane/crossplane at commit $CROSSPLANE_COMMIT" >&2
  return 1
}

# _crossplane_module_dir <dir>: the directory holding Crossplane's go.mod under <dir>, if any.
_crossplane_module_dir() {
  local dir="$1"
  if [[ -f "$dir/go.mod" ]]; then
    echo "$dir"
  elif [[ -f "$dir/crossplane/go.mod" ]]; then
    echo "$dir/crossplane"
  else
    local found
    found="$(find "$dir" -mindepth 2 -maxdepth 2 -name go.mod -print -quit)"
    if [[ -n "$found" ]]; then dirname "$found"; fi
  fi
}

# _crossplane_source <work dir>: puts the pinned source under <work dir> (a checkout is used where
# it is) and prints its module directory.
_crossplane_source() {
  local work="$1" src="${SWITCHYARD_CROSSPLANE_SRC:-}" module
  if [[ -n "$src" && -f "$src" ]]; then
    case "$src" in
      *.tar.gz | *.tgz) ;;
      *) _crossplane_fail "SWITCHYARD_CROSSPLANE_SRC=$src is a file but not a .tar.gz archive"; return 1 ;;
    esac
    if [[ "$(basename "$src")" == "$CROSSPLANE_ARCHIVE_NAME" ]]; then
      local sum
      sum="$(sha256sum "$src" | cut -d' ' -f1)"
      [[ "$sum" == "$CROSSPLANE_ARCHIVE_SHA256" ]] ||
        { _crossplane_fail "$src has sha256 $sum, not $CROSSPLANE_ARCHIVE_SHA256 (the snapshot of $CROSSPLANE_COMMIT)"; return 1; }
    else
      echo "[bootstrap] $src is not the known snapshot $CROSSPLANE_ARCHIVE_NAME: building it as the source of Crossplane $CROSSPLANE_COMMIT unchecked" >&2
    fi
    echo "[bootstrap] unpacking $src" >&2
    mkdir -p "$work"
    tar xzf "$src" -C "$work" || { _crossplane_fail "cannot unpack $src"; return 1; }
  elif [[ -n "$src" && -d "$src" ]]; then
    local head
    if head="$(git -C "$src" rev-parse HEAD 2>/dev/null)" && [[ "$head" != "$CROSSPLANE_COMMIT" ]]; then
      _crossplane_fail "the checkout $src is at $head, not at the pinned commit $CROSSPLANE_COMMIT"
      return 1
    fi
    # Built in place: `go build -o` elsewhere writes nothing into the checkout.
    work="$src"
  elif [[ -n "$src" ]]; then
    _crossplane_fail "SWITCHYARD_CROSSPLANE_SRC=$src does not exist"
    return 1
  else
    command -v git >/dev/null || { _crossplane_fail "SWITCHYARD_CROSSPLANE_SRC is unset and git is missing to clone $CROSSPLANE_REPOSITORY"; return 1; }
    echo "[bootstrap] SWITCHYARD_CROSSPLANE_SRC is unset: cloning $CROSSPLANE_REPOSITORY at $CROSSPLANE_COMMIT" >&2
    if ! {
      git init -q "$work/crossplane" &&
        git -C "$work/crossplane" fetch -q --depth 1 "$CROSSPLANE_REPOSITORY" "$CROSSPLANE_COMMIT" &&
        git -C "$work/crossplane" -c advice.detachedHead=false checkout -q FETCH_HEAD
    } >&2; then
      _crossplane_fail "cannot clone $CROSSPLANE_REPOSITORY at $CROSSPLANE_COMMIT"
      return 1
    fi
  fi
  module="$(_crossplane_module_dir "$work")"
  [[ -n "$module" && -d "$module/cmd/crossplane" && -d "$module/cluster/crds" ]] ||
    { _crossplane_fail "${src:-the clone} holds no Crossplane source (go.mod, cmd/crossplane, cluster/crds)"; return 1; }
  grep -q '^module github.com/crossplane/crossplane' "$module/go.mod" ||
    { _crossplane_fail "$module/go.mod is not Crossplane's module"; return 1; }
  echo "$module"
}

build_crossplane() {
  local out="$SWITCHYARD_CACHE/crossplane/${CROSSPLANE_COMMIT:0:9}"
  if [[ -x "$out/crossplane" && -f "$out/crds/apiextensions.crossplane.io_compositeresourcedefinitions.yaml" ]]; then
    echo "$out"
    return 0
  fi
  command -v go >/dev/null || { echo "[bootstrap] Go is needed to build Crossplane" >&2; return 1; }
  echo "[bootstrap] building Crossplane core ${CROSSPLANE_COMMIT:0:9} from source (first time only, about 5 min on 2 cores)" >&2
  local started=$SECONDS module
  rm -rf "$out.partial" "$out.src"
  mkdir -p "$out.partial"
  module="$(_crossplane_source "$out.src")" || { rm -rf "$out.src" "$out.partial"; return 1; }
  if [[ -d "$out.src" ]]; then chmod -R u+w "$out.src"; fi
  (
    cd "$module"
    export GOMODCACHE="$SWITCHYARD_CACHE/go/mod" GOCACHE="$SWITCHYARD_CACHE/go/build" GOFLAGS=-mod=readonly
    CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=${CROSSPLANE_COMMIT:0:9}" \
      -o "$out.partial/crossplane" ./cmd/crossplane
  ) >&2 || { rm -rf "$out.src" "$out.partial"; echo "[bootstrap] building Crossplane failed" >&2; return 1; }
  cp -r "$module/cluster/crds" "$out.partial/crds"
  echo "$CROSSPLANE_COMMIT" >"$out.partial/COMMIT"
  rm -rf "$out.src" "$out"
  mv "$out.partial" "$out"
  echo "[bootstrap] built Crossplane core ${CROSSPLANE_COMMIT:0:9} in $((SECONDS - started)) s into $out" >&2
  echo "$out"
}
