package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard/internal/fake"
	"github.com/toolguard/toolguard/policy"
)

// slogLine is the line slog.NewJSONHandler writes for the record.
func slogLine(t testing.TB, at time.Time, level slog.Level, msg string, attrs []slog.Attr) string {
	t.Helper()
	var buf bytes.Buffer
	r := slog.NewRecord(at, level, msg, 0)
	r.AddAttrs(attrs...)
	if err := slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}).Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// requestAttrs are a request line's attributes, as finish builds them.
func requestAttrs(method, path, repair, gaveUp string, status int64, ms float64, repairs bool) []slog.Attr {
	var rs []string
	if repairs {
		rs = []string{repair, "coerce_type /x"}
	}
	return []slog.Attr{
		slog.String("method", method), slog.String("route", "/v1/chat/completions"), slog.String("path", path),
		slog.Int64("status", status), slog.Int64("bytes", 470), slog.Float64("duration_ms", ms),
		slog.Int64("upstream_status", 200), slog.Float64("upstream_ms", ms/2),
		slog.String("format", "chat"), slog.String("outcome", "valid"), slog.Int("attempts", 1), slog.Int("reasks", 0),
		slog.Any("repairs", rs), slog.Float64("overhead_ms", 0), slog.String("gave_up", gaveUp),
		slog.String("request_id", "3f2a9c41d0e84b7f"),
	}
}

// TestAccessLineAsSlogWrites: the request line written without slog is
// slog's JSONHandler's, byte for byte, and a line with any value it does
// not write as slog does is left to slog.
func TestAccessLineAsSlogWrites(t *testing.T) {
	at := time.Date(2026, 11, 27, 13, 11, 35, 123456789, time.UTC)
	tests := []struct {
		name  string
		at    time.Time
		level slog.Level
		attrs []slog.Attr
		ok    bool
	}{
		{"valid call", at, slog.LevelInfo, requestAttrs("POST", "/v1/chat/completions", "rename_key /element", "", 200, 0.734, false), true},
		{"repairs", at, slog.LevelInfo, requestAttrs("POST", "/v1/chat/completions", "rename_key /element", "", 200, 12.5, true), true},
		{"probe at debug", at.In(time.FixedZone("", 3600)), slog.LevelDebug, requestAttrs("GET", "/healthz", "", "", 200, 0.001, false), true},
		{"no time", time.Time{}, slog.LevelInfo, requestAttrs("POST", "/v1/responses", "", "", 499, 1e6, false), true},
		{"large and small floats", at, slog.LevelWarn, []slog.Attr{slog.Float64("a", 1e-6), slog.Float64("b", 9.99e20), slog.Float64("c", -2.5), slog.Float64("d", math.Copysign(0, -1))}, true},
		{"quote in path", at, slog.LevelInfo, requestAttrs("POST", `/v1/a"b`, "", "", 404, 1, false), false},
		{"backslash in an error", at, slog.LevelInfo, requestAttrs("POST", "/v1/chat/completions", "", `bad \ value`, 200, 1, false), false},
		{"control character in a repair", at, slog.LevelInfo, requestAttrs("POST", "/v1/chat/completions", "rename_key /a\bb", "", 200, 1, true), false},
		{"non-ASCII path", at, slog.LevelInfo, requestAttrs("POST", "/v1/é", "", "", 404, 1, false), false},
		{"line separator", at, slog.LevelInfo, requestAttrs("POST", "/v1/\u2028", "", "", 404, 1, false), false},
		{"invalid UTF-8", at, slog.LevelInfo, requestAttrs("POST", "/v1/\xff", "", "", 404, 1, false), false},
		{"HTML", at, slog.LevelInfo, requestAttrs("POST", "/v1/<a>&", "<b>", "", 404, 1, true), true},
		{"tiny float", at, slog.LevelInfo, []slog.Attr{slog.Float64("ms", 1e-7)}, false},
		{"huge float", at, slog.LevelInfo, []slog.Attr{slog.Float64("ms", 1e21)}, false},
		{"not a number", at, slog.LevelInfo, []slog.Attr{slog.Float64("ms", math.NaN())}, false},
		{"year 10000", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), slog.LevelInfo, []slog.Attr{slog.Int("a", 1)}, false},
		{"another kind", at, slog.LevelInfo, []slog.Attr{slog.Bool("ok", true)}, false},
		{"another type", at, slog.LevelInfo, []slog.Attr{slog.Any("n", []int{1})}, false},
		{"empty key", at, slog.LevelInfo, []slog.Attr{slog.String("", "x")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := appendAccessLine(nil, tt.at, tt.level, "request", tt.attrs)
			if ok != tt.ok {
				t.Fatalf("written: %v, want %v (%s)", ok, tt.ok, got)
			}
			if want := slogLine(t, tt.at, tt.level, "request", tt.attrs); ok && string(got) != want {
				t.Fatalf("line\n%s\nslog writes\n%s", got, want)
			}
		})
	}
}

