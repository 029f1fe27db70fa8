package main

// Compiling a config the way the reference operator does: the admission webhook's structural
// checks (internal/webhook ValidateStructure / ValidateCRDStructure), the API-to-engine rule
// translation (api/v1alpha1 ToRuleSets), then engine.Analyze against the target's versions. A
// Router is kept only when no spoke has an error, as the webhook server's reconciler does
// (internal/webhookserver: a report with errors never replaces a plan).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	v1alpha1 "github.com/terasky-oss/declarative-conversion-operator/api/v1alpha1"
	"github.com/terasky-oss/declarative-conversion-operator/internal/webhook"
	"github.com/terasky-oss/declarative-conversion-operator/pkg/engine"
)

type versionIn struct {
	Name    string          `json:"name"`
	Served  bool            `json:"served"`
	Storage bool            `json:"storage"`
	Schema  json.RawMessage `json:"schema,omitempty"`
}

type compileRequest struct {
	Config   json.RawMessage `json:"config"`
	Versions []versionIn     `json:"versions"`
}

type lossless struct {
	HubToSpoke bool `json:"hubToSpoke"`
	SpokeToHub bool `json:"spokeToHub"`
}

type ruleResultOut struct {
	Index      int      `json:"index"`
	Strategy   string   `json:"strategy"`
	HubPaths   []string `json:"hubPaths"`
	SpokePaths []string `json:"spokePaths"`
	Lossless   lossless `json:"lossless"`
	Errors     []string `json:"errors"`
	Warnings   []string `json:"warnings"`
}

type spokeOut struct {
	Version        string          `json:"version"`
	Lossless       lossless        `json:"lossless"`
	Errors         []string        `json:"errors"`
	Warnings       []string        `json:"warnings"`
	RuleResults    []ruleResultOut `json:"ruleResults"`
	UncoveredHub   []string        `json:"uncoveredHub"`
	UncoveredSpoke []string        `json:"uncoveredSpoke"`
}

type compileResponse struct {
	ID json.RawMessage `json:"id,omitempty"`
	OK bool            `json:"ok"`
	// Handle names the Router kept for convert requests; only when every spoke compiled.
	Handle *int64     `json:"handle,omitempty"`
	Spokes []spokeOut `json:"spokes"`
	// Stage says where a refused config stopped: decode (the spec does not decode strictly into
	// the reference's API types, as `kubectl apply` with strict field validation refuses it),
	// admission (the admission webhook's structural checks), rules (ToRuleSets), analyze
	// (engine.Analyze itself failed: hub missing or not the storage version) or spokes (a
	// spoke has errors).
	Stage string `json:"stage,omitempty"`
	Error string `json:"error,omitempty"`
}

// compiled is a Router as the webhook server's registry holds it.
type compiled struct {
	router   *engine.Router
	lossless map[string]engine.LosslessVerdict
}

type harness struct {
	mu      sync.Mutex
	next    int64
	handles map[int64]*compiled
}

func newHarness() *harness { return &harness{next: 1, handles: map[int64]*compiled{}} }

func (h *harness) keep(c *compiled) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	id := h.next
	h.next++
	h.handles[id] = c
	return id
}

func (h *harness) lookup(id int64) (*compiled, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.handles[id]
	return c, ok
}

func (h *harness) release(id int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.handles[id]
	delete(h.handles, id)
	return ok
}

// config is the part of either config kind's spec the engine reads.
type config struct {
	hubVersion string
	ruleSets   func() ([]engine.RuleSet, error)
	validate   func() error
}

