// Pins the prometheus-operator release whose CRDs (ServiceMonitor, PrometheusRule) the tests
// validate deploy/monitoring against (see scripts/lib/fetch-monitoring-crds.sh). Only the
// module's files are used; nothing is built.
module switchyard.dev/tools/monitoring-crds

go 1.26.0

require github.com/prometheus-operator/prometheus-operator v0.85.0
