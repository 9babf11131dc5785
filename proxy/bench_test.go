package proxy_test

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard/internal/fake"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy"
)

// benchReply is a typical tool-call completion (about 470 bytes).
var benchReply = toolReply(`{"prompt_tokens":82,"completion_tokens":17,"total_tokens":99}`,
	clickCall("call_Xc4Aiih37EUJvqjoZlu4Vdoi", `"{\"selector\":\"#login-button\"}"`))

// benchArms starts an upstream answering with handler and returns the URL of
// each arm in front of it: direct, a bare tuned httputil.ReverseProxy, and
// toolguard.
func benchArms(b *testing.B, handler http.HandlerFunc) map[string]string {
	up, bare := bareArms(b, handler)
	cfg := policy.Default()
	cfg.UpstreamURL = up.URL + "/v1"
	h, err := proxy.New(proxy.Options{Config: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	tg := httptest.NewServer(h)
	b.Cleanup(tg.Close)
	return map[string]string{"direct": up.URL, "reverseproxy": bare.URL, "toolguard": tg.URL}
}

// bareArms starts an upstream answering with handler and a bare tuned
// httputil.ReverseProxy in front of it.
func bareArms(b *testing.B, handler http.HandlerFunc) (up, bare *httptest.Server) {
	up = httptest.NewServer(handler)
	b.Cleanup(up.Close)
	target, _ := url.Parse(up.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 512, MaxIdleConns: 1024}
	bare = httptest.NewServer(rp)
	b.Cleanup(bare.Close)
	return up, bare
}

var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// BenchmarkChatCompletion sends the same non-streaming request with a
// tool-call reply straight to the upstream, through a bare reverse proxy
// and through toolguard (which validates the call).
func BenchmarkChatCompletion(b *testing.B) {
	benchPost(b, replyArms(b), clickRequest(""))
}

// replyArms are the benchmark's arms in front of an upstream that answers
// every request with benchReply.
func replyArms(b *testing.B) map[string]string { return benchArms(b, answerBenchReply) }

// answerBenchReply is an upstream that answers every request with
// benchReply.
func answerBenchReply(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, benchReply)
}

// longHistory is the request an agent sends after a few dozen turns: about
// 40 KB of history, after the messages in first.
func longHistory(first string) string {
	turn := `{"role":"user","content":"` + strings.Repeat("Click the next button on the page. ", 28) + `"},`
	return strings.Replace(clickRequest(""), `"messages":[`, `"messages":[`+first+strings.Repeat(turn, 40), 1)
}

// BenchmarkChatCompletionLongHistory is BenchmarkChatCompletion with the
// request an agent sends after a few dozen turns: about 40 KB of history.
func BenchmarkChatCompletionLongHistory(b *testing.B) {
	benchPost(b, replyArms(b), longHistory(""))
}

// BenchmarkChatCompletionNewConversation is
// BenchmarkChatCompletionLongHistory through toolguard with a conversation
// it has not seen before on every request (the first message differs), so
// the history cache never holds its prefix: the first turn's cost.
func BenchmarkChatCompletionNewConversation(b *testing.B) {
	url := replyArms(b)["toolguard"] + "/v1/chat/completions"
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		postReply(b, url, longHistory(fmt.Sprintf(`{"role":"user","content":"%08d"},`, i)))
	}
}

// postReply posts req to url; the answer must be benchReply.
func postReply(b *testing.B, url, req string) {
	resp, err := client.Post(url, "application/json", strings.NewReader(req))
	if err != nil {
		b.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || n != int64(len(benchReply)) {
		b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
	}
}

// benchPost posts req to each arm; every answer must be benchReply.
func benchPost(b *testing.B, arms map[string]string, req string) {
	for _, arm := range []string{"direct", "reverseproxy", "toolguard"} {
		b.Run(arm, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				postReply(b, arms[arm]+"/v1/chat/completions", req)
			}
		})
	}
}

