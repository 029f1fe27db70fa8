// The reference operator's compile of the replica bench's targets, timed in its own engine
// (issue 31): TeraSky-OSS/declarative-conversion-operator at d92dfe6, its public packages
// pkg/engine and pkg/crdadapter, nothing copied. bench/webhook.ts writes the targets (each a
// CRD of three 50-leaf versions and the config the replica compiles for it) to a JSON file;
// bench/reference/run.ts builds this program against the checkout REFERENCE_DIR names (with a
// go.mod it writes outside the work tree, replacing the module by that directory) and runs it
// once per GOMAXPROCS.
//
//	reference-compile -input targets.json [-workers N]
//
// What is timed is what the reference's webhook server does per config in its InitialSync once
// its informer cache holds the typed objects: turn the config's rules into engine RuleSets (its
// api/v1alpha1 ToRuleSets, mirrored here for the rule kinds the targets use) and run
// engine.Analyze on the CRD through crdadapter (each version's whole openAPIV3Schema). Decoding
// the input file is timed apart. The reference syncs serially; with -workers N (default
// GOMAXPROCS) N goroutines take the next target from a shared counter, so GOMAXPROCS=2 with 2
// workers is the most this engine can do on 2 cores.
//
// Prints one JSON line: the counts, the rules mapped and left out, the times, the heap the
// compiled reports retain after GC and the process's peak RSS.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/terasky-oss/declarative-conversion-operator/pkg/crdadapter"
	"github.com/terasky-oss/declarative-conversion-operator/pkg/engine"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// input is the file bench/webhook.ts writes: per target, the CRD and its config's spec as the
// replica bench records them.
type input struct {
	Targets []struct {
		CRD    extv1.CustomResourceDefinition `json:"crd"`
		Config configSpec                     `json:"config"`
	} `json:"targets"`
}

type configSpec struct {
	HubVersion string `json:"hubVersion"`
	Spokes     []struct {
		Version string `json:"version"`
		Rules   []rule `json:"rules"`
	} `json:"spokes"`
}

// rule holds the rule kinds the bench's configs use, in the JSON shape both projects share.
type rule struct {
	Strategy         string `json:"strategy"`
	AcknowledgeLossy bool   `json:"acknowledgeLossy"`
	FieldRename      *struct {
		HubPath   string `json:"hubPath"`
		SpokePath string `json:"spokePath"`
	} `json:"fieldRename"`
	EnumRemap *struct {
		Path    string `json:"path"`
		Mapping []struct {
			Hub   any `json:"hub"`
			Spoke any `json:"spoke"`
		} `json:"mapping"`
	} `json:"enumRemap"`
	Constant *struct {
		Path     string `json:"path"`
		ExistsOn string `json:"existsOn"`
		Value    any    `json:"value"`
	} `json:"constant"`
	DefaultValue *struct {
		Path     string `json:"path"`
		ExistsOn string `json:"existsOn"`
		Default  any    `json:"default"`
	} `json:"defaultValue"`
	Delete *struct {
		Path     string `json:"path"`
		ExistsOn string `json:"existsOn"`
	} `json:"delete"`
}

// params maps one rule to the engine's parameters, the way the reference's own api/v1alpha1
// translation does (EnumRemap's unmapped-value policies default to Error there too); false for
// a kind this program does not map.
func params(r rule) (engine.RuleParams, bool) {
	switch {
	case r.Strategy == "FieldRename" && r.FieldRename != nil:
		return engine.FieldRenameParams{
			HubPath:   engine.ParsePath(r.FieldRename.HubPath),
			SpokePath: engine.ParsePath(r.FieldRename.SpokePath),
		}, true
	case r.Strategy == "EnumRemap" && r.EnumRemap != nil:
		mapping := make([]engine.EnumValueMapping, 0, len(r.EnumRemap.Mapping))
		for _, m := range r.EnumRemap.Mapping {
			mapping = append(mapping, engine.EnumValueMapping{Hub: m.Hub, Spoke: m.Spoke})
		}
		return engine.EnumRemapParams{
			Path:                 engine.ParsePath(r.EnumRemap.Path),
			Mapping:              mapping,
			OnUnmappedHubValue:   engine.UnknownKeyError,
			OnUnmappedSpokeValue: engine.UnknownKeyError,
		}, true
	case r.Strategy == "Constant" && r.Constant != nil:
		return engine.ConstantParams{
			Path: engine.ParsePath(r.Constant.Path), ExistsOn: engine.Side(r.Constant.ExistsOn), Value: r.Constant.Value,
		}, true
	case r.Strategy == "DefaultValue" && r.DefaultValue != nil:
		return engine.DefaultValueParams{
			Path: engine.ParsePath(r.DefaultValue.Path), ExistsOn: engine.Side(r.DefaultValue.ExistsOn), Default: r.DefaultValue.Default,
		}, true
	case r.Strategy == "Delete" && r.Delete != nil:
		return engine.DeleteParams{Path: engine.ParsePath(r.Delete.Path), ExistsOn: engine.Side(r.Delete.ExistsOn)}, true
	}
	return nil, false
}

