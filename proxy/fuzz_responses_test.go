package proxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/internal/fake"
	"github.com/toolguard/toolguard/internal/faulty"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// responsesExchange is fuzzExchange for a Responses request declaring click.
func responsesExchange(t testing.TB, onFailure policy.OnFailure) *exchange {
	ex := fuzzExchange(t, onFailure)
	tools := gjson.Get(faulty.ClickTools, "0.function")
	body := []byte(`{"model":"m","input":"go","stream":true,"tools":[{"type":"function","name":"click","parameters":` + tools.Get("parameters").Raw + `}]}`)
	r := httptest.NewRequest("POST", "/v1/responses", bytes.NewReader(body))
	pol, perr := ex.h.requestPolicyOf(r)
	if perr != nil {
		t.Fatal(perr)
	}
	return ex.h.newExchange(context.Background(), responsesFormat, openBody(responsesFormat, body), pol)
}

// responsesSeeds are streams of the fake model, and the ways providers
// get them wrong.
func responsesSeeds() []string {
	click := func(id, args string) fake.Call { return fake.Call{ID: id, Name: "click", Args: args} }
	var out []string
	for _, r := range []fake.Reply{
		{Calls: []fake.Call{click("c1", `{"selector":"#a"}`)}},
		{Text: "ok", Calls: []fake.Call{click("c1", `{"Selector":"#a"}`), click("c2", `{}`)}},
		{Text: "just text"},
		{Calls: []fake.Call{{ID: "c1", Name: "type", Args: `{}`}}},
		{Text: "Clicking.\n<tool_call>{\"name\": \"click\", \"arguments\": {\"selector\": \"#a\"}}</tool_call>"},
		{Text: "<tool_call>{\"name\": \"click\", \"arguments\": {\"selector\": }</tool_call>"},
	} {
		evs := fake.Responses.Events(r, 5)
		out = append(out, strings.Join(evs, ""))
		// No argument deltas; no output_item.done; CRLF framing.
		var noDelta, noDone []string
		for _, ev := range evs {
			if !strings.Contains(ev, "arguments.delta") {
				noDelta = append(noDelta, ev)
			}
			if !strings.Contains(ev, "output_item.done") {
				noDone = append(noDone, ev)
			}
		}
		out = append(out, strings.Join(noDelta, ""), strings.Join(noDone, ""), strings.ReplaceAll(strings.Join(evs, ""), "\n", "\r\n"))
	}
	return out
}

func FuzzResponsesStream(f *testing.F) {
	for _, s := range responsesSeeds() {
		f.Add([]byte(s), uint8(13))
	}
	f.Add([]byte("event: response.created\ndata: {\"type\":\"response.output_item.added\"}\n\n"), uint8(3))
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		for _, onFailure := range []policy.OnFailure{policy.FailError, policy.FailDrop} {
			ex := responsesExchange(t, onFailure)
			resp := &http.Response{Request: sentUpstream, Header: http.Header{}, Body: io.NopCloser(&chunkedReader{in, int(step) + 1})}
			ex.stream(resp)
			out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			checkResponsesStream(t, out)
		}
	})
}

