# Builds etcd, kube-apiserver, kube-controller-manager and kubectl from the wrapper
# module in tools/kube-bins into "$SWITCHYARD_CACHE/kube-bins/<key>", where the key
# is a digest of the module's files: a change of pinned version builds a new set, an
# unchanged module reuses the old one. Prints the directory on stdout; progress goes
# to stderr.

KUBE_VERSION="v1.37.2"

kube_bins_key() {
  (cd "$SWITCHYARD_ROOT/tools/kube-bins" && cat go.mod go.sum ./*/main.go) | sha256sum | cut -c1-16
}

build_kube_bins() {
  local key out
  key="$(kube_bins_key)"
  out="$SWITCHYARD_CACHE/kube-bins/$key"
  if [[ -x "$out/kube-apiserver" && -x "$out/kube-controller-manager" && -x "$out/etcd" && -x "$out/kubectl" ]]; then
    echo "$out"
    return 0
  fi
  command -v go >/dev/null || { echo "[bootstrap] Go is needed to build the local control plane" >&2; return 1; }
  echo "[bootstrap] building etcd + kube-apiserver + kube-controller-manager + kubectl $KUBE_VERSION from Go modules (first time only, about 7 min on 2 cores)" >&2
  local minor="${KUBE_VERSION#v1.}"
  minor="${minor%%.*}"
  local ldflags=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  local started=$SECONDS
  (
    cd "$SWITCHYARD_ROOT/tools/kube-bins"
    export GOMODCACHE="$SWITCHYARD_CACHE/go/mod" GOCACHE="$SWITCHYARD_CACHE/go/build" GOFLAGS=-mod=readonly
    mkdir -p "$out.partial"
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$out.partial/" ./etcd ./kube-apiserver ./kube-controller-manager ./kubectl
  ) >&2
  rm -rf "$out"
  mv "$out.partial" "$out"
  echo "[bootstrap] built in $((SECONDS - started)) s into $out" >&2
  echo "$out"
}
