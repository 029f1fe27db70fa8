package main

// Converting one object the way the reference's webhook server answers a ConversionReview
// (internal/webhookserver/server.go, handleConvert): the object is decoded with encoding/json
// into map[string]any (every JSON number becomes a float64), its version is read from its own
// apiVersion, Router.Convert moves it, and then the server sets apiVersion to the review's
// desiredAPIVersion and puts back metadata if the result lacks it, before encoding the result
// with encoding/json. The response's object is exactly those bytes: what a client of the
// reference gets.

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

type convertRequest struct {
	Handle int64           `json:"handle"`
	Object json.RawMessage `json:"object"`
	From   string          `json:"from"`
	To     string          `json:"to"`
	// DesiredAPIVersion is the review's desiredAPIVersion; absent, it is the object's API group
	// with version `to`.
	DesiredAPIVersion string `json:"desiredAPIVersion,omitempty"`
}

type convertResponse struct {
	ID     json.RawMessage `json:"id,omitempty"`
	OK     bool            `json:"ok"`
	Object json.RawMessage `json:"object,omitempty"`
	Error  string          `json:"error,omitempty"`
}

func (h *harness) convert(id json.RawMessage, req *convertRequest) any {
	c, ok := h.lookup(req.Handle)
	if !ok {
		return failure{ID: id, Error: fmt.Sprintf("request: no handle %d", req.Handle)}
	}
	if problem := checkFrom(req); problem != "" {
		return failure{ID: id, Error: problem}
	}
	out, err := convertLikeWebhook(c, req.Object, req.To, req.DesiredAPIVersion)
	if err != nil {
		return convertResponse{ID: id, OK: false, Error: err.Error()}
	}
	return convertResponse{ID: id, OK: true, Object: out}
}

// checkFrom refuses a request whose `from` is not the version the object's apiVersion names:
// the webhook server reads the version from the object only, so such a request asks for
// something no client of the reference could ask.
func checkFrom(req *convertRequest) string {
	var head struct {
		APIVersion any `json:"apiVersion"`
	}
	if err := json.Unmarshal(req.Object, &head); err != nil {
		return "" // the webhook's own decoding reports it
	}
	s, _ := head.APIVersion.(string)
	if req.From != "" && versionOf(s) != req.From {
		return fmt.Sprintf("request: from is %q but the object's apiVersion %q names version %q", req.From, s, versionOf(s))
	}
	return ""
}

func convertLikeWebhook(c *compiled, raw json.RawMessage, to, desired string) (json.RawMessage, error) {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("decoding object: %v", err)
	}
	apiVersion := stringField(obj, "apiVersion")
	if desired == "" {
		desired = to
		if slash := strings.LastIndex(apiVersion, "/"); slash >= 0 {
			desired = apiVersion[:slash] + "/" + to
		}
	}
	fromVersion, toVersion := versionOf(apiVersion), versionOf(desired)
	out, err := c.router.Convert(obj, fromVersion, toVersion)
	if err != nil {
		return nil, fmt.Errorf("converting %s -> %s: %v", fromVersion, toVersion, err)
	}
	out["apiVersion"] = desired
	ensureConvertedMetadata(out, obj)
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("marshaling converted object: %v", err)
	}
	return b, nil
}

// ensureConvertedMetadata, versionOf and stringField restate three small helpers of the
// reference's webhook server (unexported there).
func ensureConvertedMetadata(out, original map[string]any) {
	if md, ok := out["metadata"]; ok && md != nil {
		return
	}
	if md, ok := original["metadata"]; ok && md != nil {
		out["metadata"] = md
		return
	}
	out["metadata"] = map[string]any{}
}

func versionOf(apiVersion string) string {
	parts := strings.SplitN(apiVersion, "/", 2)
	return parts[len(parts)-1]
}

func stringField(obj map[string]any, key string) string {
	s, _ := obj[key].(string)
	return s
}

type benchRequest struct {
	convertRequest
	Iterations int `json:"iterations"`
}

// bench converts the object `iterations` times, each time from its JSON bytes to the encoded
// result: the work the webhook server does per object of a review.
func (h *harness) bench(id json.RawMessage, req *benchRequest) any {
	if req.Iterations <= 0 {
		return failure{ID: id, Error: "bench.iterations must be positive"}
	}
	c, ok := h.lookup(req.Handle)
	if !ok {
		return failure{ID: id, Error: fmt.Sprintf("request: no handle %d", req.Handle)}
	}
	if problem := checkFrom(&req.convertRequest); problem != "" {
		return failure{ID: id, Error: problem}
	}
	if _, err := convertLikeWebhook(c, req.Object, req.To, req.DesiredAPIVersion); err != nil {
		return failure{ID: id, Error: fmt.Sprintf("the object does not convert; benchmark one that does: %v", err)}
	}
	start := time.Now()
	for i := 0; i < req.Iterations; i++ {
		if _, err := convertLikeWebhook(c, req.Object, req.To, req.DesiredAPIVersion); err != nil {
			return failure{ID: id, Error: err.Error()}
		}
	}
	return benchResult(id, req.Iterations, time.Since(start))
}