// decodeConfig reads a spec as a user writes it: a CRDConversionConfig's when it names
// targetCRD, else an XRDConversionConfig's. Unknown fields are refused, as the apiserver's
// strict field validation (kubectl's default) refuses them.
func decodeConfig(raw json.RawMessage) (*config, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("the config is not a JSON object: %w", err)
	}
	if _, isCRD := probe["targetCRD"]; isCRD {
		cfg := &v1alpha1.CRDConversionConfig{}
		if err := strictDecode(raw, &cfg.Spec); err != nil {
			return nil, err
		}
		return &config{
			hubVersion: cfg.Spec.HubVersion,
			ruleSets:   cfg.ToRuleSets,
			validate:   func() error { return webhook.ValidateCRDStructure(cfg) },
		}, nil
	}
	cfg := &v1alpha1.XRDConversionConfig{}
	if err := strictDecode(raw, &cfg.Spec); err != nil {
		return nil, err
	}
	return &config{
		hubVersion: cfg.Spec.HubVersion,
		ruleSets:   cfg.ToRuleSets,
		validate:   func() error { return webhook.ValidateStructure(cfg) },
	}, nil
}

func strictDecode(raw json.RawMessage, into any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("strict decoding of the spec: %w", err)
	}
	return nil
}

// versionSource is an engine.SchemaSource over versions given in the request: what
// pkg/crdadapter and pkg/xrdadapter hand the engine (each version's whole openAPIV3Schema,
// storage = a CRD's storage or an XRD's referenceable).
type versionSource struct{ versions []engine.VersionSchema }

func (s versionSource) Versions() ([]engine.VersionSchema, error) { return s.versions, nil }
func (s versionSource) Describe() engine.ResourceDescriptor {
	return engine.ResourceDescriptor{Kind: "harness", Name: "target"}
}

func decodeVersions(in []versionIn) (versionSource, error) {
	out := make([]engine.VersionSchema, 0, len(in))
	for i, v := range in {
		var schema *extv1.JSONSchemaProps
		if len(v.Schema) > 0 && !bytes.Equal(bytes.TrimSpace(v.Schema), []byte("null")) {
			schema = &extv1.JSONSchemaProps{}
			if err := json.Unmarshal(v.Schema, schema); err != nil {
				return versionSource{}, fmt.Errorf("versions[%d] (%s): the schema is not an openAPIV3Schema: %w", i, v.Name, err)
			}
		}
		out = append(out, engine.VersionSchema{Name: v.Name, Schema: schema, Served: v.Served, Storage: v.Storage})
	}
	return versionSource{versions: out}, nil
}

// analyzed is a compile's outcome before it is kept or reported.
type analyzed struct {
	report engine.AnalyzeReport
	stage  string
	err    error
	hub    string
}

func analyzeConfig(cfg *config, source versionSource) analyzed {
	if err := cfg.validate(); err != nil {
		return analyzed{stage: "admission", err: err}
	}
	ruleSets, err := cfg.ruleSets()
	if err != nil {
		return analyzed{stage: "rules", err: fmt.Errorf("invalid rule configuration: %w", err)}
	}
	report, err := engine.Analyze(engine.AnalyzeInput{Source: source, HubVersion: cfg.hubVersion, Spokes: ruleSets})
	if err != nil {
		return analyzed{stage: "analyze", err: err}
	}
	return analyzed{report: report, hub: cfg.hubVersion}
}

// router assembles what the webhook server's reconciler registers (compileAndRegister).
func (a analyzed) router() *compiled {
	plans := map[string]*engine.Plan{}
	verdicts := map[string]engine.LosslessVerdict{}
	for _, sr := range a.report.SpokeReports {
		plans[sr.Version] = sr.CompiledPlan
		verdicts[sr.Version] = sr.Lossless
	}
	return &compiled{router: &engine.Router{Hub: a.hub, Plans: plans}, lossless: verdicts}
}

