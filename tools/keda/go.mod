// Pins the KEDA release the autoscaling test runs (its operator and metrics adapter, and its CRDs
// and RBAC), see scripts/lib/build-keda.sh. It is built inside its own module, whose replace
// directives a `tool` directive here would ignore; this module only pins it, checked against go.sum.
// v2.20.2 is the newest release the machine's Go builds (v2.21 requires Go 1.27.4).
module switchyard.dev/tools/keda

go 1.26.0

require github.com/kedacore/keda/v2 v2.20.2
