package wire

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"
)

// eventShape is a chat chunk's, as the chat format reads it.
var eventShape = Shape{
	"model": nil, "usage": Shape{"prompt_tokens": nil, "completion_tokens": nil}, "error": nil,
	"choices": Shape{"index": nil, "finish_reason": nil, "delta": Shape{
		"role": nil, "content": nil, "refusal": nil,
		"tool_calls": Shape{"id": nil, "index": nil, "function": Shape{"name": nil, "arguments": nil}},
	}},
}

// chunk is a content event as OpenAI streams it, with the content and the
// obfuscation given as JSON text.
func chunk(content, obfuscation string) string {
	return `{"id":"chatcmpl-C4HqHBe4xca0k0EzsCnf1t6V3YFXp","object":"chat.completion.chunk","created":1755137933,` +
		`"model":"gpt-5-nano-2025-08-07","service_tier":"default","system_fingerprint":null,` +
		`"choices":[{"index":0,"delta":{"content":` + content + `},"finish_reason":null}],"obfuscation":` + obfuscation + `}`
}

// readBoth reads prev then ev with one EventReader, and ev alone with
// StrictMembers, and fails unless both give the same error and the same
// members. It reports whether ev was read as a repeat of prev.
func readBoth(t testing.TB, prev, ev []byte) (repeated bool) {
	t.Helper()
	r := NewEventReader(eventShape, Repeats{})
	m := NewMembers("choices")
	defer m.Release()
	_ = r.Read(prev, m)
	wasTemplate := r.cur != nil
	got := r.Read(ev, m)
	want := NewMembers("choices")
	defer want.Release()
	wantErr := StrictMembers(ev, eventShape, want)
	if fmt.Sprint(got) != fmt.Sprint(wantErr) {
		t.Fatalf("after %q\nread %q:\nerror %v, want %v", prev, ev, got, wantErr)
	}
	if got == nil {
		sameMembers(t, m, want)
	}
	// A client's replies, read through Templates, the same.
	c := NewTemplates()
	rm := NewMembers("choices")
	defer rm.Release()
	_ = c.For(1).Read(prev, eventShape, rm)
	if err := c.For(1).Read(ev, eventShape, rm); fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("as a reply, after %q\nread %q:\nerror %v, want %v", prev, ev, err, wantErr)
	} else if err == nil {
		sameMembers(t, rm, want)
	}
	// Repeated and where values are: read prev, ev and prev again, so that
	// an event repeats one that became the template and one that repeated it.
	r2 := NewEventReader(eventShape, Repeats{})
	events := [][]byte{prev, ev, prev}
	var before []Span
	for i, e := range events {
		if r2.Read(e, m) != nil {
			before = nil
			continue
		}
		vals := valuesOf(t, r2)
		if r2.Repeated() {
			if i == 0 || before == nil {
				t.Fatalf("read %q: repeated, with no event of its values before it", e)
			}
			sameBetween(t, events[i-1], before, e, vals)
		}
		before = vals
	}
	// A repeat keeps the template it matched, byte for byte.
	return wasTemplate && got == nil && string(r.tp.t) == string(prev)
}

// valuesOf returns where the values that may change are in the event r
// read last, checking that ValueAt finds each, and nothing else; nil when
// r cannot say (none, when the event has no such value, is not nil).
func valuesOf(t testing.TB, r *EventReader) []Span {
	t.Helper()
	if r.last.tp == nil {
		return nil
	}
	vals := []Span{} // none, but known
	for i := range r.last.tp.vary {
		v := r.Value(i)
		if j, ok := r.ValueAt(v); !ok || j != i {
			t.Fatalf("ValueAt(%v) = %d, %v; want %d", v, j, ok, i)
		}
		for _, w := range []Span{{v.Start + 1, v.End}, {v.Start, v.End - 1}, {v.Start - 1, v.End}} {
			if _, ok := r.ValueAt(w); ok {
				t.Fatalf("ValueAt(%v) found a value; the value is at %v", w, v)
			}
		}
		vals = append(vals, v)
	}
	return vals
}