func (h *harness) compile(id json.RawMessage, req *compileRequest) compileResponse {
	resp := compileResponse{ID: id, Spokes: []spokeOut{}}
	cfg, err := decodeConfig(req.Config)
	if err != nil {
		resp.Stage, resp.Error = "decode", err.Error()
		return resp
	}
	source, err := decodeVersions(req.Versions)
	if err != nil {
		resp.Stage, resp.Error = "decode", err.Error()
		return resp
	}
	a := analyzeConfig(cfg, source)
	if a.err != nil {
		resp.Stage, resp.Error = a.stage, a.err.Error()
		return resp
	}
	for _, sr := range a.report.SpokeReports {
		resp.Spokes = append(resp.Spokes, spokeReport(sr))
	}
	if a.report.HasErrors() {
		resp.Stage = "spokes"
		resp.Error = "analysis produced validation errors"
		return resp
	}
	handle := h.keep(a.router())
	resp.OK, resp.Handle = true, &handle
	return resp
}

func spokeReport(sr engine.SpokeReport) spokeOut {
	out := spokeOut{
		Version:        sr.Version,
		Lossless:       lossless{HubToSpoke: sr.Lossless.HubToSpoke, SpokeToHub: sr.Lossless.SpokeToHub},
		Errors:         messages(sr.Errors),
		Warnings:       messages(sr.Warnings),
		RuleResults:    []ruleResultOut{},
		UncoveredHub:   orEmpty(sr.Uncovered.UncoveredHub),
		UncoveredSpoke: orEmpty(sr.Uncovered.UncoveredSpoke),
	}
	for _, rr := range sr.RuleResults {
		out.RuleResults = append(out.RuleResults, ruleResultOut{
			Index:      rr.Index,
			Strategy:   string(rr.Strategy),
			HubPaths:   orEmpty(rr.HubPaths),
			SpokePaths: orEmpty(rr.SpokePaths),
			Lossless:   lossless{HubToSpoke: rr.Lossless.HubToSpoke, SpokeToHub: rr.Lossless.SpokeToHub},
			Errors:     orEmpty(rr.Errors),
			Warnings:   orEmpty(rr.Warnings),
		})
	}
	return out
}

func messages(diags []engine.Diagnostic) []string {
	out := make([]string, 0, len(diags))
	for _, d := range diags {
		out = append(out, d.Message)
	}
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

type benchCompile struct {
	Config     json.RawMessage `json:"config"`
	Versions   []versionIn     `json:"versions"`
	Iterations int             `json:"iterations"`
}

type benchResponse struct {
	ID           json.RawMessage `json:"id,omitempty"`
	OK           bool            `json:"ok"`
	Iterations   int             `json:"iterations"`
	NanosPerOp   float64         `json:"nanosPerOp"`
	OpsPerSecond float64         `json:"opsPerSecond"`
}

// benchCompile times what the webhook server's reconciler does per config once it holds the
// config and the target: the structural checks, ToRuleSets, Analyze and the Router. Decoding
// the request's JSON is outside the timing, as the reconciler reads typed objects from its
// informer cache.
func (h *harness) benchCompile(id json.RawMessage, req *benchCompile) any {
	if req.Iterations <= 0 {
		return failure{ID: id, Error: "benchCompile.iterations must be positive"}
	}
	cfg, err := decodeConfig(req.Config)
	if err != nil {
		return failure{ID: id, Error: err.Error()}
	}
	source, err := decodeVersions(req.Versions)
	if err != nil {
		return failure{ID: id, Error: err.Error()}
	}
	if a := analyzeConfig(cfg, source); a.err != nil || a.report.HasErrors() {
		return failure{ID: id, Error: "the config does not compile; benchmark a config that does"}
	}
	start := time.Now()
	var sink *compiled
	for i := 0; i < req.Iterations; i++ {
		sink = analyzeConfig(cfg, source).router()
	}
	elapsed := time.Since(start)
	_ = sink
	return benchResult(id, req.Iterations, elapsed)
}

func benchResult(id json.RawMessage, iterations int, elapsed time.Duration) benchResponse {
	perOp := float64(elapsed.Nanoseconds()) / float64(iterations)
	ops := 0.0
	if perOp > 0 {
		ops = 1e9 / perOp
	}
	return benchResponse{ID: id, OK: true, Iterations: iterations, NanosPerOp: perOp, OpsPerSecond: ops}
}
