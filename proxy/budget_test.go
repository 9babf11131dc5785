package proxy_test

import (
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/policy"
)

// fanOutSchema refers to the next level twice at each of levels levels.
func fanOutSchema(levels int) string {
	var defs []string
	for i := range levels {
		next := fmt.Sprintf(`{"$ref":"#/$defs/l%d"}`, i+1)
		defs = append(defs, fmt.Sprintf(`"l%d":{"anyOf":[%s,{"allOf":[%s]}]}`, i, next, next))
	}
	defs = append(defs, fmt.Sprintf(`"l%d":{"type":"object"}`, levels))
	return `{"$ref":"#/$defs/l0","$defs":{` + strings.Join(defs, ",") + `}}`
}

func toolRequest(name, schema string) string {
	return `{"model":"m","messages":[{"role":"user","content":"go"}],"tools":[{"type":"function","function":{"name":"` + name + `","parameters":` + schema + `}}]}`
}

func namedCall(id, name, args string) string {
	return `{"id":"` + id + `","type":"function","function":{"name":"` + name + `","arguments":` + quote(args) + `}}`
}

// TestExponentialSchemaCallIsUnchecked: a 1.5 KB schema whose references fan
// out took 127 s and 7.8 GB to validate {"a":5}. Its call now passes as a
// JSON object, reported unchecked (header, log), without a re-ask: its
// expanded size is over the limit, so it is not even compiled.
func TestExponentialSchemaCallIsUnchecked(t *testing.T) {
	call := toolReply(`{"total_tokens":1}`, namedCall("c1", "f", `{"a":5}`))
	up := newUpstream(t, reply{Body: call})
	srv, logs := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/chat/completions", toolRequest("f", fanOutSchema(20)))
	if resp.StatusCode != 200 || string(body) != call {
		t.Fatalf("status %d body %s", resp.StatusCode, body)
	}
	if got := header(resp, "X-Toolguard-Outcome"); got != "unchecked" {
		t.Errorf("outcome %q, want unchecked", got)
	}
	if n := len(up.requests()); n != 1 {
		t.Errorf("%d upstream requests, want 1", n)
	}
	if !strings.Contains(logs.String(), "with its references expanded") {
		t.Errorf("no log line says why the call was not checked:\n%.2000s", logs.String())
	}
}

// TestUncheckedIsNeverValid: a call whose schema does not compile, next to
// a valid one, makes the outcome unchecked, in a stream too.
func TestUncheckedIsNeverValid(t *testing.T) {
	req := `{"model":"m","messages":[],"tools":[` +
		`{"type":"function","function":{"name":"good","parameters":{"type":"object"}}},` +
		`{"type":"function","function":{"name":"bad","parameters":{"type":"object","properties":{"s":{"pattern":"(\\p{L}|\\p{N}){500}z"}}}}}]}`
	up := newUpstream(t, reply{Body: toolReply(`{}`, namedCall("c1", "good", `{}`), namedCall("c2", "bad", `{"s":"x"}`))})
	srv, _ := guard(t, up, nil)
	resp, _ := post(t, srv, "/v1/chat/completions", req)
	if got := header(resp, "X-Toolguard-Outcome"); got != "unchecked" {
		t.Errorf("outcome %q, want unchecked", got)
	}
	stream := chunk(callStart(0, 0, "c1", "good")) + chunk(argsDelta(0, 0, `{}`)) +
		chunk(callStart(0, 1, "c2", "bad")) + chunk(argsDelta(0, 1, `{"s":"x"}`)) + chunk(finish(0, "tool_calls")) + done
	up2 := newUpstream(t, reply{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: stream})
	srv2, _ := guard(t, up2, nil)
	_, body := post(t, srv2, "/v1/chat/completions", strings.TrimSuffix(req, "}")+`,"stream":true}`)
	if !strings.Contains(string(body), ": toolguard outcome=unchecked") {
		t.Errorf("the stream does not say unchecked: %s", body)
	}
}

