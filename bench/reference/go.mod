// The module root of bench/reference/main.go. Its requirements are not here: bench/reference/run.ts
// writes a go.mod beside the build (outside the work tree) that requires the reference operator
// and replaces it with the checkout REFERENCE_DIR names, since the Go module proxy does not serve it.
module switchyard.dev/bench/reference

go 1.26.0
