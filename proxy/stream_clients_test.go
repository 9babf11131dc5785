package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/policy"
)

// Clients do not read a stream alike, and toolguard must never release what
// any of them reads as a call it did not check. These are the readings of
// the clients that matter, where they differ:
//
//   - openai-node: lines end at CR, LF or CRLF; each line is decoded by a
//     TextDecoder, which drops a byte order mark at its start; duplicate
//     names: the last wins (JSON.parse); a call's name is replaced by each
//     non-empty one that comes; an index is a JavaScript property name
//     ("00" and 0 are two calls).
//   - openai-python: lines end at CR, LF or CRLF; a byte order mark is part
//     of the line; the last duplicate wins; names, ids and arguments are
//     concatenated; an index that is not an integer fails.
//   - openai-go (the real SDK, in process): names and arguments
//     concatenated, as its ChatCompletionAccumulator does.
type clientReader string

const (
	nodeReader   clientReader = "openai-node"
	pythonReader clientReader = "openai-python"
)

// clientCall is one call as a client assembled it.
type clientCall struct{ Name, Args string }

// readAsClient returns the calls a client assembles from a stream, whether
// or not it later stops at an error, and the error it stops at, if any.
func readAsClient(body []byte, kind clientReader) (calls []clientCall, failed string) {
	type acc struct {
		name, args string
		order      int
	}
	accs := map[string]*acc{}
	defer func() {
		list := make([]*acc, 0, len(accs))
		for _, a := range accs {
			list = append(list, a)
		}
		for i := range list {
			for j := i + 1; j < len(list); j++ {
				if list[j].order < list[i].order {
					list[i], list[j] = list[j], list[i]
				}
			}
		}
		for _, a := range list {
			calls = append(calls, clientCall{a.name, a.args})
		}
	}()
	call := func(choice, index string) *acc {
		k := choice + "/" + index
		if accs[k] == nil {
			accs[k] = &acc{order: len(accs)}
		}
		return accs[k]
	}
	var data []string
	for _, line := range specLines(body) {
		if kind == nodeReader {
			line = strings.TrimPrefix(line, "\ufeff")
		}
		if line != "" {
			if strings.HasPrefix(line, ":") {
				continue
			}
			name, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			if name == "data" {
				data = append(data, value)
			}
			continue
		}
		if data == nil {
			continue
		}
		ev := strings.Join(data, "\n")
		data = nil
		if strings.HasPrefix(ev, "[DONE]") {
			return calls, failed
		}
		d := json.NewDecoder(strings.NewReader(ev))
		d.UseNumber()
		var chunk map[string]any // the last of duplicate names wins
		if err := d.Decode(&chunk); err != nil {
			return calls, "not JSON: " + err.Error()
		}
		if e, ok := chunk["error"]; ok && e != nil {
			return calls, "error event"
		}
		choices, ok := chunk["choices"].([]any)
		if !ok {
			return calls, "choices is not an array"
		}
		for _, c := range choices {
			c, _ := c.(map[string]any)
			ci, ok := indexKey(c, kind)
			if !ok {
				return calls, "choice index"
			}
			delta, _ := c["delta"].(map[string]any)
			var deltas []any
			switch tc := delta["tool_calls"].(type) {
			case nil:
			case []any:
				deltas = tc
			default:
				return calls, "tool_calls is not an array"
			}
			if fc, ok := delta["function_call"].(map[string]any); ok {
				deltas = append(deltas, map[string]any{"index": json.Number("-1"), "function": fc})
			}
			for _, td := range deltas {
				td, _ := td.(map[string]any)
				ti, ok := indexKey(td, kind)
				if !ok {
					return calls, "tool call index"
				}
				a := call(ci, ti)
				fn, _ := td["function"].(map[string]any)
				switch kind {
				case nodeReader:
					if n := jsString(fn["name"]); n != "" {
						a.name = n
					}
					a.args += jsString(fn["arguments"])
				case pythonReader:
					for _, f := range []struct {
						v  any
						to *string
					}{{fn["name"], &a.name}, {fn["arguments"], &a.args}} {
						switch v := f.v.(type) {
						case nil:
						case string:
							*f.to += v
						default:
							return calls, "a name or arguments that are not a string"
						}
					}
				}
			}
		}
	}
	return calls, "no [DONE]"
}

// specLines splits a stream into lines as the SSE specification does.
func specLines(b []byte) []string {
	var lines []string
	for len(b) > 0 {
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			return append(lines, string(b)) // not ended: never dispatched
		}
		lines = append(lines, string(b[:i]))
		if b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n' {
			i++
		}
		b = b[i+1:]
	}
	return lines
}

