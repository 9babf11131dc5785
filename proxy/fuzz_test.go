package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/internal/faulty"
	"github.com/toolguard/toolguard/internal/recording"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy/internal/chat"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/ladder/historytest"
	"github.com/toolguard/toolguard/proxy/internal/wire"
	"github.com/toolguard/toolguard/validate"
)

// The fuzz targets feed untrusted bytes to each parser and check the
// contract, not only the absence of panics: whatever reaches the client is
// well-formed, and every tool call in a successful answer is valid.

var clickSchema = func() *validate.Schema {
	s, err := validate.Compile([]byte(`{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"],"additionalProperties":false}`))
	if err != nil {
		panic(err)
	}
	return s
}()

// fuzzHandlers holds one handler per failure behaviour, built once: a
// handler is costly to build (metrics registry, collectors) and reusable.
var fuzzHandlers sync.Map

// fuzzExchange is an exchange for a request declaring click, with no
// re-asks, so nothing reaches the network.
func fuzzExchange(t testing.TB, onFailure policy.OnFailure) *exchange {
	hv, ok := fuzzHandlers.Load(onFailure)
	if !ok {
		cfg := policy.Default()
		cfg.MaxReasks = 0
		cfg.OnFailure = onFailure
		cfg.MaxResponseBytes = 1 << 20
		h, err := New(Options{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		hv, _ = fuzzHandlers.LoadOrStore(onFailure, h)
	}
	h := hv.(*Handler)
	body := []byte(`{"model":"m","messages":[],"stream":true,"tools":` + faulty.ClickTools + `}`)
	r := httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader(body))
	pol, perr := h.requestPolicyOf(r)
	if perr != nil {
		t.Fatal(perr)
	}
	return h.newExchange(context.Background(), chatFormat, openBody(chatFormat, body), pol)
}

// validClick reports whether a call object names click with valid arguments.
func validClick(c gjson.Result, legacy bool) bool {
	fn := c.Get("function")
	if legacy {
		fn = c
	}
	if fn.Get("name").String() != "click" || fn.Get("arguments").Type != gjson.String {
		return false
	}
	_, errs := clickSchema.ValidateJSON([]byte(fn.Get("arguments").Str))
	return errs == nil
}

func seedRecordings(f *testing.F, add func(string)) {
	for _, name := range []string{"chat-tools", "chat-parallel-tools", "chat-streaming", "chat-streaming-detailed-usage", "chat-basic"} {
		in, err := recording.Load("../testdata/openai-recordings", name)
		if err != nil {
			f.Fatal(err)
		}
		add(in[0].Response.Body)
	}
	for _, kind := range []string{"valid", "repairable", "never", "text"} {
		add(faulty.Completion(map[string]string{"valid": `{"selector":"#a"}`, "repairable": `{"Selector": "x"}`, "never": `{}`, "text": ""}[kind]))
		add(strings.Join(faulty.Stream(`{"selector": "#a"`), ""))
	}
}

// FuzzSSESplitter: a Splitter fed any bytes, in pieces of any size, returns
// the events and keeps the bytes that splitAll finds, which reassemble to
// the input; each event's data and name are those eventDataPlain reads.
func FuzzSSESplitter(f *testing.F) {
	seedRecordings(f, func(s string) { f.Add([]byte(s), uint8(7)) })
	f.Add([]byte("data: a\r\n\r\ndata: b\n\n: c\n\n"), uint8(1))
	for _, s := range []string{
		"data: a\r\n\r\ndata: b\r\rdata: c\n\r\n: d\r",
		"event: x\ndata: {}\n\ndata: y\rdata: z\r\r\n\n",
		"event: a\rdata: b\r\revent:c\r\ndata\r\n\r\n",
		strings.Repeat("x\r", 40) + "\n" + strings.Repeat("a", 300) + "\r\n\n",
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(6))
		f.Add([]byte(s), uint8(255))
	}
	f.Add([]byte("data: aaaaaaaa\n\ndata: b\r\rdata: c\n\n"), uint8(255))
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		want, rest := splitAll(in)
		var s wire.Splitter
		var got [][]byte
		n := int(step) + 1
		for i := 0; i < len(in); i += n {
			s.Feed(in[i:min(i+n, len(in))])
			for {
				ev, ok := s.Next()
				if !ok {
					break
				}
				got = append(got, bytes.Clone(ev))
			}
		}
		if !bytes.Equal(append(bytes.Join(got, nil), s.Rest()...), in) {
			t.Fatalf("events do not reassemble to the input")
		}
		if len(got) != len(want) || !bytes.Equal(s.Rest(), rest) {
			t.Fatalf("%q in pieces of %d: %q, %q left; want %q, %q left", in, n, got, s.Rest(), want, rest)
		}
		for i, ev := range got {
			if !bytes.Equal(ev, want[i]) {
				t.Fatalf("%q in pieces of %d: event %d %q, want %q", in, n, i, ev, want[i])
			}
			d, ok := wire.EventData(ev)
			name, named := wire.EventName(ev)
			wd, wok, wname, wnamed := eventDataPlain(ev)
			if string(d) != string(wd) || ok != wok || string(name) != string(wname) || named != wnamed {
				t.Fatalf("%q: data %q, %v, name %q, %v; want %q, %v, %q, %v", ev, d, ok, name, named, wd, wok, wname, wnamed)
			}
		}
	})
}

