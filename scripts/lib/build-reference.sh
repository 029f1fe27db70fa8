# Builds the differential-test harness (test/reference-engine/harness, Switchyard's own Go code)
# against the reference conversion operator's engine at the commit pinned below, into
# "$SWITCHYARD_CACHE/reference/<short commit>/<harness hash>/harness", and keeps that commit's
# source tree unpacked at "$SWITCHYARD_CACHE/reference/<short commit>/src" (the differential
# corpus, test/reference-engine/corpus.ts, reads its examples, docs and test data). Prints the
# harness's path on stdout; progress goes to stderr. The harness is rebuilt when its source
# changes: the directory is keyed by a hash of the harness files.
#
# The harness imports the reference's internal packages (its admission checks), which Go allows
# only from inside the same module, so it is built as cmd/switchyard-harness inside a copy of the
# reference's module. The source is:
#   * SWITCHYARD_REFERENCE_SRC: a .tar.gz snapshot (top folder `declarative-conversion-operator/`
#     or the module at the root; CI sets it to the one in the shared third-party snapshot, whose
#     sha256 is checked here) or a checkout directory (a git checkout must be at the pinned
#     commit);
#   * where it is unset, a clone of the upstream repository at the pinned commit.
# Where neither works the build stops and says to set SWITCHYARD_REFERENCE_SRC.

REFERENCE_REPOSITORY="https://github.com/TeraSky-OSS/declarative-conversion-operator.git"
REFERENCE_COMMIT="d92dfe6ae6f741b5833ce964dd0119ad8a1bf45a"
REFERENCE_MODULE="github.com/terasky-oss/declarative-conversion-operator"
# The snapshot of that commit kept with the shared third-party sources (its README lists the
# same digest).
REFERENCE_ARCHIVE_NAME="declarative-conversion-operator-${REFERENCE_COMMIT:0:7}.tar.gz"
REFERENCE_ARCHIVE_SHA256="d9b93f36a91a41b76e4bdfd61aa7a7dba59b03cadceb3670aaca921f0398b59b"

_reference_fail() {
  echo "[bootstrap] $*" >&2
  echo "[bootstrap] set SWITCHYARD_REFERENCE_SRC to a source archive (.tar.gz) or a checkout of github.com/TeraSky-OSS/declarative-conversion-operator at commit $REFERENCE_COMMIT" >&2
  return 1
}

# reference_source_dir: where the pinned source tree is kept unpacked.
reference_source_dir() {
  echo "$SWITCHYARD_CACHE/reference/${REFERENCE_COMMIT:0:7}/src"
}

# _reference_module_dir <dir>: the directory holding the reference's go.mod under <dir>, if any.
_reference_module_dir() {
  local dir="$1"
  if [[ -f "$dir/go.mod" ]]; then
    echo "$dir"
  elif [[ -f "$dir/declarative-conversion-operator/go.mod" ]]; then
    echo "$dir/declarative-conversion-operator"
  else
    local found
    found="$(find "$dir" -mindepth 2 -maxdepth 2 -name go.mod -print -quit)"
    if [[ -n "$found" ]]; then dirname "$found"; fi
  fi
}

# _reference_fetch <work dir>: puts the pinned source under <work dir> and prints its module
# directory. A checkout is read where it is (nothing is written into it).
_reference_fetch() {
  local work="$1" src="${SWITCHYARD_REFERENCE_SRC:-}" module
  mkdir -p "$work"
  if [[ -n "$src" && -f "$src" ]]; then
    case "$src" in
      *.tar.gz | *.tgz) ;;
      *) _reference_fail "SWITCHYARD_REFERENCE_SRC=$src is a file but not a .tar.gz archive"; return 1 ;;
    esac
    if [[ "$(basename "$src")" == "$REFERENCE_ARCHIVE_NAME" ]]; then
      local sum
      sum="$(sha256sum "$src" | cut -d' ' -f1)"
      [[ "$sum" == "$REFERENCE_ARCHIVE_SHA256" ]] ||
        { _reference_fail "$src has sha256 $sum, not $REFERENCE_ARCHIVE_SHA256 (the snapshot of $REFERENCE_COMMIT)"; return 1; }
    else
      echo "[bootstrap] $src is not the known snapshot $REFERENCE_ARCHIVE_NAME: using it as the source of the reference operator $REFERENCE_COMMIT unchecked" >&2
    fi
    echo "[bootstrap] unpacking $src" >&2
    tar xzf "$src" -C "$work" || { _reference_fail "cannot unpack $src"; return 1; }
  elif [[ -n "$src" && -d "$src" ]]; then
    local head
    if head="$(git -C "$src" rev-parse HEAD 2>/dev/null)" && [[ "$head" != "$REFERENCE_COMMIT" ]]; then
      _reference_fail "the checkout $src is at $head, not at the pinned commit $REFERENCE_COMMIT"
      return 1
    fi
    echo "[bootstrap] copying the checkout $src" >&2
    mkdir -p "$work/declarative-conversion-operator"
    tar cf - -C "$src" --exclude=./.git . | tar xf - -C "$work/declarative-conversion-operator" ||
      { _reference_fail "cannot copy $src"; return 1; }
  elif [[ -n "$src" ]]; then
    _reference_fail "SWITCHYARD_REFERENCE_SRC=$src does not exist"
    return 1
  else
    command -v git >/dev/null || { _reference_fail "SWITCHYARD_REFERENCE_SRC is unset and git is missing to clone $REFERENCE_REPOSITORY"; return 1; }
    echo "[bootstrap] SWITCHYARD_REFERENCE_SRC is unset: cloning $REFERENCE_REPOSITORY at $REFERENCE_COMMIT" >&2
    local clone="$work/declarative-conversion-operator"
    if ! {
      git init -q "$clone" &&
        git -C "$clone" fetch -q --depth 1 "$REFERENCE_REPOSITORY" "$REFERENCE_COMMIT" &&
        git -C "$clone" -c advice.detachedHead=false checkout -q FETCH_HEAD
    } >&2; then
      _reference_fail "cannot clone $REFERENCE_REPOSITORY at $REFERENCE_COMMIT"
      return 1
    fi
    rm -rf "$clone/.git"
  fi
  module="$(_reference_module_dir "$work")"
  [[ -n "$module" && -d "$module/pkg/engine" && -d "$module/api/v1alpha1" && -d "$module/examples" ]] ||
    { _reference_fail "${src:-the clone} holds no reference operator source (go.mod, pkg/engine, api/v1alpha1, examples)"; return 1; }
  grep -q "^module $REFERENCE_MODULE\$" "$module/go.mod" ||
    { _reference_fail "$module/go.mod is not the reference operator's module ($REFERENCE_MODULE)"; return 1; }
  echo "$module"
}