// indexKey is the key a client files a choice or a call under.
func indexKey(obj map[string]any, kind clientReader) (string, bool) {
	v, ok := obj["index"]
	if kind == nodeReader {
		if !ok {
			return "undefined", true
		}
		return jsString(v), true
	}
	n, isNum := v.(json.Number)
	if _, err := strconv.ParseInt(string(n), 10, 64); !isNum || err != nil {
		return "", false
	}
	return string(n), true
}

// jsString is what JavaScript makes of a JSON value in a string context
// ("" for what it treats as absent).
func jsString(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case json.Number:
		f, _ := v.Float64()
		return strconv.FormatFloat(f, 'f', -1, 64)
	case bool:
		if !v {
			return ""
		}
		return "true"
	case map[string]any:
		return "[object Object]"
	}
	return fmt.Sprint(v)
}

// readWithOpenAIGo runs the real openai-go client against srv and returns
// the calls its accumulator assembled.
func readWithOpenAIGo(t *testing.T, srvURL, tools string) (calls []clientCall, failed string) {
	t.Helper()
	var params openai.ChatCompletionNewParams
	if err := json.Unmarshal([]byte(`{"model":"m","messages":[{"role":"user","content":"go"}],"tools":`+tools+`}`), &params); err != nil {
		t.Fatal(err)
	}
	client := openai.NewClient(option.WithBaseURL(srvURL+"/v1"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	s := client.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		failed = err.Error()
	}
	for _, c := range acc.Choices {
		for _, tc := range c.Message.ToolCalls {
			calls = append(calls, clientCall{tc.Function.Name, tc.Function.Arguments})
		}
		if fc := c.Message.FunctionCall; fc.Name != "" || fc.Arguments != "" {
			calls = append(calls, clientCall{fc.Name, fc.Arguments})
		}
	}
	return calls, failed
}

// runTools are three tools whose names are made of one another, so that a
// name read in another way is another tool's.
const runTools = `[` +
	`{"type":"function","function":{"name":"run","parameters":{"type":"object","properties":{"script":{"type":"string"}},"required":["script"],"additionalProperties":false}}},` +
	`{"type":"function","function":{"name":"runrun","parameters":{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"],"additionalProperties":false}}},` +
	`{"type":"function","function":{"name":"prerun","parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"],"additionalProperties":false}}}]`

// validCall reports why a call is not a valid call of one of tools, or "".
// It checks with a validator of its own, independent of toolguard's.
func validCall(t *testing.T, tools string, c clientCall) string {
	t.Helper()
	var schema string
	gjson.Parse(tools).ForEach(func(_, tool gjson.Result) bool {
		if tool.Get("function.name").Str == c.Name {
			schema = tool.Get("function.parameters").Raw
		}
		return schema == ""
	})
	if schema == "" {
		return "no tool named " + strconv.Quote(c.Name)
	}
	comp := jsonschema.NewCompiler()
	if err := comp.AddResource("tool.json", strings.NewReader(schema)); err != nil {
		t.Fatal(err)
	}
	s, err := comp.Compile("tool.json")
	if err != nil {
		t.Fatal(err)
	}
	var args any
	if err := json.Unmarshal([]byte(c.Args), &args); err != nil {
		return "arguments are not JSON: " + err.Error()
	}
	if err := s.Validate(args); err != nil {
		return err.Error()
	}
	return ""
}

// ev is a chunk of one choice; choice is the raw JSON of its index, or ""
// for none.
func ev(choice, delta string) string {
	idx := ""
	if choice != "" {
		idx = `"index":` + choice + `,`
	}
	return `data: {"id":"chatcmpl-r","object":"chat.completion.chunk","created":1,"model":"m","choices":[{` + idx + `"delta":` + delta + `,"finish_reason":null}]}` + "\n\n"
}

// tc is a delta of one tool call; index is the raw JSON of its index.
func tc(index, fields string) string {
	return `{"tool_calls":[{"index":` + index + `,` + fields + `}]}`
}

// TestStreamsCarryOnlyCheckedCallsToEveryClient: for upstream streams that
// clients read in different ways, every call that openai-node,
// openai-python or the real openai-go client assembles from what toolguard
// sends is a valid call of a declared tool; toolguard either reads the
// stream as all of them do or ends it with an error event.
func TestStreamsCarryOnlyCheckedCallsToEveryClient(t *testing.T) {
	role := ev("0", `{"role":"assistant","content":null}`)
	end := `data: {"id":"chatcmpl-r","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n" + done
	start := func(choice, index, name string) string {
		return ev(choice, tc(index, `"id":"call_`+index+`","type":"function","function":{"name":"`+name+`","arguments":""}`))
	}
	args := func(choice, index, fragment string) string {
		return ev(choice, tc(index, `"function":{"arguments":`+quote(fragment)+`}`))
	}
	evil := ev("0", tc("1", `"id":"call_x","type":"function","function":{"name":"run","arguments":"{\"evil\":1}"}`))
	tests := []struct {
		name, stream string
		errorCode    string   // toolguard ends the stream with this error, or
		want         []string // every client reads these calls ("name args")
	}{
		{name: "byte order mark before a later event", errorCode: "upstream_invalid_event",
			stream: role + start("0", "0", "run") + args("0", "0", `{"script":"ls"}`) + "\ufeff" + evil + end},
		{name: "byte order mark on an event's second line", errorCode: "upstream_invalid_event",
			stream: role + ": keep-alive\n\ufeff" + evil + end},
		{name: "byte order mark after a lone CR", errorCode: "upstream_invalid_event",
			stream: role + ": keep-alive\r\ufeff" + evil + end},
		{name: "name in two parts", want: []string{`prerun {"cmd":"ls"}`},
			stream: role + start("0", "0", "pre") + ev("0", tc("0", `"function":{"name":"run"}`)) + args("0", "0", `{"cmd":"ls"}`) + end},
		{name: "name repeated", want: []string{`run {"script":"ls"}`},
			stream: role + start("0", "0", "run") + ev("0", tc("0", `"function":{"name":"run","arguments":"{\"script\":\"ls\"}"}`)) + end},
		{name: "name not a string", errorCode: "upstream_malformed_reply",
			stream: role + start("0", "0", "run") + ev("0", tc("0", `"function":{"name":5}`)) + args("0", "0", `{"script":"ls"}`) + end},
		{name: "call index as a string", errorCode: "upstream_malformed_reply",
			stream: role + start("0", "0", "run") + args("0", `"00"`, `{"script":"`) + args("0", "0", `{}`) + args("0", `"00"`, `"}`) + end},
		{name: "choice index as a string", errorCode: "upstream_malformed_reply",
			stream: role + start("0", "0", "run") + args(`"00"`, "0", `{"script":"`) + args("0", "0", `{}`) + args(`"00"`, "0", `"}`) + end},
		{name: "choice index missing", want: []string{`run {"script":"{}"}`},
			stream: role + start("0", "0", "run") + args("", "0", `{"script":"`) + args("0", "0", `{}`) + args("", "0", `"}`) + end},
		{name: "choice index null", want: []string{`run {"script":"{}"}`},
			stream: role + start("0", "0", "run") + args("null", "0", `{"script":"`) + args("0", "0", `{}`) + args("null", "0", `"}`) + end},
		{name: "call index null", want: []string{`run {"script":"ls"}`},
			stream: role + start("0", "0", "run") + args("0", "null", `{"script":"ls"}`) + end},
		{name: "call index 1.0", errorCode: "upstream_malformed_reply",
			stream: role + start("0", "0", "run") + args("0", "0", `{"script":"ls"}`) + start("0", "1.0", "run") + args("0", "1.0", `{"script":"ls"}`) + end},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, sseReply(tt.stream))
			srv, _ := guard(t, up, func(c *policy.Config) { c.MaxReasks = 0 })
			req := `{"model":"m","stream":true,"messages":[{"role":"user","content":"go"}],"tools":` + runTools + `}`
			_, body := post(t, srv, "/v1/chat/completions", req)
			readers := map[string]func() ([]clientCall, string){
				string(nodeReader):   func() ([]clientCall, string) { return readAsClient(body, nodeReader) },
				string(pythonReader): func() ([]clientCall, string) { return readAsClient(body, pythonReader) },
				"openai-go":          func() ([]clientCall, string) { return readWithOpenAIGo(t, srv.URL, runTools) },
			}
			for client, read := range readers {
				calls, failed := read()
				for _, c := range calls {
					if why := validCall(t, runTools, c); why != "" {
						t.Errorf("%s assembled an unchecked call %s %s (%s)\n%s", client, c.Name, c.Args, why, body)
					}
				}
				if tt.want != nil {
					var got []string
					for _, c := range calls {
						got = append(got, c.Name+" "+c.Args)
					}
					if fmt.Sprint(got) != fmt.Sprint(tt.want) || failed != "" {
						t.Errorf("%s read %q (failed: %q), want %q\n%s", client, got, failed, tt.want, body)
					}
				}
			}
			if tt.errorCode != "" && !strings.Contains(string(body), tt.errorCode) {
				t.Errorf("no %s error:\n%s", tt.errorCode, body)
			}
		})
	}
}