// sameBetween checks that b, which repeated a, is a's bytes but for the
// values at bv (a's at av), each still a string or a number on its own.
func sameBetween(t testing.TB, a []byte, av []Span, b []byte, bv []Span) {
	t.Helper()
	if len(av) != len(bv) {
		t.Fatalf("%q repeated %q with %d values, not %d", b, a, len(bv), len(av))
	}
	pa, pb := 0, 0
	for i := range av {
		if string(a[pa:av[i].Start]) != string(b[pb:bv[i].Start]) {
			t.Fatalf("%q repeated %q: %q before value %d, not %q", b, a, b[pb:bv[i].Start], i, a[pa:av[i].Start])
		}
		x, y := a[av[i].Start:av[i].End], b[bv[i].Start:bv[i].End]
		if (x[0] == '"') != (y[0] == '"') || !scalarKind(y) || !json.Valid(y) {
			t.Fatalf("%q repeated %q: value %d %q where it was %q", b, a, i, y, x)
		}
		pa, pb = av[i].End, bv[i].End
	}
	if string(a[pa:]) != string(b[pb:]) {
		t.Fatalf("%q repeated %q: ends %q, not %q", b, a, b[pb:], a[pa:])
	}
}

func sameMembers(t testing.TB, got, want *Members) {
	t.Helper()
	if got.object != want.object || got.overflow != want.overflow || got.itemsOK != want.itemsOK ||
		!reflect.DeepEqual(append([]member{}, got.top...), append([]member{}, want.top...)) ||
		!reflect.DeepEqual(append([]Span{}, got.spans...), append([]Span{}, want.spans...)) {
		t.Fatalf("members of %q:\n got %v %v items %v %v\nwant %v %v items %v %v", got.body,
			got.top, got.spans, got.itemsOK, got.object, want.top, want.spans, want.itemsOK, want.object)
	}
	for _, tm := range want.top {
		if g, w := got.Get(tm.name), want.Get(tm.name); g.Raw != w.Raw || g.Index != w.Index {
			t.Fatalf("member %q: %q at %d, want %q at %d", tm.name, g.Raw, g.Index, w.Raw, w.Index)
		}
	}
}