// ruleSets is the config's spokes as engine RuleSets, and the rules by strategy it mapped and
// left out.
func ruleSets(c configSpec, mapped, leftOut map[string]int) []engine.RuleSet {
	out := make([]engine.RuleSet, 0, len(c.Spokes))
	for _, spoke := range c.Spokes {
		rules := make([]engine.Rule, 0, len(spoke.Rules))
		for i, r := range spoke.Rules {
			p, ok := params(r)
			if !ok {
				leftOut[r.Strategy]++
				continue
			}
			mapped[r.Strategy]++
			rules = append(rules, engine.Rule{
				Strategy: engine.Strategy(r.Strategy), Params: p, AcknowledgeLossy: r.AcknowledgeLossy, SourceIndex: i,
			})
		}
		out = append(out, engine.RuleSet{
			HubVersion: c.HubVersion, SpokeVersion: spoke.Version, Rules: rules,
			UnmappedFieldPolicy: engine.UnmappedFieldPolicyError,
		})
	}
	return out
}

type result struct {
	GOMAXPROCS   int            `json:"gomaxprocs"`
	Workers      int            `json:"workers"`
	Targets      int            `json:"targets"`
	Spokes       int            `json:"spokes"`
	Compiled     int            `json:"compiled"`
	Errors       int            `json:"errors"`
	FirstError   string         `json:"firstError,omitempty"`
	RulesMapped  map[string]int `json:"rulesMapped"`
	RulesLeftOut map[string]int `json:"rulesLeftOut"`
	DecodeMs     float64        `json:"decodeMs"`
	CompileMs    float64        `json:"compileMs"`
	PerTargetUs  float64        `json:"perTargetUs"`
	HeapBytes    int64          `json:"heapBytes"`
	MaxRssBytes  int64          `json:"maxRssBytes"`
	GoVersion    string         `json:"goVersion"`
}

func main() {
	path := flag.String("input", "", "the targets file bench/webhook.ts writes")
	workers := flag.Int("workers", runtime.GOMAXPROCS(0), "goroutines compiling targets side by side")
	flag.Parse()
	if err := run(*path, *workers); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(path string, workers int) error {
	started := time.Now()
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var in input
	if err := json.Unmarshal(raw, &in); err != nil {
		return fmt.Errorf("decoding %s: %w", path, err)
	}
	raw = nil
	decodeMs := ms(time.Since(started))

	heapBefore := heapAfterGC()
	reports := make([]engine.AnalyzeReport, len(in.Targets))
	counts := make([]struct{ mapped, leftOut map[string]int }, workers)
	failures := make([]error, len(in.Targets))
	var next atomic.Int64
	var wg sync.WaitGroup
	compileStarted := time.Now()
	for w := range workers {
		counts[w].mapped, counts[w].leftOut = map[string]int{}, map[string]int{}
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(in.Targets) {
					return
				}
				t := &in.Targets[i]
				reports[i], failures[i] = engine.Analyze(engine.AnalyzeInput{
					Source:     crdadapter.New(&t.CRD),
					HubVersion: t.Config.HubVersion,
					Spokes:     ruleSets(t.Config, counts[w].mapped, counts[w].leftOut),
				})
			}
		})
	}
	wg.Wait()
	compileMs := ms(time.Since(compileStarted))
	heapAfter := heapAfterGC()

	out := result{
		GOMAXPROCS: runtime.GOMAXPROCS(0), Workers: workers, Targets: len(in.Targets),
		RulesMapped: map[string]int{}, RulesLeftOut: map[string]int{},
		DecodeMs: decodeMs, CompileMs: compileMs, PerTargetUs: compileMs * 1000 / float64(len(in.Targets)),
		HeapBytes: int64(heapAfter) - int64(heapBefore), MaxRssBytes: peakRSS(), GoVersion: runtime.Version(),
	}
	for _, c := range counts {
		for k, n := range c.mapped {
			out.RulesMapped[k] += n
		}
		for k, n := range c.leftOut {
			out.RulesLeftOut[k] += n
		}
	}
	for i, report := range reports {
		if failures[i] != nil {
			out.Errors++
			out.FirstError = firstOf(out.FirstError, failures[i].Error())
			continue
		}
		for _, spoke := range report.SpokeReports {
			out.Spokes++
			if spoke.CompiledPlan != nil {
				out.Compiled++
			} else {
				out.Errors++
				out.FirstError = firstOf(out.FirstError, fmt.Sprintf("%s %s: %+v", in.Targets[i].CRD.Name, spoke.Version, spoke.Errors))
			}
		}
	}
	runtime.KeepAlive(reports)
	line, err := json.Marshal(out)
	if err != nil {
		return err
	}
	fmt.Println(string(line))
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func firstOf(current, next string) string {
	if current != "" {
		return current
	}
	return next
}

func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// peakRSS is the process's VmHWM from /proc (Linux), 0 where there is none.
func peakRSS() int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kib * 1024
		}
	}
	return 0
}
