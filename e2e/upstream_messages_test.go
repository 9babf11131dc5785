package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// The fake Messages upstream answers as the Anthropic API does: ids msg_…
// and toolu_…, content blocks, stop_reason, usage with the cache counters,
// and in streams named events (message_start, content_block_start, its
// deltas and stop, a ping, message_delta with the output tokens,
// message_stop). A tool_use block's input is the model's arguments as JSON,
// or, when they are not JSON, the text as a string, as serving stacks that
// cannot parse a call send it.

// startMessagesUpstream starts a scripted Anthropic Messages endpoint
// (POST /v1/messages) that plays sc, streamed or not as each request asks.
func startMessagesUpstream(t *testing.T, sc scenario) *upstream {
	return startScripted(t, sc, (*upstream).serveMessages)
}

// messagesKind tells a client's tool result (the last user turn holds
// tool_result blocks) from toolguard's re-ask (tool_result blocks, then
// toolguard's instruction) and from a new turn.
func messagesKind(body []byte) string {
	msgs := gjson.GetBytes(body, "messages").Array()
	if len(msgs) == 0 {
		return kindFirst
	}
	last := msgs[len(msgs)-1].Get("content")
	if !strings.Contains(last.Raw, `"tool_result"`) {
		return kindFirst
	}
	if strings.Contains(last.Raw, "were invalid and were not executed") {
		return kindReask
	}
	return kindToolResult
}

func messageInput(args string) string {
	if gjson.Valid(args) {
		return args
	}
	return jsonString(args)
}

func messageBlock(n int, m reply, full bool) (string, string) {
	if m.callID == "" {
		text := ""
		if full {
			text = m.content
		}
		return `{"type":"text","text":` + jsonString(text) + `}`, "end_turn"
	}
	input := "{}"
	if full {
		input = messageInput(m.args)
	}
	return fmt.Sprintf(`{"type":"tool_use","id":"toolu_01e2e%04d","name":"click","input":%s}`, n, input), "tool_use"
}

func (u *upstream) serveMessages(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if !readScripted(w, r, "/v1/messages", func(b []byte) bool { body = b; return gjson.ValidBytes(b) }) {
		return
	}
	n, m := u.answer(messagesKind(body))
	id := fmt.Sprintf(`"msg_01e2e%04d"`, n)
	msg := func(content, stop, usage string) string {
		return `{"id":` + id + `,"type":"message","role":"assistant","model":"claude-e2e","content":` + content +
			`,"stop_reason":` + stop + `,"stop_sequence":null,"usage":` + usage + `}`
	}
	if !gjson.GetBytes(body, "stream").Bool() {
		block, stop := messageBlock(n, m, true)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, msg("["+block+"]", `"`+stop+`"`, `{"input_tokens":50,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":10,"service_tier":"standard"}`))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	event := func(typ, fields string) {
		io.WriteString(w, "event: "+typ+"\ndata: {\"type\":\""+typ+"\""+fields+"}\n\n")
		if flusher != nil {
			flusher.Flush()
		}
	}
	event("message_start", `,"message":`+msg("[]", "null", `{"input_tokens":50,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1,"service_tier":"standard"}`))
	start, stop := messageBlock(n, m, false)
	event("content_block_start", `,"index":0,"content_block":`+start)
	event("ping", "")
	if m.callID != "" {
		for _, frag := range fragments(m.args, 7) {
			event("content_block_delta", `,"index":0,"delta":{"type":"input_json_delta","partial_json":`+jsonString(frag)+`}`)
		}
	} else {
		for _, frag := range fragments(m.content, 4) {
			event("content_block_delta", `,"index":0,"delta":{"type":"text_delta","text":`+jsonString(frag)+`}`)
		}
	}
	event("content_block_stop", `,"index":0`)
	event("message_delta", `,"delta":{"stop_reason":"`+stop+`","stop_sequence":null},"usage":{"output_tokens":10}`)
	event("message_stop", "")
}