// TestEventReaderReadsAsStrict: an event read as a repeat of the one before
// it gets the strict reading's answer and members, and only an event that
// differs from it in its strings' and numbers' values is read so.
func TestEventReaderReadsAsStrict(t *testing.T) {
	prev := chunk(`"Hi"`, `"UC"`)
	for _, c := range []struct {
		name     string
		ev       string
		repeated bool
	}{
		{"the same event", prev, true},
		{"other text and padding", chunk(`" there, and a longer text"`, `"LcdzdJdMMgDHt6"`), true},
		{"empty text and padding", chunk(`""`, `""`), true},
		{"escapes", chunk(`"a \"quoted\" \\ word\n\u00e9\ud83d\ude00"`, `"x"`), true},
		{"a backslash before the closing quote", chunk(`"back\\"`, `"x"`), true},
		{"UTF-8 text", chunk(`"héllo, 世界"`, `"x"`), true},
		{"printable ASCII and a DEL", chunk("\"a <&> b\x7f\"", `"x"`), true},
		{"a tab", chunk("\"a\tb\"", `"x"`), false},
		{"a line end", chunk("\"a\nb\"", `"x"`), false},
		{"invalid UTF-8", chunk("\"a\xffb\"", `"x"`), false},
		{"a control character", chunk("\"a\x01b\"", `"x"`), false},
		{"an invalid escape", chunk(`"a\qb"`, `"x"`), false},
		{"a lone surrogate", chunk(`"\ud800"`, `"x"`), false},
		{"a string left open", chunk(`"a\"`, `"x"`), false},
		{"a member smuggled into the text", chunk(`"a","content":"b"`, `"x"`), false},
		{"a member smuggled in another case", chunk(`"a","Content":"b"`, `"x"`), false},
		{"a number for the text", chunk(`12`, `"x"`), false},
		{"null for the text", chunk(`null`, `"x"`), false},
		{"an object for the text", chunk(`{"a":1}`, `"x"`), false},
		{"data after the event", chunk(`"a"`, `"x"`) + `{}`, false},
		{"space after the event", chunk(`"a"`, `"x"`) + ` `, false},
		{"the event cut short", strings.TrimSuffix(chunk(`"a"`, `"x"`), `}`), false},
		{"a name in another case", strings.Replace(chunk(`"a"`, `"x"`), `"delta"`, `"Delta"`, 1), false},
		{"a name duplicated", strings.Replace(chunk(`"a"`, `"x"`), `"object"`, `"id"`, 1), false},
		{"another created", strings.Replace(chunk(`"a"`, `"x"`), `1755137933`, `1755137934`, 1), true},
		{"a longer number", strings.Replace(chunk(`"a"`, `"x"`), `1755137933`, `-17551379.33e+10`, 1), true},
		{"a number that goes on", strings.Replace(chunk(`"a"`, `"x"`), `1755137933`, `17551379330`, 1), true},
		{"a number that goes on with a fraction", strings.Replace(chunk(`"a"`, `"x"`), `1755137933`, `1755137933.5`, 1), true},
		{"a number that goes on with an exponent", strings.Replace(chunk(`"a"`, `"x"`), `1755137933`, `1755137933e2`, 1), true},
		{"a number that goes on wrongly", strings.Replace(chunk(`"a"`, `"x"`), `1755137933`, `1755137933-`, 1), false},
		{"another index that goes on", strings.Replace(chunk(`"a"`, `"x"`), `"index":0`, `"index":00`, 1), false},
		{"an index that goes on", strings.Replace(chunk(`"a"`, `"x"`), `"index":0`, `"index":0.0`, 1), true},
		{"a number with a leading zero", strings.Replace(chunk(`"a"`, `"x"`), `1755137933`, `01`, 1), false},
		{"a number that is a sign", strings.Replace(chunk(`"a"`, `"x"`), `1755137933`, `-`, 1), false},
		{"a number with two points", strings.Replace(chunk(`"a"`, `"x"`), `1755137933`, `1.2.3`, 1), false},
		{"a string for a number", strings.Replace(chunk(`"a"`, `"x"`), `1755137933`, `"1"`, 1), false},
		{"another index", strings.Replace(chunk(`"a"`, `"x"`), `"index":0`, `"index":1`, 1), true},
		{"null for null", chunk(`"a"`, `"x"`), true},
		{"a string for null", strings.Replace(chunk(`"a"`, `"x"`), `"finish_reason":null`, `"finish_reason":"stop"`, 1), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := readBoth(t, []byte(prev), []byte(c.ev)); got != c.repeated {
				t.Errorf("read as a repeat: %v, want %v", got, c.repeated)
			}
		})
	}
}

// TestEventReaderStream reads a stream's events one after the other, as a
// stream does with its one Members: each as StrictMembers reads it, the
// content events after the first as repeats.
func TestEventReaderStream(t *testing.T) {
	events := []string{
		`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"finish_reason":null}]}`,
	}
	for i := range 20 {
		events = append(events, `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"word`+strings.Repeat("x", i)+`"},"finish_reason":null}]}`)
	}
	events = append(events,
		`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"click","arguments":""}}]},"finish_reason":null}]}`,
		`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"sel"}}]},"finish_reason":null}]}`,
		`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ector\":\"#a\"}"}}]},"finish_reason":null}]}`,
		`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":8,"completion_tokens":12}}`,
	)
	r := NewEventReader(eventShape, Repeats{})
	m := NewMembers("choices")
	repeats := 0
	for i, ev := range events {
		wasOK, was := r.cur != nil, string(r.tp.t)
		if err := r.Read([]byte(ev), m); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if wasOK && string(r.tp.t) == was {
			repeats++
		}
		want := NewMembers("choices")
		if err := StrictMembers([]byte(ev), eventShape, want); err != nil {
			t.Fatal(err)
		}
		sameMembers(t, m, want)
		want.Release()
	}
	// The content events after the first, and the last argument delta.
	if repeats != 20 {
		t.Errorf("%d events read as repeats, want 20", repeats)
	}
}