# _reference_unpack: the pinned source tree at reference_source_dir, unpacked once.
_reference_unpack() {
  local dir
  dir="$(reference_source_dir)"
  if [[ -f "$dir/go.mod" && "$(cat "$dir/.switchyard-commit" 2>/dev/null)" == "$REFERENCE_COMMIT" ]]; then
    return 0
  fi
  local work="$dir.partial" module
  rm -rf "$work"
  module="$(_reference_fetch "$work")" || { rm -rf "$work"; return 1; }
  chmod -R u+w "$work"
  echo "$REFERENCE_COMMIT" >"$module/.switchyard-commit"
  rm -rf "$dir"
  mv "$module" "$dir"
  rm -rf "$work"
}

# _reference_harness_hash: names and contents of the harness's files, hashed.
_reference_harness_hash() {
  (
    cd "$SWITCHYARD_ROOT/test/reference-engine/harness"
    find . -type f -name '*.go' -print0 | LC_ALL=C sort -z | while IFS= read -r -d '' file; do
      echo "$file"
      sha256sum <"$file"
    done
  ) | sha256sum | cut -c1-12
}

build_reference() {
  local base="$SWITCHYARD_CACHE/reference/${REFERENCE_COMMIT:0:7}" hash
  hash="$(_reference_harness_hash)"
  local out="$base/$hash"
  _reference_unpack || return 1
  SWITCHYARD_REFERENCE_SOURCE_DIR="$(reference_source_dir)"
  export SWITCHYARD_REFERENCE_SOURCE_DIR
  if [[ -x "$out/harness" ]]; then
    echo "$out/harness"
    return 0
  fi
  command -v go >/dev/null || { echo "[bootstrap] Go is needed to build the reference engine's harness" >&2; return 1; }
  echo "[bootstrap] building the reference engine harness ${REFERENCE_COMMIT:0:7}/$hash (when the harness changes; about 2 min on 2 cores with a cold Go cache)" >&2
  local started=$SECONDS build="$out.build"
  rm -rf "$out.partial" "$build"
  mkdir -p "$out.partial" "$build"
  # A copy of the module with the harness inside it: the kept source tree stays as published.
  cp -r "$SWITCHYARD_REFERENCE_SOURCE_DIR/." "$build/"
  mkdir -p "$build/cmd/switchyard-harness"
  cp "$SWITCHYARD_ROOT"/test/reference-engine/harness/*.go "$build/cmd/switchyard-harness/"
  (
    cd "$build"
    export GOMODCACHE="$SWITCHYARD_CACHE/go/mod" GOCACHE="$SWITCHYARD_CACHE/go/build" GOFLAGS=-mod=readonly
    # The harness imports only packages the reference's own go.sum covers, so the module is
    # built as published; should a future harness need a module the go.sum lacks, -mod=mod
    # records it in this build copy only.
    if ! go list -deps ./cmd/switchyard-harness >/dev/null 2>&1; then
      echo "[bootstrap] the reference's go.sum lacks modules the harness needs: building with -mod=mod" >&2
      GOFLAGS=-mod=mod
    fi
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out.partial/harness" ./cmd/switchyard-harness
  ) >&2 || { rm -rf "$build" "$out.partial"; echo "[bootstrap] building the reference engine harness failed" >&2; return 1; }
  rm -rf "$build"
  echo "$REFERENCE_COMMIT" >"$out.partial/COMMIT"
  rm -rf "$out"
  mv "$out.partial" "$out"
  echo "[bootstrap] built the reference engine harness in $((SECONDS - started)) s into $out" >&2
  echo "$out/harness"
}