// splitAll is what a Splitter fed in, whole or in any pieces, returns
// before End: the events (each up to and with the blank line that ends
// it, lines ending in LF, CRLF or CR) and the bytes left; read with
// bytes.IndexAny, the plain reading the Splitter's searches must agree
// with. A CR at the very end may be half of a CRLF: no line ends there.
func splitAll(in []byte) (evs [][]byte, rest []byte) {
	start, lineStart, i := 0, 0, 0
	for {
		j := bytes.IndexAny(in[i:], "\r\n")
		if j < 0 {
			break
		}
		end := i + j
		after := end + 1
		if in[end] == '\r' {
			if after == len(in) {
				break
			}
			if in[after] == '\n' {
				after++
			}
		}
		if end == lineStart {
			evs = append(evs, in[start:after])
			start = after
		}
		lineStart, i = after, after
	}
	return evs, in[start:]
}

// eventDataPlain is EventData read with bytes.IndexAny, line by line: the
// plain reading the searches of EventData and EventName must agree with.
func eventDataPlain(ev []byte) (data []byte, ok bool, name []byte, named bool) {
	var vals [][]byte
	for len(ev) > 0 {
		line := ev
		ev = nil
		if i := bytes.IndexAny(line, "\r\n"); i >= 0 {
			n := 1
			if line[i] == '\r' && i+1 < len(line) && line[i+1] == '\n' {
				n = 2
			}
			line, ev = line[:i], line[i+n:]
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			vals = append(vals, bytes.TrimPrefix(v, []byte(" ")))
		} else if string(line) == "data" {
			vals = append(vals, nil)
		} else if v, ok := bytes.CutPrefix(line, []byte("event:")); ok && !named {
			name, named = bytes.TrimPrefix(v, []byte(" ")), true
		}
	}
	return bytes.Join(vals, []byte("\n")), len(vals) > 0, name, named
}

// chunkedReader returns its input in pieces of the given size.
type chunkedReader struct {
	b []byte
	n int
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p, c.b[:min(c.n, len(c.b))])
	c.b = c.b[k:]
	return k, nil
}