// TestEventReaderStarts: a client's streams read with NewStreamStarts. The
// first events of the second stream, the same events with other ids and
// text, repeat those of the first: no template is made for them, and each
// reads as StrictMembers reads it; the events after them are compared with
// the event before, as without starts. Another client's stream repeats
// nothing of them.
func TestEventReaderStarts(t *testing.T) {
	stream := func(id string, words ...string) []string {
		evs := []string{`{"id":"` + id + `","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`}
		for _, w := range words {
			evs = append(evs, `{"id":"`+id+`","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"`+w+`"},"finish_reason":null}]}`)
		}
		return append(evs, `{"id":"`+id+`","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
	}
	c := NewStreamStarts()
	client, other := c.For(c.Scope("chat", "Bearer a")), c.For(c.Scope("chat", "Bearer b"))
	// read reads a stream and returns, for each event, whether it
	// repeated a template kept before it (no template made, none changed).
	// Repeated: only for an event that repeats one read after the starts.
	const wantRepeated = "[false false false false false false true true false]"
	read := func(r Repeats, evs []string, wantRepeated string) []bool {
		e := NewEventReader(eventShape, r)
		m, want := NewMembers("choices"), NewMembers("choices")
		defer m.Release()
		defer want.Release()
		var repeated, saidRepeated []bool
		var prevVals []Span
		defer func() {
			if fmt.Sprint(saidRepeated) != wantRepeated {
				t.Errorf("Repeated %v, want %s", saidRepeated, wantRepeated)
			}
		}()
		for i, ev := range evs {
			kept := len(c.by)
			before := map[uint64][2]*template{}
			for k, v := range c.by {
				before[k] = v
			}
			wasCur, was := e.cur, string(e.tp.t)
			if err := e.Read([]byte(ev), m); err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
			if err := StrictMembers([]byte(ev), eventShape, want); err != nil {
				t.Fatal(err)
			}
			sameMembers(t, m, want)
			vals := valuesOf(t, e)
			if e.Repeated() {
				if prevVals == nil {
					t.Fatalf("event %d repeated, with no event of its values before it", i)
				}
				sameBetween(t, []byte(evs[i-1]), prevVals, []byte(ev), vals)
			}
			prevVals = vals
			saidRepeated = append(saidRepeated, e.Repeated())
			same := len(c.by) == kept
			for k, v := range c.by {
				if b := before[k]; b != v && (b[0] != v[1] || b[1] != v[0]) {
					same = false // a template made, not two turned
				}
			}
			if i >= startEvents {
				// After the starts: compared with the event before.
				same = wasCur != nil && e.cur == wasCur && (wasCur != &e.tp || string(e.tp.t) == was)
			}
			repeated = append(repeated, same)
		}
		return repeated
	}
	words := []string{"Hi", " there", "!", " How", " are", " you", "?"}
	first := read(client, stream("a1", words...), wantRepeated)
	// The first stream: each start event a template of its own (the
	// words after the first repeat the one before, but only the starts
	// are kept), then repeats of the event before.
	if want := "[false false false false false true true true false]"; fmt.Sprint(first) != want {
		t.Errorf("first stream: repeats %v, want %s", first, want)
	}
	again := read(client, stream("a22", "Yo", " you", "!!", " Who", " is", " it", "?"), wantRepeated)
	if want := "[true true true true true true true true false]"; fmt.Sprint(again) != want {
		t.Errorf("the client's second stream: repeats %v, want %s", again, want)
	}
	apart := read(other, stream("b1", words...), wantRepeated)
	if want := "[false false false false false true true true false]"; fmt.Sprint(apart) != want {
		t.Errorf("another client's stream: repeats %v, want %s", apart, want)
	}
	// A stream of a shorter start: its end event is compared with the
	// client's third event, and kept beside it.
	short := read(client, stream("a3", "x"), "[false false false]")
	if want := "[true true false]"; fmt.Sprint(short) != want {
		t.Errorf("a shorter stream: repeats %v, want %s", short, want)
	}
}

// FuzzStreamStarts: whatever a client's streams are, each event read with
// NewStreamStarts reads as StrictMembers reads it alone. Three events make
// three streams, read one after another (a, b, c; b, a, c; c, b, a;
// a, b, c), each event compared with the same event of the streams before.
func FuzzStreamStarts(f *testing.F) {
	other := `{"id":"x","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}`
	for _, s := range repeatSeeds {
		f.Add([]byte(s[0]), []byte(other), []byte(s[1]))
		f.Add([]byte(other), []byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, a, b, c []byte) {
		starts := NewStreamStarts().For(1)
		m, want := NewMembers("choices"), NewMembers("choices")
		defer m.Release()
		defer want.Release()
		for _, stream := range [][][]byte{{a, b, c}, {b, a, c}, {c, b, a}, {a, b, c}} {
			e := NewEventReader(eventShape, starts)
			for _, ev := range stream {
				err, wantErr := e.Read(ev, m), StrictMembers(ev, eventShape, want)
				if fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Fatalf("streams of %q, %q, %q\nread %q:\nerror %v, want %v", a, b, c, ev, err, wantErr)
				}
				if err == nil {
					sameMembers(t, m, want)
				}
			}
		}
	})
}

// TestEventReaderBounds: an event beyond a template's bounds is read in
// full, and what the reading records for a template stops at its bound.
func TestEventReaderBounds(t *testing.T) {
	many := `{"a":[` + strings.Repeat(`1,`, 100000) + `1]}`
	r := NewEventReader(Shape{"a": Shape{}}, Repeats{})
	m := NewMembers("")
	if err := r.Read([]byte(many), m); err != nil {
		t.Fatal(err)
	}
	if r.cur != nil {
		t.Error("an event of 100,001 numbers became a template")
	}
	if len(m.rec) > maxTemplateValues+1 {
		t.Errorf("%d values recorded, at most %d", len(m.rec), maxTemplateValues+1)
	}
	big := `{"content":"` + strings.Repeat("x", maxTemplateBytes) + `"}`
	r = NewEventReader(Shape{"content": nil}, Repeats{})
	if err := r.Read([]byte(big), m); err != nil {
		t.Fatal(err)
	}
	if r.cur != nil || cap(r.tp.t) != 0 {
		t.Errorf("an event of %d bytes was kept as a template", len(big))
	}
}

var repeatSeeds = [][2]string{
	{chunk(`"Hi"`, `"UC"`), chunk(`" there"`, `"LcdzdJdMMgDHt6"`)},
	{chunk(`"Hi"`, `"UC"`), chunk(`"a\"b\\"`, `""`)},
	{chunk(`"Hi"`, `"UC"`), chunk(`"a","content":"b"`, `"x"`)},
	{chunk(`"Hi"`, `"UC"`), strings.Replace(chunk(`"a"`, `"x"`), `1755137933`, `1.5e3`, 1)},
	{`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi"}`,
		`{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"delta":" there"}`},
	{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\u00e9"}}`},
}

// FuzzEventReader: whatever two events are, the second is read by an
// EventReader that read the first as StrictMembers reads it alone.
func FuzzEventReader(f *testing.F) {
	for _, s := range repeatSeeds {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, prev, ev []byte) {
		readBoth(t, prev, ev)
	})
}

// FuzzTemplates: whatever a client's replies are, each read through
// Templates (two a client) reads as StrictMembers reads it alone. The
// replies are read in the order a, b, c, a, c, b, so that each is compared
// with a template it repeats, or with one that served before the last, as
// the first or the second of the two. The seeds pair each repeat of
// repeatSeeds with a reply of another shape between them.
func FuzzTemplates(f *testing.F) {
	other := `{"id":"x","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}`
	for _, s := range repeatSeeds {
		f.Add([]byte(s[0]), []byte(other), []byte(s[1]))
		f.Add([]byte(s[0]), []byte(s[1]), []byte(other))
	}
	f.Fuzz(func(t *testing.T, a, b, c []byte) {
		r := NewTemplates().For(1)
		m, want := NewMembers("choices"), NewMembers("choices")
		defer m.Release()
		defer want.Release()
		for _, body := range [][]byte{a, b, c, a, c, b} {
			err, wantErr := r.Read(body, eventShape, m), StrictMembers(body, eventShape, want)
			if fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Fatalf("after %q, %q, %q\nread %q:\nerror %v, want %v", a, b, c, body, err, wantErr)
			}
			if err == nil {
				sameMembers(t, m, want)
				samePlaces(t, m)
			}
		}
	})
}

// samePlaces checks the Places of a body read through Repeats into m. A
// body that became a template is given a plan of the Place of each of its
// values (at every depth, by its path), and no Place begins or ends inside
// one of its values that may change; in a body that repeats a template
// with a plan, each Place's Span is where the value of its path is.
func samePlaces(t testing.TB, m *Members) {
	t.Helper()
	body := m.Body()
	spans := pathSpans(body)
	if m.CanPlan() {
		places := map[string]Place{}
		for path, s := range spans {
			p, ok := m.Place(s)
			if !ok {
				t.Fatalf("%q: no Place for %s at %v", body, path, s)
			}
			places[path] = p
		}
		for _, v := range m.rep.tp.vary {
			if v.End-v.Start < 2 {
				continue
			}
			for _, s := range []Span{{v.Start + 1, v.End}, {v.Start, v.End - 1}} {
				if _, ok := m.Place(s); ok {
					t.Fatalf("%q: a Place at %v, inside the value at %v", body, s, v)
				}
			}
		}
		m.SetPlan(places)
		if m.CanPlan() {
			t.Fatalf("%q: a plan attached, and another may be", body)
		}
	}
	places, ok := m.Plan().(map[string]Place)
	if !ok {
		return
	}
	if len(places) != len(spans) {
		t.Fatalf("%q: %d values, the plan's template %d", body, len(spans), len(places))
	}
	for path, p := range places {
		s, ok := m.Span(p)
		if !ok || s != spans[path] {
			t.Fatalf("%q: %s at %v (%v), want %v", body, path, s, ok, spans[path])
		}
	}
}

// pathSpans is where each value of body is, at every depth, by its path.
func pathSpans(body []byte) map[string]Span {
	out := map[string]Span{}
	var walk func(path string, v gjson.Result)
	walk = func(path string, v gjson.Result) {
		if s, ok := SpanOf(body, v); ok {
			out[path] = s
		}
		if !v.IsObject() && !v.IsArray() {
			return
		}
		i := 0
		v.ForEach(func(k, c gjson.Result) bool {
			p := path + "/" + strconv.Itoa(i)
			if k.Exists() {
				p = path + "/" + strconv.Quote(k.Str)
			}
			walk(p, c)
			i++
			return true
		})
	}
	top := gjson.ParseBytes(body)
	top.Index = 0
	walk("", top)
	return out
}

// BenchmarkEventReader reads events with an EventReader and with
// StrictMembers alone: events that repeat the one before with other text;
// events of two shapes in turn, none a repeat; and, the dearest case for
// the reader, events that differ from the one before only in their last
// bytes, compared in full before each is read in full.
func BenchmarkEventReader(b *testing.B) {
	first := []byte(chunk(`"Hi"`, `"UC"`))
	for _, c := range []struct {
		name   string
		events [][]byte
	}{
		{"repeats", [][]byte{first, []byte(chunk(`" there"`, `"LcdzdJdMMgDHt6"`))}},
		{"two-shapes", [][]byte{first, []byte(`{"id":"x","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}`)}},
		{"last-bytes-differ", [][]byte{first, []byte(strings.TrimSuffix(string(first), "}") + " }")}},
	} {
		r := NewEventReader(eventShape, Repeats{})
		benchBeside(b, c.name, "reader", c.events, func(body []byte, m *Members) error { return r.Read(body, m) })
	}
}

// benchBeside runs name/arm, reading the bodies in turn with read, and
// beside it name/strict, reading them with StrictMembers alone.
func benchBeside(b *testing.B, name, arm string, bodies [][]byte, read func([]byte, *Members) error) {
	b.Run(name+"/"+arm, func(b *testing.B) { benchReads(b, bodies, read) })
	b.Run(name+"/strict", func(b *testing.B) {
		benchReads(b, bodies, func(body []byte, m *Members) error { return StrictMembers(body, eventShape, m) })
	})
}

// benchReads reads the bodies in turn with read, one Members for all.
func benchReads(b *testing.B, bodies [][]byte, read func([]byte, *Members) error) {
	m := NewMembers("choices")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := read(bodies[i%len(bodies)], m); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTemplatesKeepScopesApart: a reply is compared only with the last
// reply of its own scope; each scope keeps its own template, and no more
// than maxTemplateScopes are kept.
func TestTemplatesKeepScopesApart(t *testing.T) {
	first, again := []byte(chunk(`"Hi"`, `"UC"`)), []byte(chunk(`" there"`, `"LcdzdJdMMgDHt6"`))
	c := NewTemplates()
	a, b := c.Scope("chat", "Bearer a"), c.Scope("chat", "Bearer b")
	if a == b || a != c.Scope("chat", "Bearer a") || c.Scope("chat", "Bearer a", "") == a || c.Scope("chatBearer a") == a {
		t.Fatal("scopes do not tell the parts apart")
	}
	m := NewMembers("choices")
	defer m.Release()
	template := func(scope uint64) string {
		if tp := c.by[scope][0]; tp != nil {
			return string(tp.t)
		}
		return ""
	}
	for _, step := range []struct {
		scope        uint64
		body         []byte
		wantA, wantB []byte // the templates after it
	}{
		{a, first, first, nil},
		{b, again, first, again}, // b has no template yet: read in full
		{a, again, first, again}, // a repeat of a's: the template stays
		{b, first, first, again}, // a repeat of b's
	} {
		if err := c.For(step.scope).Read(step.body, eventShape, m); err != nil {
			t.Fatal(err)
		}
		if template(a) != string(step.wantA) || template(b) != string(step.wantB) {
			t.Fatalf("after %q: templates %q and %q, want %q and %q", step.body, template(a), template(b), step.wantA, step.wantB)
		}
	}
	for i := range 3 * maxTemplateScopes {
		if err := c.For(c.Scope("chat", fmt.Sprint(i))).Read(first, eventShape, m); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.by) != maxTemplateScopes || c.n != maxTemplateScopes {
		t.Errorf("%d scopes kept (%d counted), want %d", len(c.by), c.n, maxTemplateScopes)
	}
	if template(a) != "" {
		t.Error("the oldest scope was not forgotten")
	}
}

// TestTemplatesTwoShapes: a scope keeps two templates of different shapes,
// the one that served last first, so that replies of two shapes in turn
// are both read as repeats, and a third shape replaces the template that
// went longest without serving.
func TestTemplatesTwoShapes(t *testing.T) {
	role := func(id string) []byte {
		return []byte(`{"id":"` + id + `","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}`)
	}
	finish := func(id string) []byte {
		return []byte(`{"id":"` + id + `","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":1}}`)
	}
	a1, a2, a3 := []byte(chunk(`"Hi"`, `"UC"`)), []byte(chunk(`" there"`, `"LcdzdJdMMgDHt6"`)), []byte(chunk(`"!"`, `"x"`))
	b1, b2, b3 := role("r1"), role("r22"), role("r333")
	c1 := finish("f1")
	c := NewTemplates()
	scope := c.Scope("chat", "Bearer a")
	m, want := NewMembers("choices"), NewMembers("choices")
	defer m.Release()
	defer want.Release()
	text := func(tp *template) string {
		if tp == nil {
			return ""
		}
		return string(tp.t)
	}
	for _, step := range []struct {
		body         []byte
		first, other []byte // the templates after it
	}{
		{a1, a1, nil},
		{b1, b1, a1},
		{a2, a1, b1}, // a repeat of the second: it comes first
		{b2, b1, a1},
		{a3, a1, b1},
		{c1, c1, a1}, // a third shape: b1 went longest without serving
		{b3, b3, c1},
		{a2, a2, b3},
	} {
		before := c.by[scope]
		if err := c.For(scope).Read(step.body, eventShape, m); err != nil {
			t.Fatal(err)
		}
		if err := StrictMembers(step.body, eventShape, want); err != nil {
			t.Fatal(err)
		}
		sameMembers(t, m, want)
		got := c.by[scope]
		if text(got[0]) != string(step.first) || text(got[1]) != string(step.other) {
			t.Fatalf("after %s: templates %s and %s, want %s and %s", step.body, text(got[0]), text(got[1]), step.first, step.other)
		}
		// A repeat makes no template: both are those there were before.
		if repeat := text(before[0]) == string(step.first) || text(before[1]) == string(step.first); repeat && got[0] != before[0] && got[0] != before[1] {
			t.Fatalf("after %s: a new template for a repeat", step.body)
		}
	}
}

// TestTemplatesConcurrently reads replies of two shapes in turn, from many
// goroutines sharing scopes, each as StrictMembers reads it, and each
// template's plan, attached by the request that made it, where the others
// read it (run it with -race: a template is shared while it is read).
func TestTemplatesConcurrently(t *testing.T) {
	bodies := [][]byte{
		[]byte(chunk(`"Hi"`, `"UC"`)),
		[]byte(chunk(`" there"`, `"LcdzdJdMMgDHt6"`)),
		[]byte(`{"id":"x","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}`),
		[]byte(chunk(`"a\"b"`, `"x"`)),
	}
	c := NewTemplates()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, want := NewMembers("choices"), NewMembers("choices")
			defer m.Release()
			defer want.Release()
			for i := range 500 {
				body := bodies[(g+i)%len(bodies)]
				if err := c.For(uint64(g%3)).Read(body, eventShape, m); err != nil {
					t.Error(err)
					return
				}
				if err := StrictMembers(body, eventShape, want); err != nil {
					t.Error(err)
					return
				}
				sameMembers(t, m, want)
				// Plans attached by one request, read by the others.
				samePlaces(t, m)
			}
		}()
	}
	wg.Wait()
}