// BenchmarkStream measures, on a stream of 300 content events followed by
// a tool call, the time to the first content byte and to the last byte,
// straight from the upstream, through a bare reverse proxy and through
// toolguard. The upstream sends the first content event and then waits until
// the client has seen it, so the first figure is the latency of one event
// through each arm, not the time to get scheduled while the rest of the
// stream is being copied on the same two cores. Each request waits on a
// token of its own: one left unread is dropped before the next request.
func BenchmarkStream(b *testing.B) {
	var sb strings.Builder
	for i := range 300 {
		sb.WriteString(chunk(textDelta(0, "word"+strings.Repeat("x", i%7)+" ")))
	}
	sb.WriteString(streamCall(0, 0, "call_1", `{"selector":"#login-button"}`))
	sb.WriteString(chunk(finish(0, "tool_calls")) + done)
	events := strings.SplitAfter(sb.String(), "\n\n")
	seen := make(chan struct{}, 1)
	arms := benchArms(b, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		io.WriteString(w, chunk(`[{"index":0,"delta":{"role":"assistant","content":"first"},"finish_reason":null}]`))
		f.Flush()
		select {
		case <-seen:
		case <-r.Context().Done():
			return
		}
		for _, ev := range events {
			io.WriteString(w, ev)
			f.Flush()
		}
	})
	req := streamRequest("")
	for _, arm := range []string{"direct", "reverseproxy", "toolguard"} {
		b.Run(arm, func(b *testing.B) {
			var first, last time.Duration
			for b.Loop() {
				// A token no upstream took (its request cut short: the bare
				// proxy's copy can fail, golang/go#40747, and the handler
				// may then return before reading it) would let the next
				// stream run on without waiting, and every later request of
				// the run would be timed against a stream that no longer
				// waits for the client.
				select {
				case <-seen:
				default:
				}
				start := time.Now()
				resp, err := client.Post(arms[arm]+"/v1/chat/completions", "application/json", strings.NewReader(req))
				if err != nil {
					b.Fatal(err)
				}
				sc := bufio.NewScanner(resp.Body)
				saw := false
				for sc.Scan() {
					if !saw && strings.Contains(sc.Text(), `"content":"first"`) {
						first += time.Since(start)
						saw = true
						seen <- struct{}{}
					}
				}
				last += time.Since(start)
				resp.Body.Close()
				if !saw {
					b.Fatal("no content")
				}
			}
			b.ReportMetric(float64(first.Microseconds())/float64(b.N), "µs-first-content")
			b.ReportMetric(float64(last.Microseconds())/float64(b.N), "µs-last-byte")
		})
	}
}

// BenchmarkFormats compares the two inspected wire formats side by side,
// through toolguard, on the valid path (a call valid as received) and the
// repair path (a key in another case, mended locally): the same call in a Chat
// Completions reply and in a Responses reply.
func BenchmarkFormats(b *testing.B) {
	const valid, otherCase = `{"selector":"#login-button"}`, `{"Selector":"#login-button"}`
	for _, f := range []struct {
		name, path, req string
		format          fake.Format
	}{
		{"chat", "/v1/chat/completions", clickRequest(""), fake.Chat},
		{"responses", "/v1/responses", responsesRequest(""), fake.Responses},
	} {
		for _, path := range []struct{ name, args, outcome string }{{"valid", valid, "valid"}, {"repair", otherCase, "repaired"}} {
			b.Run(f.name+"/"+path.name, func(b *testing.B) {
				reply := f.format.JSON(fake.Reply{Calls: []fake.Call{{ID: "call_Xc4Aiih37EUJvqjoZlu4Vdoi", Name: "click", Args: path.args}}, In: 82, Out: 17})
				benchInspected(b, reply, f.path, f.req, path.outcome)
			})
		}
	}
}

