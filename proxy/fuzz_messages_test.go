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

// messagesExchange is fuzzExchange for a Messages request declaring click.
func messagesExchange(t testing.TB, onFailure policy.OnFailure, stream bool) *exchange {
	ex := fuzzExchange(t, onFailure)
	params := gjson.Get(faulty.ClickTools, "0.function.parameters").Raw
	body := []byte(`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"go"}],"stream":` + map[bool]string{true: "true", false: "false"}[stream] +
		`,"tools":[{"name":"click","input_schema":` + params + `}]}`)
	r := httptest.NewRequest("POST", "/v1/messages", bytes.NewReader(body))
	pol, perr := ex.h.requestPolicyOf(r)
	if perr != nil {
		t.Fatal(perr)
	}
	return ex.h.newExchange(context.Background(), messagesFormat, openBody(messagesFormat, body), pol)
}

// messagesClickValid reports whether a tool_use block names click with an
// input that validates.
func messagesClickValid(b gjson.Result) bool {
	in := b.Get("input")
	if !in.IsObject() {
		return false
	}
	return validClick(gjson.Parse(`{"function":{"name":`+wire.Quote(b.Get("name").Str)+`,"arguments":`+wire.Quote(in.Raw)+`}}`), false)
}

func FuzzMessagesReply(f *testing.F) {
	click := func(id, args string) fake.Call { return fake.Call{ID: id, Name: "click", Args: args} }
	for _, r := range []fake.Reply{
		{Calls: []fake.Call{click("t1", `{"selector":"#a"}`)}},
		{Text: "ok", Calls: []fake.Call{click("t1", `"#a"`), click("t2", `{}`)}},
		{Calls: []fake.Call{click("t1", `{"selector":"#a"`)}},
		{Text: "just text"},
		{Text: "Sure.\n<tool_call>{\"name\":\"click\",\"arguments\":{\"Selector\":\"#a\"}}</tool_call>"},
		{Text: "<tool_call>{\"name\":\"click\",\"arguments\":{}}</tool_call>"},
	} {
		f.Add([]byte(fake.Messages.JSON(r)))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if openBody(messagesFormat, []byte(`{"tools":[{"name":"f"}]}`)).ReadReply(in, wire.Repeats{}) != nil {
			return // inspect answers 502 before the ladder sees it
		}
		for _, onFailure := range []policy.OnFailure{policy.FailError, policy.FailDrop} {
			ex := messagesExchange(t, onFailure, false)
			status, out, err := ex.run(in)
			if ae, ok := err.(*apiError); ok && ae.Status == 502 {
				continue // refused
			}
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if !gjson.ValidBytes(out) {
				t.Fatalf("output is not JSON: %s", out)
			}
			if status != 0 {
				if gjson.GetBytes(out, "type").Str != "error" || gjson.GetBytes(out, "error.code").Str != "tool_call_invalid" {
					t.Fatalf("status %d without the error shape: %s", status, out)
				}
				continue
			}
			if o := ex.x.Outcome; (o == "valid" || o == "none") && !bytes.Equal(out, in) {
				t.Fatalf("outcome %s but the reply changed", o)
			}
			calls := 0
			gjson.GetBytes(out, "content").ForEach(func(_, b gjson.Result) bool {
				if b.Get("type").Str == "tool_use" {
					calls++
					if !messagesClickValid(b) {
						t.Fatalf("invalid call reached the client: %s", b.Raw)
					}
				}
				return true
			})
			if ex.x.Outcome != "none" && ex.x.Outcome != "valid" && (calls > 0) != (gjson.GetBytes(out, "stop_reason").Str == "tool_use") {
				t.Fatalf("%d calls left, stop_reason %s", calls, gjson.GetBytes(out, "stop_reason").Raw)
			}
		}
	})
}

func FuzzMessagesRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"click","input":{}}]}],"tools":[{"name":"click","input_schema":{"type":"object"}}]}`))
	f.Add([]byte(`{"model":"m","messages":[],"tools":[{"type":"web_search_20250305","name":"web_search"},{"name":"a"}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"a","input":"{\"x\": 1,"}]}],"tools":[{"name":"a"}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := messagesFormat.read(in, nil, nil, wire.Repeats{})
		if err != nil {
			if _, ok := err.(*apiError); !ok {
				t.Fatalf("read: %T %v", err, err)
			}
			return
		}
		if q := messagesFormat.open(m, nil, true); q != nil && q.Tools().Len() == 0 {
			t.Fatal("a request with no custom tools is opened")
		}
		out, edits, err := messagesFormat.mendHistory(m, nil)
		switch {
		case err != nil:
		case len(edits) == 0 && !bytes.Equal(out, in):
			t.Fatalf("no edit, but the body changed:\n%s\n%s", in, out)
		case !gjson.ValidBytes(out):
			t.Fatalf("the mended body is not JSON: %s", out)
		}
	})
}

func FuzzMessagesStream(f *testing.F) {
	click := func(id, args string) fake.Call { return fake.Call{ID: id, Name: "click", Args: args} }
	for _, r := range []fake.Reply{
		{Calls: []fake.Call{click("t1", `{"selector":"#a"}`)}},
		{Text: "ok", Calls: []fake.Call{click("t1", `{"Selector":"#a"}`), click("t2", `{}`)}},
		{Text: "just text"},
		{Calls: []fake.Call{{ID: "t1", Name: "type", Args: `{}`}}},
		{Text: "Sure.\n<tool_call>{\"name\":\"click\",\"arguments\":{\"Selector\":\"#a\"}}</tool_call>\nDone."},
		{Text: "[TOOL_CALLS][{\"name\":\"click\",\"arguments\":{}}]"},
	} {
		s := strings.Join(fake.Messages.Events(r, 5), "")
		f.Add([]byte(s), uint8(13))
		f.Add([]byte(strings.ReplaceAll(s, "\n", "\r\n")), uint8(7))
	}
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		for _, onFailure := range []policy.OnFailure{policy.FailError, policy.FailDrop} {
			ex := messagesExchange(t, onFailure, true)
			resp := &http.Response{Request: sentUpstream, Header: http.Header{}, Body: io.NopCloser(&chunkedReader{in, int(step) + 1})}
			ex.stream(resp)
			out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			checkMessagesStream(t, out)
		}
	})
}

// checkMessagesStream reads a stream as the SDKs do and checks what
// toolguard promises of it, unless it ends in an error event: blocks
// numbered in order, and every tool_use block the client assembles names
// click with a valid input.
func checkMessagesStream(t *testing.T, out []byte) {
	var sp wire.Splitter
	sp.Feed(out)
	sp.End()
	var blocks []gjson.Result
	var inputs []string
	var failed bool
	for {
		ev, ok := sp.Next()
		if !ok {
			break
		}
		data, ok := wire.EventData(ev)
		if !ok {
			continue
		}
		e := gjson.ParseBytes(data)
		i := int(e.Get("index").Int())
		switch e.Get("type").Str {
		case "error":
			failed = true
		case "content_block_start":
			if i != len(blocks) {
				t.Fatalf("block %d starts where %d is due:\n%s", i, len(blocks), out)
			}
			blocks = append(blocks, e.Get("content_block"))
			inputs = append(inputs, "")
		case "content_block_delta":
			if i < 0 || i >= len(blocks) {
				t.Fatalf("a delta for block %d of %d:\n%s", i, len(blocks), out)
			}
			inputs[i] += e.Get("delta.partial_json").Str
		}
	}
	if failed {
		return
	}
	for i, b := range blocks {
		if b.Get("type").Str != "tool_use" {
			continue
		}
		in := b.Get("input").Raw
		if inputs[i] != "" {
			in = inputs[i]
		}
		obj := gjson.Parse(`{"type":"tool_use","name":` + wire.Quote(b.Get("name").Str) + `,"input":` + in + `}`)
		if !gjson.Valid(in) || !messagesClickValid(obj) {
			t.Fatalf("invalid call reached the client: %s %s\n%s", b.Raw, in, out)
		}
	}
}