// BenchmarkRepeats reads a client's replies through Templates and with
// StrictMembers alone: replies that repeat the last, replies of two shapes
// in turn (each a repeat of the template before the last), and of three
// shapes in turn, each compared with both templates in vain, then read in
// full and kept as a new template; and three shapes that share a text of
// 1 to 8 KB and differ only after it, so that each comparison in vain runs
// the whole length (the cost must double with the text, no more).
func BenchmarkRepeats(b *testing.B) {
	first := []byte(chunk(`"Hi"`, `"UC"`))
	type bench struct {
		name   string
		bodies [][]byte
	}
	cases := []bench{
		{"repeats", [][]byte{first, []byte(chunk(`" there"`, `"LcdzdJdMMgDHt6"`))}},
		{"two-shapes", [][]byte{first, []byte(`{"id":"x","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}`)}},
		{"three-shapes", [][]byte{first, []byte(`{"id":"x","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}`),
			[]byte(`{"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":1}}`)}},
	}
	for _, kb := range []int{1, 2, 4, 8} {
		text := `{"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("a", kb<<10) + `"},"finish_reason":null}]`
		cases = append(cases, bench{fmt.Sprintf("three-shapes-%dKB", kb),
			[][]byte{[]byte(text + `}`), []byte(text + `,"model":null}`), []byte(text + `,"usage":null}`)}})
	}
	for _, c := range cases {
		r := NewTemplates().For(1)
		benchBeside(b, c.name, "templates", c.bodies, func(body []byte, m *Members) error { return r.Read(body, eventShape, m) })
	}
}