func FuzzStream(f *testing.F) {
	seedRecordings(f, func(s string) { f.Add([]byte(s), uint8(13)) })
	// Streams that clients read differently from one another.
	ev := func(delta string) string {
		return `data: {"choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}` + "\n\n"
	}
	end := `data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\ndata: [DONE]\n\n"
	valid := ev(`{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"click","arguments":"{\"selector\":\"#a\"}"}}]}`)
	f.Add([]byte(valid+"\ufeff"+ev(`{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"click","arguments":"{}"}}]}`)+end), uint8(13))
	f.Add([]byte(ev(`{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"cl","arguments":""}}]}`)+
		ev(`{"tool_calls":[{"index":0,"function":{"name":"ick","arguments":"{\"selector\":\"#a\"}"}}]}`)+end), uint8(13))
	// Events that repeat the one before in all but the values of strings
	// and numbers, as text deltas do (read without walking them again: chat's
	// textPlan), with values that change what is done with them.
	text := func(index, content string) string {
		return `data: {"id":"c","choices":[{"index":` + index + `,"delta":{"content":` + content + `},"finish_reason":null}]}` + "\n\n"
	}
	f.Add([]byte(text("0", `"Hi"`)+text("0", `" th\"e\u00e9re"`)+text("0", `""`)+text("0", `"\n\u2028✓"`)+
		`data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n"), uint8(255))
	f.Add([]byte(text("0", `"a"`)+text("1", `"b"`)+text("0", `"c"`)+text("1", `"d"`)+text("2", `"e"`)+
		`data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n"+
		`data: {"id":"c","choices":[{"index":1,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n"), uint8(255))
	f.Add([]byte(text("0", `"a"`)+text("0", `"b"`)+text("-1", `"c"`)+"data: [DONE]\n\n"), uint8(255))
	f.Add([]byte(text("0", `"a"`)+text("0", `"b"`)+text("1.0", `"c"`)+"data: [DONE]\n\n"), uint8(255))
	var frags []string
	for c := range strings.SplitSeq(`<tool_call>{"name":"click","arguments":{"selector":"#a"}}</tool_call>`, "") {
		frags = append(frags, text("0", wire.Quote(c)))
	}
	f.Add([]byte(strings.Join(frags, "")+`data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n"), uint8(255))
	f.Add([]byte(text("0", `"I"`)+`data: {"id":"c","choices":[{"index":0,"delta":{"content":null,"refusal":"no"},"finish_reason":null}]}`+"\n\n"+
		text("0", `"x"`)+text("0", `"y"`)+"data: [DONE]\n\n"), uint8(255))
	// The same for a call's arguments, in fragments, of calls in turn and
	// of choices in turn.
	args := func(choice, call, fragment string) string {
		return `data: {"id":"c","choices":[{"index":` + choice + `,"delta":{"tool_calls":[{"index":` + call +
			`,"function":{"arguments":` + wire.Quote(fragment) + `}}]},"finish_reason":null}]}` + "\n\n"
	}
	start := func(choice, call, id string) string {
		return `data: {"id":"c","choices":[{"index":` + choice + `,"delta":{"tool_calls":[{"index":` + call +
			`,"id":"` + id + `","type":"function","function":{"name":"click","arguments":""}}]},"finish_reason":null}]}` + "\n\n"
	}
	finish := func(choice string) string {
		return `data: {"id":"c","choices":[{"index":` + choice + `,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n"
	}
	f.Add([]byte(start("0", "0", "a")+args("0", "0", `{"sel`)+args("0", "0", `ector":`)+args("0", "0", `"#\u00e9 \"a\""`)+args("0", "0", `}`)+
		finish("0")+"data: [DONE]\n\n"), uint8(255))
	f.Add([]byte(start("0", "0", "a")+start("0", "1", "b")+args("0", "0", `{"selector":`)+args("0", "1", `{"selector":`)+
		args("0", "0", `"#a"}`)+args("0", "1", `"#b"`)+args("0", "1", `}`)+finish("0")+"data: [DONE]\n\n"), uint8(255))
	f.Add([]byte(start("0", "0", "a")+start("1", "0", "b")+args("0", "0", `{"selector":`)+args("1", "0", `{"selector":`)+
		args("0", "0", `"#a"}`)+args("1", "0", `"#b"}`)+finish("0")+finish("1")+"data: [DONE]\n\n"), uint8(255))
	f.Add([]byte(start("0", "0", "a")+args("0", "0", `{"sel`)+args("0", "0", `ector"`)+args("0", "00", `:"#a"}`)+
		finish("0")+"data: [DONE]\n\n"), uint8(255))
	f.Add([]byte(start("0", "0", "a")+args("0", "0", `{"selector"`)+args("0", "0", `:"#a"}`)+args("0", "1", `{}`)+args("0", "0", `{}`)+
		finish("0")+"data: [DONE]\n\n"), uint8(255))
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		for _, onFailure := range []policy.OnFailure{policy.FailError, policy.FailDrop} {
			out, _ := fuzzStream(t, onFailure, in, int(step)+1)
			checkStreamOut(t, out)
			// The same events, none repeating the one before: each walked.
			if walked, ok := breakRepeats(in); ok {
				wout, woutcome := fuzzStream(t, onFailure, walked, len(walked)+1)
				wout = bytes.ReplaceAll(wout, []byte(breakMember), nil)
				whole, outcome := fuzzStream(t, onFailure, in, len(in)+1)
				if !bytes.Equal(whole, wout) && !bytes.Contains(whole, []byte(`"error"`)) || woutcome != outcome {
					t.Fatalf("read with every event walked:\n%s\noutcome %s; as read:\n%s\noutcome %s", wout, woutcome, whole, outcome)
				}
			}
		}
	})
}

// sentUpstream stands for the request a reply answers: a stream's errors
// read its context (see exchange.stream).
var sentUpstream = httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)

// fuzzStream is what a client gets of the stream in, read from the
// upstream step bytes at a time, and its outcome.
func fuzzStream(t *testing.T, onFailure policy.OnFailure, in []byte, step int) ([]byte, ladder.Outcome) {
	ex := fuzzExchange(t, onFailure)
	resp := &http.Response{Request: sentUpstream, Header: http.Header{}, Body: io.NopCloser(&chunkedReader{in, step})}
	ex.stream(resp)
	out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return out, ex.x.Outcome
}

// breakMember is what breakRepeats adds to every other event.
const breakMember = `"toolguard_walked":0,`

// breakRepeats returns the stream in with a member that chat ignores added
// to every other event whose data is an object of members, so that no
// event repeats the one before it and each is walked in full; false when
// in holds the member already, or a data line that is not an event's only
// one.
func breakRepeats(in []byte) ([]byte, bool) {
	if bytes.Contains(in, []byte(`toolguard_walked`)) {
		return nil, false
	}
	var s wire.Splitter
	s.Feed(in)
	s.End()
	var out []byte
	n := 0
	for {
		ev, ok := s.Next()
		if !ok {
			break
		}
		if rest, ok := bytes.CutPrefix(ev, []byte(`data: {"`)); ok && bytes.Count(ev, []byte("data")) == 1 {
			if n%2 == 1 {
				ev = append([]byte(`data: {`+breakMember+`"`), rest...)
			}
			n++
		}
		out = append(out, ev...)
	}
	return append(out, s.Rest()...), true
}

// checkStreamOut checks what a client would assemble from a stream: every
// data event is JSON or [DONE], and unless the stream ends in an error event,
// every tool call released is a valid click call, whether the client joins
// the parts of a name (openai-python, openai-go) or keeps the last one
// (openai-node), and whether it drops a byte order mark at the start of a
// line (openai-node) or not.
func checkStreamOut(t *testing.T, out []byte) {
	checkStreamRead(t, out)
	node := strings.NewReplacer("\n\ufeff", "\n", "\r\ufeff", "\r")
	checkStreamRead(t, []byte(node.Replace(strings.TrimPrefix(string(out), "\ufeff"))))
}

func checkStreamRead(t *testing.T, out []byte) {
	type acc struct{ name, last, args string }
	calls := map[string]*acc{}
	failed := false
	// Events as a client reads them: data lines joined, up to a blank line.
	var split wire.Splitter
	split.Feed(out)
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
		if gjson.Get(data, "error").Exists() {
			failed = true
			continue
		}
		gjson.Get(data, "choices").ForEach(func(_, c gjson.Result) bool {
			c.Get("delta.tool_calls").ForEach(func(_, d gjson.Result) bool {
				k := c.Get("index").String() + "/" + d.Get("index").String()
				if calls[k] == nil {
					calls[k] = &acc{}
				}
				n := d.Get("function.name").String()
				calls[k].name += n
				if n != "" {
					calls[k].last = n
				}
				calls[k].args += d.Get("function.arguments").String()
				return true
			})
			return true
		})
	}
	if failed {
		return
	}
	for k, c := range calls {
		for _, name := range []string{c.name, c.last} {
			obj := `{"function":{"name":` + wire.Quote(name) + `,"arguments":` + wire.Quote(c.args) + `}}`
			if !validClick(gjson.Parse(obj), false) {
				t.Fatalf("call %s released invalid: %s(%s)", k, name, c.args)
			}
		}
	}
}

func FuzzResponse(f *testing.F) {
	seedRecordings(f, func(s string) { f.Add([]byte(s)) })
	f.Fuzz(func(t *testing.T, in []byte) {
		if openBody(chatFormat, []byte(`{"tools":[{"function":{"name":"f"}}]}`)).ReadReply(in, wire.Repeats{}) != nil {
			return // inspect answers 502 before the ladder sees it
		}
		for _, onFailure := range []policy.OnFailure{policy.FailError, policy.FailDrop} {
			ex := fuzzExchange(t, onFailure)
			status, out, err := ex.run(in)
			if ae, ok := err.(*apiError); ok && ae.Status == 502 && (ae.Code == "upstream_malformed_reply" || ae.Code == "toolguard_write_failed") {
				continue // refused, in the error shape
			}
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if !gjson.ValidBytes(out) {
				t.Fatalf("output is not JSON: %s", out)
			}
			if status != 0 {
				if gjson.GetBytes(out, "error.code").String() != "tool_call_invalid" {
					t.Fatalf("status %d without the error shape: %s", status, out)
				}
				continue
			}
			gjson.GetBytes(out, "choices").ForEach(func(_, c gjson.Result) bool {
				msg := c.Get("message")
				calls := msg.Get("tool_calls")
				if calls.IsArray() && len(calls.Array()) > 0 {
					calls.ForEach(func(_, tc gjson.Result) bool {
						if typ := tc.Get("type"); (!typ.Exists() || typ.String() == "function") && !validClick(tc, false) {
							t.Fatalf("invalid call reached the client: %s", tc.Raw)
						}
						return true
					})
				} else if fc := msg.Get("function_call"); fc.IsObject() && !validClick(fc, true) {
					t.Fatalf("invalid function_call reached the client: %s", fc.Raw)
				}
				return true
			})
		}
	})
}

func FuzzRequest(f *testing.F) {
	seedRecordings(f, func(string) {})
	f.Add([]byte(`{"model":"m","tools":` + faulty.ClickTools + `,"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"click","arguments":"{\"selector\": \"#a\""}},{"function":{"arguments":{"a":1}}}]},{"role":"assistant","function_call":{"name":"click","arguments":"` + "```" + `json\n{}` + "```" + `"}}]}`))
	f.Add([]byte(`{"functions":[{"name":"f"}],"messages":[]}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","tool_calls":[{"function":{"arguments":"{'a':1}"}}]},{"role":"assistant","function_call":{"name":"f","arguments":"{'b':2}"},"tool_calls":[{"function":{"name":"g","arguments":"{'a':1}"}},{"function":{"name":"h"}},{"id":"x"}]},{"role":"assistant","tool_calls":[{"function":[{"arguments":"{'c':1}"}]},{"f\u0075nction":{"name":"g","\u0061rguments":"{'d':1}"}},{"function":{"x":{"arguments":"{'e':1}"}}}]}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","tool_calls":["x",1,[{"function":{"arguments":"{'a':1}"}}],{"function":{"arguments":"{'b':1}"}},{}]}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		chat.NewRequest(wire.ReadMembers(in, chat.Items), nil, true)
		m, err := chat.Read(in, nil, nil, wire.Repeats{})
		if err != nil {
			return // refused
		}
		// Through a history cache, the messages' calls are found where the
		// strict reading recorded them, not by walking each message: the
		// same request and edits.
		once, _ := historytest.BothWays(t, m, chat.MendHistory)
		if !gjson.ValidBytes(once) {
			t.Fatalf("mended request is not JSON: %s", once)
		}
		twice, edits, err := chat.MendHistory(wire.ReadMembers(once, chat.Items), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(once, twice) || len(edits) != 0 {
			t.Fatalf("mending twice changed the request again: %v", edits)
		}
	})
}

// declaredTransport reaches a real upstream and keeps, for the last request
// it carried, the body as sent and the functions toolguard declared for the
// exchange that sent it (nil when nothing was inspected).
type declaredTransport struct {
	next     http.RoundTripper
	mu       sync.Mutex
	sent     []byte
	declared []serverTool
}

func (d *declaredTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	var declared []serverTool
	if ex := exchangeFrom(r.Context()); ex != nil {
		for _, n := range ex.x.Tools.Names {
			var p any
			json.Unmarshal(ex.x.Tools.Lookup(n).Params, &p)
			declared = append(declared, serverTool{n, p})
		}
	}
	// The body as it goes on the wire: read here, replayed to the upstream.
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	d.mu.Lock()
	d.sent, d.declared = b, declared
	d.mu.Unlock()
	return d.next.RoundTrip(r)
}

// serverTool is a function as a server reads it: its name and its
// parameters, decoded.
type serverTool struct {
	name   string
	params any
}

// serverTools are the functions a server reads from a chat request, in
// order: Go's encoding/json into a struct (names in any letter case, the
// last of duplicates) and a last-wins map (Python's json, JavaScript's
// JSON.parse). Both read a tools entry's function whatever its type says,
// and parameters that are missing or null as an object schema, as
// toolguard does.
//
// A Go server that cannot decode the body refuses it (foldedOK false): that
// is no bypass.
func serverTools(body []byte) (folded []serverTool, foldedOK bool, exact []serverTool, ok bool) {
	type function struct {
		Name       string
		Parameters json.RawMessage
	}
	var v struct {
		Tools []struct {
			Function *function
		}
		Functions []function
	}
	decoded := func(raw []byte) any {
		var p any
		if len(raw) == 0 || string(raw) == "null" {
			raw = []byte(`{"type":"object"}`)
		}
		json.Unmarshal(raw, &p)
		return p
	}
	foldedOK = json.Unmarshal(body, &v) == nil
	for _, t := range v.Tools {
		if t.Function != nil && t.Function.Name != "" {
			folded = append(folded, serverTool{t.Function.Name, decoded(t.Function.Parameters)})
		}
	}
	if len(folded) == 0 {
		for _, f := range v.Functions {
			if f.Name != "" {
				folded = append(folded, serverTool{f.Name, decoded(f.Parameters)})
			}
		}
	}
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return nil, false, nil, false
	}
	list := func(field string, fn bool) {
		arr, _ := m[field].([]any)
		for _, e := range arr {
			o, _ := e.(map[string]any)
			if fn {
				o, _ = o["function"].(map[string]any)
			}
			if name, _ := o["name"].(string); name != "" {
				p := o["parameters"]
				if p == nil {
					p = decoded(nil)
				}
				exact = append(exact, serverTool{name, p})
			}
		}
	}
	list("tools", true)
	if len(exact) == 0 {
		list("functions", false)
	}
	return folded, foldedOK, exact, true
}

// FuzzStrictRequest posts fuzzed chat requests through the real handler:
// toolguard either refuses a body or forwards one whose tools it read
// exactly as a server reads them. A forwarded body whose servers find tools
// that toolguard did not declare would pass their calls unchecked.
func FuzzStrictRequest(f *testing.F) {
	fn := `{"type":"function","function":{"name":"click","parameters":{"type":"object"}}}`
	for _, seed := range []string{
		`{"model":"m","messages":[],"tools":[` + fn + `]}`,
		`{"model":"m","messages":[],"tools":[],"tools":[` + fn + `]}`,
		`{"model":"m","messages":[],"Tools":[` + fn + `]}`,
		`{"model":"m","messages":[],"tools":[` + fn + `]} {"tools":[]}`,
		"\xef\xbb\xbf{\"tools\":[" + fn + `]}`,
		`{"model":"m","temperature":NaN,"tools":[` + fn + `]}`,
		`{"model":"m","tools":[{"type":"custom","function":{"name":"x"}}]}`,
		`{"model":"m","functions":[{"name":"f"}],"tools":[]}`,
		`{"model":"m","tools":[{"function":{"name":"a","Name":"b"}}]}`,
		`{"model":"m","tools":[{"type":"function","function":{"name":"a"},"Function":{"name":"b"}}]}`,
		`{"model":"m","t\u006fols":[` + fn + `]}`,
		"{\"model\":\"m\",\"tool\u017f\":[" + fn + `]}`,
		`{"model":"m","tools":[{"type":"function","function":{"name":"click"}},` + fn + `]}`,
		`{"model":"m","tools":[{"type":"function","function":{"name":"a"}}],"functions":[{"name":"click"}]}`,
		`{"model":"m","tools":[{"type":"function","name":"click"},` + fn + `]}`,
		`{"model":"m","tools":[{"function":{"name":"click","parameters":"{}"}}]}`,
		`{"model":"m","tools":[{"function":{"name":"click","parameters":null}}]}`,
		`{"model":"m","tools":["x",{"function":{"name":"click","parameters":true}}]}`,
		`{"model":"m","functions":[{"parameters":{}},{"name":"click"}]}`,
	} {
		f.Add([]byte(seed))
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
	}))
	defer upstream.Close()
	rt := &declaredTransport{next: upstream.Client().Transport}
	cfg := policy.Default()
	cfg.UpstreamURL = upstream.URL + "/v1"
	h, err := New(Options{Config: cfg, Transport: rt})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rt.mu.Lock()
		rt.sent, rt.declared = nil, nil
		rt.mu.Unlock()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader(body)))
		rt.mu.Lock()
		sent, declared := rt.sent, rt.declared
		rt.mu.Unlock()
		if sent == nil {
			if rec.Code < 400 {
				t.Fatalf("status %d but nothing went upstream", rec.Code)
			}
			return // refused
		}
		folded, foldedOK, exact, ok := serverTools(sent)
		if !ok {
			t.Fatalf("forwarded a body servers cannot read: %q", sent)
		}
		// The functions the servers read must be exactly those whose calls
		// toolguard checks in this exchange: no more, no fewer, in order,
		// with the same schemas.
		if (foldedOK && !reflect.DeepEqual(folded, declared)) || !reflect.DeepEqual(exact, declared) {
			t.Fatalf("forwarded %q: servers read tools %v / %v, toolguard declared %v", sent, folded, exact, declared)
		}
	})
}

// openBody opens a request body of format f, with its members found by
// gjson (the body is not read strictly first), JSON output included.
func openBody(f format, body []byte) request {
	return f.open(wire.ReadMembers(body, f.items), nil, true)
}