// checkResponsesStream reads a stream as a Responses client does and checks
// what toolguard promises of it, unless it ends in an error event: every
// data is JSON or [DONE]; sequence numbers rise by one; an added item is the
// next of the output; every function_call done is a valid click call; the
// completed response holds exactly the items done.
func checkResponsesStream(t *testing.T, out []byte) {
	var split wire.Splitter
	split.Feed(out)
	split.End()
	seq := int64(-1)
	var items []string
	var completed gjson.Result
	for {
		ev, more := split.Next()
		if !more {
			break
		}
		raw, ok := wire.EventData(ev)
		data := string(raw)
		if !ok || data == "[DONE]" {
			continue
		}
		if !gjson.Valid(data) {
			t.Fatalf("data event is not JSON: %q", data)
		}
		e := gjson.Parse(data)
		typ := e.Get("type").Str
		if typ == "error" || typ == "response.failed" || e.Get("error").IsObject() && typ == "" {
			return
		}
		if sn := e.Get("sequence_number"); sn.Exists() {
			if sn.Int() != seq+1 && seq >= 0 {
				t.Fatalf("sequence_number %s after %d", sn.Raw, seq)
			}
			seq = sn.Int()
		}
		switch typ {
		case "response.output_item.added":
			if i := e.Get("output_index").Int(); i != int64(len(items)) {
				t.Fatalf("item added at %d, want %d", i, len(items))
			}
			items = append(items, "")
		case "response.output_item.done":
			i := e.Get("output_index").Int()
			if i < 0 || i >= int64(len(items)) {
				t.Fatalf("item done at %d, never added", i)
			}
			it := e.Get("item")
			items[i] = it.Raw
			if it.Get("type").Str == "function_call" {
				obj := `{"function":{"name":` + wire.Quote(it.Get("name").Str) + `,"arguments":` + wire.Quote(it.Get("arguments").Str) + `}}`
				if !validClick(gjson.Parse(obj), false) {
					t.Fatalf("invalid call released: %s", it.Raw)
				}
			}
		case "response.completed", "response.incomplete":
			completed = e.Get("response")
		}
	}
	if completed.Exists() && completed.Get("output").IsArray() {
		var got []string
		completed.Get("output").ForEach(func(_, it gjson.Result) bool {
			got = append(got, it.Raw)
			return true
		})
		if len(items) > 0 && len(got) != len(items) {
			t.Fatalf("response.completed's output has %d items, %d were added", len(got), len(items))
		}
		for i, it := range items {
			if it != "" && i < len(got) && got[i] != it {
				t.Fatalf("response.completed's item %d is %s, the item done was %s", i, got[i], it)
			}
		}
	}
}

func FuzzResponsesReply(f *testing.F) {
	click := func(id, args string) fake.Call { return fake.Call{ID: id, Name: "click", Args: args} }
	for _, r := range []fake.Reply{
		{Calls: []fake.Call{click("c1", `{"selector":"#a"}`)}},
		{Text: "ok", Calls: []fake.Call{click("c1", `"#a"`), click("c2", `{}`)}},
		{Text: "<tool_call>{\"name\": \"click\", \"arguments\": {\"Selector\": \"#a\"}}</tool_call>"},
	} {
		f.Add([]byte(fake.Responses.JSON(r)))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if openBody(responsesFormat, []byte(`{"tools":[{"type":"function","name":"f"}]}`)).ReadReply(in, wire.Repeats{}) != nil {
			return // inspect answers 502 before the ladder sees it
		}
		for _, onFailure := range []policy.OnFailure{policy.FailError, policy.FailDrop} {
			ex := responsesExchange(t, onFailure)
			status, out, err := ex.run(in)
			if ae, ok := err.(*apiError); ok && ae.Status == 502 {
				continue // refused, in the error shape
			}
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if !gjson.ValidBytes(out) {
				t.Fatalf("output is not JSON: %s", out)
			}
			if status != 0 {
				if code := gjson.GetBytes(out, "error.code").Str; code != "tool_call_invalid" && code != "output_invalid" {
					t.Fatalf("status %d without the error shape: %s", status, out)
				}
				continue
			}
			if o := ex.x.Outcome; (o == "valid" || o == "none") && !bytes.Equal(out, in) {
				t.Fatalf("outcome %s but the reply changed", o)
			}
			gjson.GetBytes(out, "output").ForEach(func(_, it gjson.Result) bool {
				if it.Get("type").Str == "function_call" {
					obj := `{"function":{"name":` + wire.Quote(it.Get("name").Str) + `,"arguments":` + wire.Quote(it.Get("arguments").Str) + `}}`
					if !validClick(gjson.Parse(obj), false) {
						t.Fatalf("invalid call reached the client: %s", it.Raw)
					}
				}
				return true
			})
		}
	})
}