// TestErrorAmplificationIsBounded: every enum error used to repeat the whole
// enum for every failing value, in the 400 body and in each re-ask: a 30 KB
// request made a 68 MB response. Errors per call, their length, the
// feedback and the failure body are bounded now.
func TestErrorAmplificationIsBounded(t *testing.T) {
	var enum []string
	for i := range 300 {
		enum = append(enum, fmt.Sprintf(`"v%04d-%s"`, i, strings.Repeat("x", 60)))
	}
	schema := `{"type":"object","additionalProperties":{"enum":[` + strings.Join(enum, ",") + `]}}`
	req := toolRequest("f", schema)
	var args []string
	for i := range 60 { // 20 calls of 60 keys stay within the request's validation budget
		args = append(args, fmt.Sprintf(`"k%d":"nope"`, i))
	}
	var calls []string
	for i := range 20 {
		calls = append(calls, namedCall(fmt.Sprint("c", i), "f", `{`+strings.Join(args, ",")+`}`))
	}
	up := newUpstream(t, reply{Body: toolReply(`{}`, calls...)})
	srv, _ := guard(t, up, func(c *policy.Config) { c.MaxReasks = 1 })
	resp, body := post(t, srv, "/v1/chat/completions", req)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d", resp.StatusCode)
	}
	t.Logf("request %d bytes, reply %d bytes, failure body %d bytes, re-ask %d bytes", len(req), len(toolReply(`{}`, calls...)), len(body), len(up.requests()[1].Body))
	if len(body) > 256<<10 {
		t.Errorf("a %d-byte failure body", len(body))
	}
	sent := up.requests()[1].Body
	if extra := len(sent) - len(req) - len(toolReply(`{}`, calls...)); extra > 128<<10 {
		t.Errorf("the re-ask adds %d bytes of feedback", extra)
	}
}

// TestHugeExponentsAreInvalid: 1e999999 in the arguments cost ~20 ms per
// comparison in the validator; it is now an invalid value, re-asked with a
// clear error, and in a schema it makes the schema unchecked.
func TestHugeExponentsAreInvalid(t *testing.T) {
	schema := `{"type":"object","properties":{"n":{"type":"number","minimum":0,"maximum":10}},"required":["n"]}`
	up := newUpstream(t, reply{Body: toolReply(`{}`, namedCall("c1", "f", `{"n":1e999999}`))}, reply{Body: toolReply(`{}`, namedCall("c2", "f", `{"n":5}`))})
	srv, _ := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/chat/completions", toolRequest("f", schema))
	if resp.StatusCode != 200 || header(resp, "X-Toolguard-Outcome") != "reasked" {
		t.Fatalf("status %d outcome %q: %s", resp.StatusCode, header(resp, "X-Toolguard-Outcome"), body)
	}
	if reask := string(up.requests()[1].Body); !strings.Contains(reask, "outside the range of a 64-bit") {
		t.Errorf("the re-ask does not say why: %.500s", reask)
	}
	up2 := newUpstream(t, reply{Body: toolReply(`{}`, namedCall("c1", "f", `{"n":5}`))})
	srv2, _ := guard(t, up2, nil)
	resp2, _ := post(t, srv2, "/v1/chat/completions", toolRequest("f", `{"type":"object","properties":{"n":{"enum":[1e999999,1]}}}`))
	if got := header(resp2, "X-Toolguard-Outcome"); got != "unchecked" {
		t.Errorf("a schema with 1e999999: outcome %q, want unchecked", got)
	}
}

// TestLargeValidArgumentsAreValidated: a valid call over the mending limit
// (1 MiB) was re-asked twice and refused; it is validated and passes.
func TestLargeValidArgumentsAreValidated(t *testing.T) {
	args := `{"text":"` + strings.Repeat("a", 1<<20+100) + `"}`
	call := toolReply(`{}`, namedCall("c1", "f", args))
	up := newUpstream(t, reply{Body: call})
	srv, _ := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/chat/completions", toolRequest("f", `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`))
	if resp.StatusCode != 200 || header(resp, "X-Toolguard-Outcome") != "valid" || string(body) != call {
		t.Errorf("status %d outcome %q", resp.StatusCode, header(resp, "X-Toolguard-Outcome"))
	}
	if n := len(up.requests()); n != 1 {
		t.Errorf("%d upstream requests, want 1", n)
	}
}

