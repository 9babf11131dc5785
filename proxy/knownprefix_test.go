package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/internal/fake"
	"github.com/toolguard/toolguard/internal/faulty"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// TestAConversationIsReadOnce: the items of a conversation that a client
// sent before are not read strictly again when it sends the next turn, and
// a body whose items differ from them in a single byte is read in full:
// one that is not strict JSON there is refused, though its length and its
// last bytes are those of the prefix the cache knows.
func TestAConversationIsReadOnce(t *testing.T) {
	var mu sync.Mutex
	var sent [][]byte
	h, srv := textGuard(t, func(b []byte) {
		mu.Lock()
		sent = append(sent, b)
		mu.Unlock()
	})

	// Each message of the conversation holds a member, "name", that the
	// client of the third turn below turns into a second "role".
	msg := `{"role":"user","name":"ab","content":"` + strings.Repeat("Open the next page. ", 8) + `"}`
	responsesTools := `[{"type":"function","name":"click","parameters":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}}]`
	messagesTools := `[{"name":"click","input_schema":{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}}]`
	for _, c := range []struct {
		f           format
		head, tools string
		key         string // the header of the client's key
	}{
		{chatFormat, `{"model":"m","messages":[`, faulty.ClickTools, "Authorization"},
		{chatFormat, `{"model":"m","messages":[`, faulty.ClickTools, "X-Api-Key"},
		{responsesFormat, `{"model":"m","input":[`, responsesTools, "Authorization"},
		{messagesFormat, `{"model":"m","max_tokens":16,"messages":[`, messagesTools, "X-Api-Key"},
	} {
		t.Run(c.f.name+"/"+c.key, func(t *testing.T) {
			turn := func(items []string) string {
				return c.head + strings.Join(items, ",") + `],"tools":` + c.tools + `}`
			}
			items := make([]string, 20)
			for i := range items {
				items[i] = msg
			}
			send := func(auth, body string) int {
				t.Helper()
				req, _ := http.NewRequest("POST", srv.URL+"/v1"+c.f.path, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(c.key, auth)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode
			}
			first := turn(items)
			if code := send("Bearer a", first); code != 200 {
				t.Fatalf("first turn: status %d", code)
			}
			next := turn(append(items, `{"role":"user","content":"And the one after."}`))
			// read reads body as the handler does for a client with
			// credential auth, and returns what the reading skipped.
			read := func(auth, body string) (int, error) {
				r := httptest.NewRequest("POST", "/v1"+c.f.path, nil)
				r.Header.Set(c.key, auth)
				turn, _, _, _ := h.clientCaches(r, c.f)
				m, release, err := readRequest(r, []byte(body), 1<<30, newByteBudget(1<<30), c.f, turn.KnownPrefix(), h.decls, wire.Repeats{})
				defer release()
				if err != nil {
					return 0, err
				}
				defer m.Release()
				return m.Known(), nil
			}
			known := func(auth, body string) int {
				t.Helper()
				n, err := read(auth, body)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			// The first turn's items, from the '[' to the end of the last.
			prefix := len(first) - len(`],"tools":`+c.tools+`}`) - (len(c.head) - 1)
			if n := known("Bearer a", next); n != prefix {
				t.Errorf("next turn: %d bytes of the items known, want the first turn's %d", n, prefix)
			}
			if n := known("Bearer b", next); n != 0 {
				t.Errorf("another client's next turn: %d bytes known, want none", n)
			}
			if c.f.name == messagesFormat.name {
				// A new message's check counts the messages it skipped.
				odd := turn(append(items, `{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"click","input":{}},{"type":"mystery"}]}`))
				if _, err := read("Bearer a", odd); err == nil || !strings.Contains(err.Error(), "messages[20]: content[1]") {
					t.Errorf("an unknown block in the new message: %v", err)
				}
			}
			mu.Lock()
			sent = nil
			mu.Unlock()
			if code := send("Bearer a", next); code != 200 {
				t.Fatalf("next turn: status %d", code)
			}
			mu.Lock()
			if len(sent) != 1 || !bytes.Equal(sent[0], []byte(next)) {
				t.Errorf("next turn went upstream changed or not at all: %d bodies", len(sent))
			}
			mu.Unlock()

			// The same bytes but for one: a duplicate name, or a byte that
			// is not UTF-8, in the first message. The error names the item
			// as a reading of every item does.
			for _, bad := range []struct{ body, why string }{
				{strings.Replace(next, `"name":"ab"`, `"role":"ab"`, 1), "duplicate member name at /" + c.f.items + "/0/role"},
				{strings.Replace(next, `"name":"ab"`, "\"name\":\"a\xff\"", 1), "not valid UTF-8"},
			} {
				if len(bad.body) != len(next) || bad.body == next {
					t.Fatal("the changed body is not the same length")
				}
				if _, err := read("Bearer a", bad.body); err == nil || !strings.Contains(err.Error(), bad.why) {
					t.Errorf("a body whose known items changed by a byte: %v, want an error saying %q", err, bad.why)
				}
				mu.Lock()
				sent = nil
				mu.Unlock()
				if code := send("Bearer a", bad.body); code != 400 {
					t.Errorf("a body whose known items changed by a byte: status %d, want 400", code)
				}
				mu.Lock()
				if len(sent) != 0 {
					t.Errorf("it went upstream")
				}
				mu.Unlock()
			}
		})
	}
}

// FuzzKnownPrefixRequest: a chat, Responses or Messages request that
// starts its items with a prefix read before reads, with the prefix
// skipped, as it does in full: the same error, or the same members and
// items after the prefix.
func FuzzKnownPrefixRequest(f *testing.F) {
	msg := `{"role":"user","content":"Open the next page."}`
	f.Add(uint8(0), `{"model":"m","messages":[`+msg+`,`+msg+`],"tools":`+faulty.ClickTools+`}`, uint8(0), `,{"role":"user","content":"x"}],"tools":`+faulty.ClickTools+`}`)
	f.Add(uint8(0), `{"model":"m","messages":[`+msg+`,`+msg+`],"tools":`+faulty.ClickTools+`}`, uint8(1), `,{"role":"user","Role":"x"}]}`)
	f.Add(uint8(0), `{"messages":[`+msg+`],"tools":[]}`, uint8(0), `],"tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"a"}}]}`)
	f.Add(uint8(1), `{"model":"m","input":[`+msg+`,{"type":"function_call","call_id":"c","name":"click","arguments":"{}"}],"tools":[]}`, uint8(1), `,{"type":"function_call_output","call_id":"c","output":"ok"}],"tools":[]}`)
	f.Add(uint8(1), `{"model":"m","input":[`+msg+`],"tools":[]}`, uint8(0), `],"Input":[]}`)
	f.Add(uint8(2), `{"model":"m","max_tokens":5,"messages":[`+msg+`,{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"click","input":{}}]}],"tools":[{"name":"click","input_schema":{"type":"object"}}]}`, uint8(1), `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}]}`)
	f.Add(uint8(2), `{"model":"m","messages":[`+msg+`],"tools":[]}`, uint8(0), `,{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"click","input":{}},{"type":"mystery"}]}]}`)
	f.Fuzz(func(t *testing.T, which uint8, seed string, pick uint8, tail string) {
		fm := []format{chatFormat, responsesFormat, messagesFormat}[int(which)%3]
		m1, err := fm.read([]byte(seed), nil, nil, wire.Repeats{})
		if err != nil {
			return
		}
		spans, ok := m1.Items()
		at := m1.ItemsValue().Index
		if !ok || len(spans) == 0 {
			m1.Release()
			return
		}
		end := spans[int(pick)%len(spans)].End
		m1.Release()
		body := []byte(seed[:end] + tail)
		known := func(b []byte, from int) int {
			if from != at {
				return 0
			}
			return end - at
		}
		full, ferr := fm.read(body, nil, nil, wire.Repeats{})
		skip, serr := fm.read(body, known, nil, wire.Repeats{})
		if !sameReading(t, fm, body, skip, full, serr, ferr) {
			return
		}
		defer full.Release()
		defer skip.Release()
		fspans, _ := full.Items()
		sspans, _ := skip.Items()
		if skip.Known() > 0 {
			if skip.Known() != end-at {
				t.Fatalf("%q: %d bytes known, want %d", body, skip.Known(), end-at)
			}
			fspans = fspans[min(int(pick)%len(spans)+1, len(fspans)):]
		}
		if !slices.Equal(sspans, fspans) {
			t.Fatalf("%q: items %v, in full %v", body, sspans, fspans)
		}
	})
}

// sameReading fails t unless a reading of body that skips parts read
// before (skip, serr) agrees with the reading in full (full, ferr): the
// same error, or the same members where they are. It reports whether body
// was read.
func sameReading(t *testing.T, fm format, body []byte, skip, full *wire.Members, serr, ferr error) bool {
	t.Helper()
	if fmt.Sprint(ferr) != fmt.Sprint(serr) {
		t.Fatalf("%q: error %v, in full %v", body, serr, ferr)
	}
	if ferr != nil {
		return false
	}
	for _, name := range []string{"model", fm.items, "tools", "functions", "text", "response_format", "stream"} {
		if a, b := skip.Get(name), full.Get(name); a.Raw != b.Raw || a.Index != b.Index {
			t.Fatalf("%q: %s read as %q at %d, in full %q at %d", body, name, a.Raw, a.Index, b.Raw, b.Index)
		}
	}
	return true
}

// textGuard is toolguard with its defaults in front of an upstream that
// answers every request with a short text reply in the shape of its
// route's format (chat, Responses or Messages), after handing its body to
// seen.
func textGuard(t *testing.T, seen func(body []byte)) (*Handler, *httptest.Server) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen(b)
		w.Header().Set("Content-Type", "application/json")
		f := fake.Chat
		switch {
		case strings.HasSuffix(r.URL.Path, "/responses"):
			f = fake.Responses
		case strings.HasSuffix(r.URL.Path, "/messages"):
			f = fake.Messages
		}
		io.WriteString(w, f.JSON(fake.Reply{Text: "done", In: 1, Out: 1}))
	}))
	t.Cleanup(up.Close)
	cfg := policy.Default()
	cfg.UpstreamURL = up.URL + "/v1"
	h, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}
