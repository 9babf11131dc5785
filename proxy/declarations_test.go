package proxy

import (
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/internal/faulty"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// TestDeclarationsAreReadOnce: tools a client declared before are not read
// again when it sends them again, and declarations that differ from them
// in a single byte are read in full: two tools of one name are refused,
// though the cache knows declarations of the same length.
func TestDeclarationsAreReadOnce(t *testing.T) {
	var sent atomic.Int64
	h, srv := textGuard(t, func([]byte) { sent.Add(1) })
	for _, c := range []struct {
		f          format
		head, tool string // tool's name is "click"
	}{
		{chatFormat, `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[`,
			`{"type":"function","function":{"name":"click","parameters":{"type":"object"}}}`},
		{chatFormat, `{"model":"m","messages":[{"role":"user","content":"hi"}],"functions":[`,
			`{"name":"click","parameters":{"type":"object"}}`},
		{responsesFormat, `{"model":"m","input":"hi","tools":[`,
			`{"type":"function","name":"click","parameters":{"type":"object"}}`},
		{messagesFormat, `{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}],"tools":[`,
			`{"name":"click","input_schema":{"type":"object"}}`},
	} {
		t.Run(c.f.name, func(t *testing.T) {
			send := func(body string) int {
				t.Helper()
				resp, err := http.Post(srv.URL+"/v1"+c.f.path, "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode
			}
			other := strings.Replace(c.tool, "click", "clicK", 1)
			body := c.head + c.tool + "," + other + "]}"
			before := h.decls.Len()
			for turn := range 2 {
				if code := send(body); code != 200 {
					t.Fatalf("turn %d: status %d", turn+1, code)
				}
				if n := h.decls.Len() - before; n != 1 {
					t.Fatalf("turn %d: %d declarations remembered, want 1", turn+1, n)
				}
			}
			m, err := c.f.read([]byte(body), nil, h.decls, wire.Repeats{})
			if err != nil {
				t.Fatal(err)
			}
			if q := c.f.open(m, h.decls, true); q == nil || !reflect.DeepEqual(q.Tools().Names, []string{"click", "clicK"}) {
				t.Fatalf("the tools remembered: %v", q)
			}
			m.Release()

			// One byte changed: the second tool is named "click" too.
			twice := c.head + c.tool + "," + c.tool + "]}"
			sentBefore := sent.Load()
			if code := send(twice); code != 400 {
				t.Errorf("two tools of one name after the cache learned their length: status %d, want 400", code)
			}
			if _, err := c.f.read([]byte(twice), nil, h.decls, wire.Repeats{}); err == nil || !strings.Contains(err.Error(), `repeats the name "click"`) {
				t.Errorf("two tools of one name: %v", err)
			}
			if sent.Load() != sentBefore {
				t.Errorf("they went upstream")
			}
		})
	}
}

// FuzzDeclarations: a chat, Responses or Messages request reads the same
// with the declarations cache as without it, whatever the cache read
// before: the same error, or the same request opened (its tools, whether
// they are the legacy functions, its output format), when the cache reads
// it the first time and the second.
func FuzzDeclarations(f *testing.F) {
	chat := `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":` + faulty.ClickTools + `}`
	f.Add(uint8(0), chat, chat)
	f.Add(uint8(0), chat, strings.Replace(chat, `"tools":`, `"functions":[],"tools":`, 1))
	f.Add(uint8(0), chat, strings.Replace(chat, `"tools":`, `"functions":[{"name":"a"}],"tools":`, 1))
	f.Add(uint8(0), `{"messages":[],"functions":[{"name":"a","parameters":{"type":"object"}}]}`, `{"messages":[],"tools":[],"functions":[{"name":"a","parameters":{"type":"object"}}]}`)
	f.Add(uint8(0), `{"messages":[],"tools":[{"type":"function","function":{"name":"a"}},{"function":{"name":"b","parameters":true}}]}`,
		`{"messages":[],"tools":[{"type":"function","function":{"name":"a"}},{"function":{"name":"a","parameters":true}}]}`)
	f.Add(uint8(0), chat, strings.Replace(chat, `}`, `,"response_format":{"type":"json_schema","json_schema":{"name":"o","schema":{"type":"object"}}}}`, 1))
	f.Add(uint8(1), `{"model":"m","input":"hi","tools":[{"type":"function","name":"a","parameters":{"type":"object"}},{"type":"namespace","name":"n","tools":[{"type":"function","name":"a"}]}]}`,
		`{"model":"m","input":"hi","tools":[{"type":"function","name":"a","parameters":{"type":"object"}},{"type":"namespace","name":"n","tools":[{"type":"function","name":"a"}]}],"previous_response_id":"r"}`)
	f.Add(uint8(1), `{"model":"m","input":"hi","tools":[{"type":"function","name":"a"}]}`, `{"model":"m","input":"hi","tools":[{"type":"function","name":"a"},{"type":"function","name":"a"}]}`)
	f.Add(uint8(2), `{"model":"m","max_tokens":5,"messages":[],"tools":[{"name":"a","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"w"}]}`,
		`{"model":"m","max_tokens":5,"messages":[],"tools":[{"name":"a","input_schema":{"type":"object"}},{"type":"custom","name":"b"}]}`)
	f.Fuzz(func(t *testing.T, which uint8, before, body string) {
		fm := []format{chatFormat, responsesFormat, messagesFormat}[int(which)%3]
		open := func(d *ladder.Declarations, body string) (string, request) {
			m, err := fm.read([]byte(body), nil, d, wire.Repeats{})
			if err != nil {
				return err.Error(), nil
			}
			defer m.Release()
			return "", fm.open(m, d, true)
		}
		d := ladder.NewDeclarations()
		open(d, before)
		wantErr, want := open(nil, body)
		for i := range 2 {
			gotErr, got := open(d, body)
			if gotErr != wantErr {
				t.Fatalf("%q after %q, time %d: error %q with the cache, %q without", body, before, i+1, gotErr, wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q after %q, time %d: %s with the cache, %s without", body, before, i+1, describe(got), describe(want))
			}
		}
	})
}

// describe shows what a fuzz target compares of a request opened.
func describe(q request) string {
	if q == nil || reflect.ValueOf(q).IsNil() {
		return "nothing opened"
	}
	return fmt.Sprintf("%+v, tools %q", q, q.Tools().Names)
}

// FuzzKnownTools: a chat, Responses or Messages request whose tools are,
// byte for byte, those of a request read before (which the strict reading
// then skips) reads as it does in full, whatever is around them: the same
// error, or the same members, items and request opened.
func FuzzKnownTools(f *testing.F) {
	long := strings.Repeat("Click on the element the selector names. ", 30) // over ladder.MinKnownTools
	tools := []string{
		`[{"type":"function","function":{"name":"click","description":"` + long + `","parameters":{"type":"object","properties":{"selector":{"type":"string"}}}}}]`,
		`[{"type":"function","name":"click","description":"` + long + `","parameters":{"type":"object"}}]`,
		`[{"name":"click","description":"` + long + `","input_schema":{"type":"object"}}]`,
	}
	heads := []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":`,
		`{"model":"m","input":[{"role":"user","content":"hi"}],"tools":`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"tools":`,
	}
	for i := range 3 {
		h, ts := heads[i], tools[i]
		for _, body := range [][2]string{
			{h, `}`},
			{h, ` , "model" : "n" }`},
			{h, `,"tools":[]}`},
			{h, `,"Tools":[]}`},
			{h, `,"functions":[{"name":"a"}]}`},
			{h, `}x`},
			{h, `,"messages":[{"role":"user","content":"` + "\xff" + `"}]}`},
			{`{"tools":`, `,"model":"m","messages":[{"role":"user","Role":"x"}]}`},
			{`{"tools":`, `,"model":"m","input":[],"messages":[]}`},
			{`{"model":"m","Tools":`, `}`},
			{`{"model":"m","tools":[`, `]}`},
		} {
			f.Add(uint8(i), h, ts, `}`, body[0], body[1])
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, beforeHead, tools, beforeTail, head, tail string) {
		fm := []format{chatFormat, responsesFormat, messagesFormat}[int(which)%3]
		d := ladder.NewDeclarations()
		if m, err := fm.read([]byte(beforeHead+tools+beforeTail), nil, d, wire.Repeats{}); err == nil {
			m.Release()
		}
		body := []byte(head + tools + tail)
		full, ferr := fm.read(body, nil, nil, wire.Repeats{})
		skip, serr := fm.read(body, nil, d, wire.Repeats{})
		if !sameReading(t, fm, body, skip, full, serr, ferr) {
			return
		}
		defer full.Release()
		defer skip.Release()
		sspans, sok := skip.Items()
		fspans, fok := full.Items()
		if sok != fok || !slices.Equal(sspans, fspans) {
			t.Fatalf("%q: items %v, in full %v", body, sspans, fspans)
		}
		if a, b := fm.open(skip, d, true), fm.open(full, nil, true); !reflect.DeepEqual(a, b) {
			t.Fatalf("%q: %s, in full %s", body, describe(a), describe(b))
		}
	})
}

// TestNullDeclarationsPassAsAbsent: tools (or chat's legacy functions) sent
// as null declare nothing, as when they are absent: the request goes
// upstream byte for byte, uninspected, where it was refused as if null were
// an array holding a null ("tools[0] is not an object").
func TestNullDeclarationsPassAsAbsent(t *testing.T) {
	var got atomic.Value // what the upstream was sent
	_, srv := textGuard(t, func(b []byte) { got.Store(string(b)) })
	for _, c := range []struct {
		f    format
		body string
	}{
		{chatFormat, `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":null}`},
		{chatFormat, `{"model":"m","messages":[{"role":"user","content":"hi"}],"functions":null,"tools":null}`},
		{responsesFormat, `{"model":"m","input":"hi","tools":null}`},
		{messagesFormat, `{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}],"tools":null}`},
	} {
		got.Store("nothing")
		resp, err := http.Post(srv.URL+"/v1"+c.f.path, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s %s: status %d: %s", c.f.name, c.body, resp.StatusCode, b)
			continue
		}
		if o := resp.Header.Get("X-Toolguard-Outcome"); o != "" {
			t.Errorf("%s %s: inspected (outcome %s)", c.f.name, c.body, o)
		}
		if up := got.Load().(string); up != c.body {
			t.Errorf("%s: the upstream got %q, want %q", c.f.name, up, c.body)
		}
	}
}

// TestNoToolsOpenNothing: a request that declares no tools (and no JSON
// response format) opens no request in any format, and allocates nothing
// to find that out: it goes upstream as it is.
func TestNoToolsOpenNothing(t *testing.T) {
	d := ladder.NewDeclarations()
	for _, c := range []struct {
		f    format
		body string
	}{
		{chatFormat, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`},
		{chatFormat, `{"model":"m","messages":[],"tools":null,"functions":null,"response_format":{"type":"text"}}`},
		{responsesFormat, `{"model":"m","input":"hi"}`},
		{responsesFormat, `{"model":"m","input":"hi","tools":null,"text":{"format":{"type":"text"}}}`},
		{messagesFormat, `{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		m, err := c.f.read([]byte(c.body), nil, d, wire.Repeats{})
		if err != nil {
			t.Fatal(err)
		}
		if q := c.f.open(m, d, true); q != nil {
			t.Errorf("%s: opened a request", c.body)
		}
		if n := testing.AllocsPerRun(100, func() { c.f.open(m, d, true) }); n != 0 {
			t.Errorf("%s: %v allocations, want none", c.body, n)
		}
	}
}