// TestManySubschemasAreNotCompiled: the compiler's work is quadratic in the
// number of subschemas (a 240 KB schema of 80,000 empty ones took more than a
// minute and 97 MB). A schema over the node limit is not compiled; its call
// passes as a JSON object, reported unchecked, and the schema cache holds
// only the failure.
func TestManySubschemasAreNotCompiled(t *testing.T) {
	schema := `{"type":"object","allOf":[` + strings.TrimSuffix(strings.Repeat(`{},`, 10_000), ",") + `]}`
	call := toolReply(`{"total_tokens":1}`, namedCall("c1", "f", `{"a":5}`))
	up := newUpstream(t, reply{Body: call})
	srv, logs := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/chat/completions", toolRequest("f", schema))
	if resp.StatusCode != 200 || string(body) != call {
		t.Fatalf("status %d body %.300s", resp.StatusCode, body)
	}
	if got := header(resp, "X-Toolguard-Outcome"); got != "unchecked" {
		t.Errorf("outcome %q, want unchecked", got)
	}
	if !strings.Contains(logs.String(), "more than 3000 objects and arrays") {
		t.Errorf("no log line says why the schema was not compiled:\n%.2000s", logs.String())
	}
}

// TestSchemaCacheIsBoundedByCompiledSize: a schema's compiled size follows
// its subschemas, not its bytes (9 KB of 2,900 empty subschemas holds
// 3.6 MB compiled, where the cache used to count 64 times its bytes). Twenty
// such schemas against a cache of 16 MiB leave the heap grown by no more than
// twice that, measured with runtime.MemStats.
func TestSchemaCacheIsBoundedByCompiledSize(t *testing.T) {
	const cacheBytes = 16 << 20
	call := toolReply(`{"total_tokens":1}`, namedCall("c1", "f", `{"a":5}`))
	var replies []reply
	for range 20 {
		replies = append(replies, reply{Body: call})
	}
	up := newUpstream(t, replies...)
	srv, _ := guard(t, up, func(c *policy.Config) { c.SchemaCacheBytes = cacheBytes })
	before := liveHeap()
	for i := range 20 {
		schema := fmt.Sprintf(`{"type":"object","description":"%d","allOf":[`, i) + strings.TrimSuffix(strings.Repeat(`{},`, 2_900), ",") + `]}`
		resp, _ := post(t, srv, "/v1/chat/completions", toolRequest("f", schema))
		if got := header(resp, "X-Toolguard-Outcome"); resp.StatusCode != 200 || got != "valid" {
			t.Fatalf("schema %d: status %d, outcome %q", i, resp.StatusCode, got)
		}
	}
	if grown := int64(liveHeap()) - int64(before); grown > 2*cacheBytes {
		t.Errorf("the heap grew by %d bytes for a schema cache of %d", grown, cacheBytes)
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestDeepEnumComparisonsAreCounted: the validator compares a value with
// every enum entry member by member, numbers as exact rationals; an enum of
// 60 objects of 400 numbers cost 3.6 s for 216 array items while the budget
// counted one step per entry. Each nested value of an enum now counts, so
// 20 items are over the budget: the call passes unchecked, without a re-ask.
func TestDeepEnumComparisonsAreCounted(t *testing.T) {
	var keys []string
	for i := range 400 {
		keys = append(keys, fmt.Sprintf(`"k%d":%d`, i, i))
	}
	obj := "{" + strings.Join(keys, ",") + "}"
	var entries []string
	for i := range 60 {
		entries = append(entries, strings.Replace(obj, `"k399":399`, fmt.Sprintf(`"k399":%d`, 1000+i), 1))
	}
	schema := `{"type":"object","properties":{"a":{"type":"array","items":{"enum":[` + strings.Join(entries, ",") + `]}}}}`
	args := `{"a":[` + strings.TrimSuffix(strings.Repeat(obj+",", 20), ",") + `]}`
	call := toolReply(`{"total_tokens":1}`, namedCall("c1", "f", args))
	up := newUpstream(t, reply{Body: call}, reply{Body: call}, reply{Body: call})
	srv, _ := guard(t, up, nil)
	resp, body := post(t, srv, "/v1/chat/completions", toolRequest("f", schema))
	if resp.StatusCode != 200 || string(body) != call {
		t.Fatalf("status %d body %.300s", resp.StatusCode, body)
	}
	if got := header(resp, "X-Toolguard-Outcome"); got != "unchecked" {
		t.Errorf("outcome %q, want unchecked", got)
	}
	if n := len(up.requests()); n != 1 {
		t.Errorf("%d upstream requests, want 1", n)
	}
}