// TestCommonPrefix: commonPrefix finds where two texts first differ, as a
// byte at a time does, at every place in texts of every length around its
// spans and words.
func TestCommonPrefix(t *testing.T) {
	naive := func(a, b []byte) int {
		i := 0
		for i < len(a) && i < len(b) && a[i] == b[i] {
			i++
		}
		return i
	}
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 47, 48, 49, 100, 4095, 4096, 4097, 9000} {
		a := make([]byte, n)
		for i := range a {
			a[i] = byte('a' + i%23)
		}
		if got := commonPrefix(a, a); got != n {
			t.Fatalf("%d bytes against themselves: %d", n, got)
		}
		for at := 0; at < n; at += 1 + at/16 {
			b := append([]byte(nil), a...)
			b[at] ^= 0x20
			if got, want := commonPrefix(a, b), naive(a, b); got != want {
				t.Fatalf("%d bytes differing at %d: %d, want %d", n, at, got, want)
			}
			if got, want := commonPrefix(a[:at+1], b), naive(a[:at+1], b); got != want {
				t.Fatalf("%d bytes differing at %d, the first cut: %d, want %d", n, at, got, want)
			}
		}
		if n > 0 {
			if got := commonPrefix(a[:n-1], a); got != n-1 {
				t.Fatalf("%d bytes against their prefix: %d", n, got)
			}
		}
	}
}