// BenchmarkContent measures what toolguard adds for a reply's content:
// plain text scanned for calls written as text (tools declared, none in
// it) beside the same text with no tools (not inspected), and a structured
// output (a JSON response_format) valid as received and mended.
func BenchmarkContent(b *testing.B) {
	text := strings.Repeat("The button is at the top right of the page, next to the search field. ", 28)
	const valid, fenced = `{"city":"Paris","temperature":21}`, "```json\n{\"city\":\"Paris\",\"temperature\":21,}\n```"
	for _, c := range []struct {
		name, req, content, outcome string
	}{
		{"text-without-tools", `{"model":"m","messages":[{"role":"user","content":"Where?"}]}`, text, ""},
		{"text-scanned-for-calls", clickRequest(""), text, "none"},
		{"structured-valid", structuredRequest(""), valid, "valid"},
		{"structured-repaired", structuredRequest(""), fenced, "repaired"},
	} {
		b.Run(c.name, func(b *testing.B) {
			benchInspected(b, fake.Chat.JSON(fake.Reply{Text: c.content, In: 82, Out: 17}), "/v1/chat/completions", c.req, c.outcome)
		})
	}
}

// benchInspected posts req to path through toolguard, whose upstream
// answers reply; every answer must be a 200 with the outcome given.
func benchInspected(b *testing.B, reply, path, req, outcome string) {
	arms := benchArms(b, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, reply)
	})
	b.ReportAllocs()
	for b.Loop() {
		resp, err := client.Post(arms["toolguard"]+path, "application/json", strings.NewReader(req))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Toolguard-Outcome") != outcome {
			b.Fatalf("status %d, outcome %q", resp.StatusCode, resp.Header.Get("X-Toolguard-Outcome"))
		}
	}
}

// BenchmarkChatCompletionParts splits what toolguard adds to a valid call's
// request, through HTTP beside a bare reverse proxy: the plumbing (toolguard
// with inspection off, TOOLGUARD_MODE=off), the access log (a JSON log line
// to a discarding writer, through slog, and written directly as cmd/proxy
// writes it by default (Options.AccessLog), against none), and the
// inspection (the default mode). Its figures are most telling as
// instruction counts (BENCHMARKS.md, "Instruction counts"): time through
// HTTP on two cores moves more than these parts differ.
func BenchmarkChatCompletionParts(b *testing.B) {
	up, bare := bareArms(b, answerBenchReply)
	arms := []struct {
		name string
		mode policy.Mode
		log  *slog.Logger
		// direct: the request line written without slog (Options.AccessLog).
		direct bool
		url    string
	}{
		{name: "reverseproxy", url: bare.URL},
		{name: "off", mode: policy.ModeOff, log: slog.New(slog.DiscardHandler)},
		{name: "off-logged", mode: policy.ModeOff, log: slog.New(slog.NewJSONHandler(io.Discard, nil))},
		{name: "toolguard", mode: policy.ModeRepair, log: slog.New(slog.DiscardHandler)},
		{name: "toolguard-logged", mode: policy.ModeRepair, log: slog.New(slog.NewJSONHandler(io.Discard, nil))},
		{name: "toolguard-logged-direct", mode: policy.ModeRepair, log: slog.New(slog.NewJSONHandler(io.Discard, nil)), direct: true},
	}
	req := clickRequest("")
	for _, arm := range arms {
		if arm.url == "" {
			cfg := policy.Default()
			cfg.UpstreamURL = up.URL + "/v1"
			cfg.Mode = arm.mode
			o := proxy.Options{Config: cfg, Logger: arm.log}
			if arm.direct {
				o.AccessLog = io.Discard
			}
			h, err := proxy.New(o)
			if err != nil {
				b.Fatal(err)
			}
			s := httptest.NewServer(h)
			b.Cleanup(s.Close)
			arm.url = s.URL
		}
		b.Run(arm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				postReply(b, arm.url+"/v1/chat/completions", req)
			}
		})
	}
}
