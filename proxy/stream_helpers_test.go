package proxy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"
)

// chunk renders one chat.completion.chunk event.
func chunk(choices string) string {
	return `data: {"id":"chatcmpl-s","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":` + choices + "}\n\n"
}

// textDelta, callStart, argsDelta and finish build the choices of a chunk.
func textDelta(choice int, text string) string {
	return fmt.Sprintf(`[{"index":%d,"delta":{"content":%s},"finish_reason":null}]`, choice, quote(text))
}

func callStart(choice, index int, id, name string) string {
	return fmt.Sprintf(`[{"index":%d,"delta":{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]},"finish_reason":null}]`, choice, index, id, name)
}

func argsDelta(choice, index int, fragment string) string {
	return fmt.Sprintf(`[{"index":%d,"delta":{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]},"finish_reason":null}]`, choice, index, quote(fragment))
}

func finish(choice int, reason string) string {
	return fmt.Sprintf(`[{"index":%d,"delta":{},"finish_reason":%q}]`, choice, reason)
}

const done = "data: [DONE]\n\n"

func usageChunk(total int) string {
	return fmt.Sprintf(`data: {"id":"chatcmpl-s","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":0,"total_tokens":%d}}`+"\n\n", total, total)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// streamCall streams one click call with its arguments in fragments.
func streamCall(choice, index int, id, args string) string {
	var b strings.Builder
	b.WriteString(chunk(callStart(choice, index, id, "click")))
	for len(args) > 0 {
		n := min(5, len(args))
		b.WriteString(chunk(argsDelta(choice, index, args[:n])))
		args = args[n:]
	}
	return b.String()
}

// sseReply is an upstream reply streaming body.
func sseReply(body string) reply {
	return reply{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: body}
}

// assembled is what a streaming client makes of a stream.
type assembled struct {
	Content map[int]string
	Calls   map[int][]string // per choice: "id name args", by index
	Finish  map[int]string
	Usage   string
	Comment string
	Error   string
	Done    bool
}

// assemble reads a stream the way an OpenAI client does: data lines, deltas
// accumulated by choice and tool-call index.
func assemble(t *testing.T, body []byte) assembled {
	t.Helper()
	a := assembled{Content: map[int]string{}, Calls: map[int][]string{}, Finish: map[int]string{}}
	type acc struct{ id, name, args string }
	calls := map[int]map[int]*acc{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, ": toolguard") {
			a.Comment = line
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if a.Done {
			t.Errorf("event after [DONE]: %s", line)
		}
		if data == "[DONE]" {
			a.Done = true
			continue
		}
		if !gjson.Valid(data) {
			t.Fatalf("event is not JSON: %s", data)
		}
		if e := gjson.Get(data, "error"); e.Exists() {
			a.Error = e.Raw
			continue
		}
		if u := gjson.Get(data, "usage"); u.IsObject() {
			a.Usage = u.Raw
		}
		gjson.Get(data, "choices").ForEach(func(_, c gjson.Result) bool {
			ci := int(c.Get("index").Int())
			a.Content[ci] += c.Get("delta.content").String()
			if fr := c.Get("finish_reason"); fr.Type == gjson.String {
				a.Finish[ci] = fr.Str
			}
			c.Get("delta.tool_calls").ForEach(func(_, d gjson.Result) bool {
				if calls[ci] == nil {
					calls[ci] = map[int]*acc{}
				}
				k := int(d.Get("index").Int())
				if calls[ci][k] == nil {
					calls[ci][k] = &acc{}
				}
				x := calls[ci][k]
				x.id += d.Get("id").String()
				x.name += d.Get("function.name").String()
				x.args += d.Get("function.arguments").String()
				return true
			})
			return true
		})
	}
	for ci, m := range calls {
		keys := make([]int, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Ints(keys)
		for _, k := range keys {
			a.Calls[ci] = append(a.Calls[ci], m[k].id+" "+m[k].name+" "+m[k].args)
		}
	}
	return a
}

// bytesAllocated is the number of bytes the process allocated while f ran:
// work measured in a unit that does not depend on the machine.
func bytesAllocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func streamRequest(extra string) string {
	return clickRequest(`,"stream":true` + extra)
}

// splitUpstream answers every request with stream, written in two network
// writes cut at the byte the returned counter holds.
func splitUpstream(t *testing.T, stream string) (*fakeUpstream, *atomic.Int64) {
	var split atomic.Int64
	up := newUpstream(t)
	up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "text/event-stream")
		at := int(split.Load())
		io.WriteString(w, stream[:at])
		w.(http.Flusher).Flush()
		io.WriteString(w, stream[at:])
	}
	return up, &split
}
