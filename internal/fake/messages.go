package fake

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// Messages writes replies as the Anthropic Messages API does.
var Messages Format = messages{}

type messages struct{}

func (messages) Path() string { return "/messages" }

func (messages) usage(r Reply) string {
	return `{"input_tokens":` + strconv.Itoa(r.In) + `,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":` + strconv.Itoa(r.Out) + `}`
}

// input is a call's arguments as a tool_use block's input: the JSON value
// when the model wrote JSON, else the text as a string (as servers that
// cannot parse it send it).
func input(args string) string {
	if args != "" && gjson.Valid(args) {
		return args
	}
	return Quote(args)
}

func (f messages) blocks(r Reply) []string {
	var out []string
	if r.Text != "" {
		out = append(out, `{"type":"text","text":`+Quote(r.Text)+`}`)
	}
	for _, tc := range r.Calls {
		out = append(out, `{"type":"tool_use","id":`+Quote(tc.ID)+`,"name":`+Quote(tc.Name)+`,"input":`+input(tc.Args)+`}`)
	}
	return out
}

func stopReason(r Reply) string {
	if len(r.Calls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func (f messages) message(r Reply, content, stop, usage string) string {
	return `{"id":` + Quote(orDefault(r.ID, "msg_fake")) + `,"type":"message","role":"assistant","model":` + Quote(orDefault(r.Model, "fake-model")) +
		`,"content":` + content + `,"stop_reason":` + stop + `,"stop_sequence":null,"usage":` + usage + `}`
}

func (f messages) JSON(r Reply) string {
	return f.message(r, "["+strings.Join(f.blocks(r), ",")+"]", `"`+stopReason(r)+`"`, f.usage(r))
}

func (f messages) Events(r Reply, frag int) []string {
	var out []string
	ev := func(typ, rest string) {
		out = append(out, "event: "+typ+"\ndata: {\"type\":\""+typ+"\""+rest+"}\n\n")
	}
	ev("message_start", `,"message":`+f.message(r, "[]", "null",
		`{"input_tokens":`+strconv.Itoa(r.In)+`,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}`))
	i := 0
	if r.Text != "" {
		at := `,"index":` + strconv.Itoa(i)
		ev("content_block_start", at+`,"content_block":{"type":"text","text":""}`)
		ev("ping", "")
		for _, d := range fragments(r.Text, frag) {
			ev("content_block_delta", at+`,"delta":{"type":"text_delta","text":`+Quote(d)+`}`)
		}
		ev("content_block_stop", at)
		i++
	}
	for _, tc := range r.Calls {
		at := `,"index":` + strconv.Itoa(i)
		ev("content_block_start", at+`,"content_block":{"type":"tool_use","id":`+Quote(tc.ID)+`,"name":`+Quote(tc.Name)+`,"input":{}}`)
		if tc.Args != "" {
			for _, d := range fragments(tc.Args, frag) {
				ev("content_block_delta", at+`,"delta":{"type":"input_json_delta","partial_json":`+Quote(d)+`}`)
			}
		}
		ev("content_block_stop", at)
		i++
	}
	ev("message_delta", `,"delta":{"stop_reason":"`+stopReason(r)+`","stop_sequence":null},"usage":{"output_tokens":`+strconv.Itoa(r.Out)+`}`)
	ev("message_stop", "")
	return out
}

func (messages) Read(reply []byte) (string, string) {
	content := gjson.GetBytes(reply, "content")
	return content.Get(`#(type=="text").text`).Str, content.Get(`#(type=="tool_use").input`).Raw
}

func (messages) Reasked(body []byte) bool {
	// A re-ask ends with toolguard's instruction after the tool results; a
	// client's tool result has no such text.
	return contains(body, `"type":"tool_result"`) && strings.Contains(string(body), "were invalid and were not executed")
}