// FuzzAccessLine: whatever the values, a line written without slog is the
// line slog writes; and a line of plain values is written.
func FuzzAccessLine(f *testing.F) {
	f.Add("POST", "/v1/chat/completions", "rename_key /element", "", int64(200), 0.734, true)
	f.Add("GET", `/v1/"x"`, "a\x00b", "not \u2028 valid\xff", int64(-1), 1e-9, false)
	f.Add("PUT", "/", "", "<&>", int64(0), -0.0, true)
	f.Fuzz(func(t *testing.T, method, path, repair, gaveUp string, status int64, ms float64, repairs bool) {
		at := time.Unix(1_700_000_000, status)
		attrs := requestAttrs(method, path, repair, gaveUp, status, ms, repairs)
		got, ok := appendAccessLine(nil, at, slog.LevelInfo, "request", attrs)
		if ok {
			if want := slogLine(t, at, slog.LevelInfo, "request", attrs); string(got) != want {
				t.Fatalf("line\n%s\nslog writes\n%s", got, want)
			}
			return
		}
		finite := ms == 0 || 1e-6 <= math.Abs(ms) && math.Abs(ms/2) >= 1e-6 && math.Abs(ms) < 1e21
		if plain(method) && plain(path) && plain(repair) && plain(gaveUp) && finite {
			t.Fatalf("a line of plain values was not written: %v", attrs)
		}
	})
}

// TestAccessLogWriter: through HTTP, a request's line goes to
// Options.AccessLog (one line, the fields slog would write, in order), and
// a request whose line cannot be written so goes through the Logger.
func TestAccessLogWriter(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(fake.Chat.JSON(fake.Reply{Calls: []fake.Call{{ID: "call_a", Name: "click", Args: `{"selector":"#a"}`}}})))
	}))
	defer up.Close()
	lines := func(access bool, path string) (direct, logged []map[string]any, keys []string) {
		var fast, slow bytes.Buffer
		cfg := policy.Default()
		cfg.UpstreamURL = up.URL + "/v1"
		o := Options{Config: cfg, Logger: slog.New(slog.NewJSONHandler(&slow, nil))}
		if access {
			o.AccessLog = &fast
		}
		h, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		body := `{"model":"m","messages":[{"role":"user","content":"Go."}],"tools":[{"type":"function","function":{"name":"click","parameters":{"type":"object","properties":{"selector":{"type":"string"}}}}}]}`
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(httptest.NewRecorder(), r)
		read := func(b *bytes.Buffer) (out []map[string]any) {
			for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
				if l == "" {
					continue
				}
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatalf("%q: %v", l, err)
				}
				out = append(out, m)
				if m["msg"] == "request" {
					d := json.NewDecoder(strings.NewReader(l))
					d.Token()
					for d.More() {
						k, _ := d.Token()
						keys = append(keys, k.(string))
						var v any
						d.Decode(&v)
					}
				}
			}
			return out
		}
		return read(&fast), read(&slow), keys
	}
	direct, logged, fastKeys := lines(true, "/v1/chat/completions")
	if len(direct) != 1 || direct[0]["outcome"] != "valid" || direct[0]["level"] != "INFO" {
		t.Fatalf("AccessLog got %v", direct)
	}
	for _, m := range logged {
		if m["msg"] == "request" {
			t.Fatalf("the request line went through the Logger too: %v", m)
		}
	}
	_, logged, slowKeys := lines(false, "/v1/chat/completions")
	if strings.Join(fastKeys, ",") != strings.Join(slowKeys, ",") || len(logged) != 1 {
		t.Fatalf("fields %v, through slog %v", fastKeys, slowKeys)
	}
	// A path with a quote in it: through the Logger.
	direct, logged, _ = lines(true, `/v1/chat/completions/"x"`)
	if len(direct) != 0 || len(logged) != 1 || logged[0]["path"] != `/v1/chat/completions/"x"` {
		t.Fatalf("AccessLog got %v, Logger %v", direct, logged)
	}
}

// plainBytes is plain, one byte at a time.
func plainBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// TestPlainAsBytes: plain, reading eight bytes at a time, says what a byte
// at a time says: every byte value at every place of strings of 1 to 24
// bytes, among plain ones and next to each kind that is not.
func TestPlainAsBytes(t *testing.T) {
	for n := 1; n <= 24; n++ {
		for _, fill := range []byte{'a', '~', ' ', '!', '#', '[', ']', 0x1f, 0x7f, 0x80, '"', '\\', 0xff} {
			for i := 0; i < n; i++ {
				for c := 0; c < 256; c++ {
					b := bytes.Repeat([]byte{'a'}, n)
					b[(i+n/2)%n] = fill
					b[i] = byte(c)
					if s := string(b); plain(s) != plainBytes(s) {
						t.Fatalf("plain(%q) = %v", s, plain(s))
					}
				}
			}
		}
	}
}

// TestAppendFloatAsStrconv: the line's floats are written as
// strconv.AppendFloat(b, f, 'f', -1, 64) writes them: every whole number of
// microseconds up to 2 s and around each power of ten up to 15 digits, in
// milliseconds as millis makes them, and floats that are no such number.
func TestAppendFloatAsStrconv(t *testing.T) {
	check := func(f float64) {
		t.Helper()
		if got, want := string(appendFloat(nil, f)), strconv.FormatFloat(f, 'f', -1, 64); got != want {
			t.Fatalf("appendFloat(%v) = %s, want %s", f, got, want)
		}
	}
	for us := int64(0); us <= 2_000_000; us++ {
		check(millis(time.Duration(us) * time.Microsecond))
	}
	for p := int64(10); p <= 1e16; p *= 10 {
		for k := p - 2000; k <= p+2000; k++ {
			check(float64(k) / 1000)
		}
	}
	for _, f := range []float64{1e-6, 0.0004, 0.0005, 0.0015, 1.0 / 3, 2.0 / 3, 0.1 + 0.2, 1e14 + 0.5, 999999999999.9995,
		999999999999.999, 1e12, 1e15, 1e20, 9.99e20, math.Nextafter(0.734, 1), math.Nextafter(0.734, 0),
		-0.734, -1, math.Copysign(0, -1), 0, math.SmallestNonzeroFloat64} {
		check(f)
	}
}
