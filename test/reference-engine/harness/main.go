// Command switchyard-harness drives the reference conversion operator's engine
// (TeraSky-OSS/declarative-conversion-operator, pkg/engine) for Switchyard's
// differential tests and benchmarks. It is Switchyard's own code: the build
// (scripts/lib/build-reference.sh) copies it into the reference module as
// cmd/switchyard-harness and builds it there, so it can use the reference's
// internal packages exactly as its manager and webhook server do.
//
// Protocol: one JSON request per line on stdin, one JSON response per line on
// stdout, in order, flushed after each. Every response echoes the request's
// "id". Requests:
//
//	{"id":N,"compile":{"config":<spec>,"versions":[{"name","served","storage","schema"}]}}
//	{"id":N,"convert":{"handle":H,"object":<obj>,"from":"v1","to":"v2"}}
//	{"id":N,"release":H}
//	{"id":N,"bench":{"handle":H,"object":<obj>,"from","to","iterations":K}}
//	{"id":N,"benchCompile":{"config":<spec>,"versions":[...],"iterations":K}}
//
// A request that cannot be decoded gets {"ok":false,"error":...}; a panic in
// the reference's code is recovered and reported as {"ok":false,"crash":...},
// so one bad input never ends the process.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
)

type request struct {
	ID           json.RawMessage `json:"id,omitempty"`
	Compile      *compileRequest `json:"compile,omitempty"`
	Convert      *convertRequest `json:"convert,omitempty"`
	Release      *int64          `json:"release,omitempty"`
	Bench        *benchRequest   `json:"bench,omitempty"`
	BenchCompile *benchCompile   `json:"benchCompile,omitempty"`
}

// failure is the response to a request that did not get as far as a result.
type failure struct {
	ID    json.RawMessage `json:"id,omitempty"`
	OK    bool            `json:"ok"`
	Error string          `json:"error,omitempty"`
	Crash string          `json:"crash,omitempty"`
}

type released struct {
	ID json.RawMessage `json:"id,omitempty"`
	OK bool            `json:"ok"`
}

func main() {
	h := newHarness()
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 && !isBlank(line) {
			writeLine(out, h.handle(line))
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "switchyard-harness: reading stdin: %v\n", err)
			os.Exit(1)
		}
	}
}

func isBlank(line []byte) bool {
	for _, b := range line {
		if b != ' ' && b != '\t' && b != '\r' && b != '\n' {
			return false
		}
	}
	return true
}

func writeLine(out *bufio.Writer, response any) {
	b, err := json.Marshal(response)
	if err != nil {
		b, _ = json.Marshal(failure{OK: false, Error: fmt.Sprintf("encoding the response: %v", err)})
	}
	_, _ = out.Write(b)
	_ = out.WriteByte('\n')
	if err := out.Flush(); err != nil {
		fmt.Fprintf(os.Stderr, "switchyard-harness: writing stdout: %v\n", err)
		os.Exit(1)
	}
}

// handle answers one request line; it never panics.
func (h *harness) handle(line []byte) (response any) {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		// Salvage the id if the line is an object with one, so the client can match the error.
		var idOnly struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(line, &idOnly)
		return failure{ID: idOnly.ID, Error: fmt.Sprintf("malformed request: %v", err)}
	}
	defer func() {
		if rec := recover(); rec != nil {
			response = failure{ID: req.ID, Crash: fmt.Sprintf("panic: %v\n%s", rec, debug.Stack())}
		}
	}()
	set := 0
	for _, present := range []bool{
		req.Compile != nil, req.Convert != nil, req.Release != nil, req.Bench != nil, req.BenchCompile != nil,
	} {
		if present {
			set++
		}
	}
	if set != 1 {
		return failure{ID: req.ID, Error: "a request holds exactly one of compile, convert, release, bench, benchCompile"}
	}
	switch {
	case req.Compile != nil:
		return h.compile(req.ID, req.Compile)
	case req.Convert != nil:
		return h.convert(req.ID, req.Convert)
	case req.Release != nil:
		if !h.release(*req.Release) {
			return failure{ID: req.ID, Error: fmt.Sprintf("no handle %d", *req.Release)}
		}
		return released{ID: req.ID, OK: true}
	case req.Bench != nil:
		return h.bench(req.ID, req.Bench)
	default:
		return h.benchCompile(req.ID, req.BenchCompile)
	}
}
