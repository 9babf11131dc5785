package messages

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// Path is the Messages route below the API's base URL; a fallback re-ask
// goes there too.
const Path = "/messages"

// The shapes of the bodies toolguard reads (see wire.Strict).
var (
	toolShape  = wire.Shape{"type": nil, "name": nil, "input_schema": nil, "description": nil}
	blockShape = wire.Shape{
		"type": nil, "id": nil, "name": nil, "input": nil, "text": nil, "tool_use_id": nil,
		"content": nil, "is_error": nil, "thinking": nil, "signature": nil, "data": nil,
	}
	messageShape = wire.Shape{"role": nil, "content": blockShape}
	requestShape = wire.Shape{
		"model": nil, "stream": nil, "system": nil, "messages": messageShape, "tools": toolShape,
		"tool_choice": wire.Shape{"type": nil, "name": nil, "disable_parallel_tool_use": nil},
		"thinking":    wire.Shape{"type": nil},
	}
	usageShape = wire.Shape{
		"input_tokens": nil, "output_tokens": nil, "cache_creation_input_tokens": nil, "cache_read_input_tokens": nil,
	}
	replyShape = wire.Shape{
		"id": nil, "type": nil, "role": nil, "model": nil, "content": blockShape,
		"stop_reason": nil, "stop_sequence": nil, "usage": usageShape,
	}
)

// replyBlocks are the content block types a reply may hold, as the API
// reference and the SDKs list them. A tool_use next to a block of another
// type is refused: a client that does not know it may read the content
// differently (an SDK that fails on it, or one that drops it and runs the
// calls).
var replyBlocks = map[string]bool{
	"text": true, "thinking": true, "redacted_thinking": true, "tool_use": true,
	"server_tool_use": true, "web_search_tool_result": true, "web_fetch_tool_result": true,
	"code_execution_tool_result": true, "bash_code_execution_tool_result": true,
	"text_editor_code_execution_tool_result": true, "tool_search_tool_result": true,
	"mcp_tool_use": true, "mcp_tool_result": true, "container_upload": true,
}

// requestBlocks are the block types of a request's messages: those of a
// reply (sent back in the history) and those a user turn holds.
var requestBlocks = func() map[string]bool {
	m := map[string]bool{"image": true, "document": true, "search_result": true, "tool_result": true}
	for k := range replyBlocks {
		m[k] = true
	}
	return m
}()

// Items is the member whose items a Messages request's Members record: the
// conversation.
const Items = "messages"

// Read checks that a Messages request's body reads the same to toolguard as
// to the upstream: strict JSON, an object, custom tools declared
// unambiguously, and no block of an unknown type in a message that holds
// tool_use or tool_result blocks. The error is a *wire.Error for the
// client.
//
// It returns where the body's members are, found in the same pass, for
// MendHistory and NewRequest.
//
// d, if not nil, remembers declarations read before (see
// ladder.Declarations): they are not walked again, and tools read strictly
// before are not read again.
func Read(body []byte, known wire.KnownPrefix, d *ladder.Declarations, r wire.Repeats) (*wire.Members, error) {
	m, err := wire.ReadRequest(body, requestShape, wire.Items{Name: Items, Calls: historyBlocks}, known, d.KnownValue("messages"), r)
	if err != nil {
		return nil, err
	}
	if _, err := d.ReadTools("messages", m.Get("tools"), readTools); err != nil {
		return nil, err
	}
	if blocksKnown(m) {
		return m, nil
	}
	// The messages of a prefix read before (m.Known) passed this check
	// then: only those after it are checked, and all of them again only to
	// number the one that fails.
	if spans, ok := m.Items(); ok && m.Known() > 0 && !slices.ContainsFunc(spans, func(s wire.Span) bool {
		return unknownBlock(m.Item(s).Get("content"), requestBlocks, "tool_use", "tool_result") != ""
	}) {
		return m, nil
	}
	m.ItemsValue().ForEach(func(i, msg gjson.Result) bool {
		if e := unknownBlock(msg.Get("content"), requestBlocks, "tool_use", "tool_result"); e != "" {
			err = &wire.Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "request_ambiguous",
				Msg: fmt.Sprintf("messages[%d]: %s", i.Int(), e)}
			return false
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// historyBlocks is where a message's blocks are, whose places and types
// the strict reading records (see wire.Members.Calls): every value of its
// content array, with its input.
var historyBlocks = []wire.CallMember{{Name: "content", Args: []string{"input"}, Type: "type"}}

// blocksKnown reports whether the strict reading recorded the messages'
// blocks (those after a prefix read before: see Read) and no message
// holds one that unknownBlock refuses. Its types are read where the reading
// found them, no message walked again: a new conversation's tool results
// are most of its bytes.
func blocksKnown(m *wire.Members) bool {
	blocks, ok := m.Calls()
	if !ok {
		return false
	}
	for i := 0; i < len(blocks); {
		near, odd := false, false
		j := i
		for ; j < len(blocks) && blocks[j].Item == blocks[i].Item; j++ {
			t := m.TypeOf(blocks[j])
			near = near || t.Str == "tool_use" || t.Str == "tool_result"
			odd = odd || t.Type != gjson.String || !requestBlocks[t.Str]
		}
		if near && odd {
			return false
		}
		i = j
	}
	return true
}

// unknownBlock says what is wrong with a content array that holds a block
// of one of the types near next to a block whose type is not in known (or
// not a string), or "".
func unknownBlock(content gjson.Result, known map[string]bool, near ...string) string {
	if !content.IsArray() {
		return ""
	}
	calls, odd := false, ""
	content.ForEach(func(j, b gjson.Result) bool {
		t := b.Get("type")
		for _, n := range near {
			calls = calls || t.Str == n
		}
		if odd == "" && (t.Type != gjson.String || !known[t.Str]) {
			odd = fmt.Sprintf("content[%d] is a block of type %s, which toolguard does not know, next to tool_use blocks: a client may read it differently", j.Int(), wire.Clip(t.Raw, 64))
		}
		return true
	})
	if calls {
		return odd
	}
	return ""
}

// custom reports whether a tools entry is a custom tool (a function whose
// calls are checked): no type, or "custom". Server tools carry their
// versioned type and pass as they are.
func custom(t gjson.Result) bool {
	typ := t.Get("type")
	return !typ.Exists() || typ.Type == gjson.Null || (typ.Type == gjson.String && typ.Str == "custom")
}

// readTools reads the custom tools of a request, refusing declarations that
// toolguard could read differently from the upstream or the client: tools
// that is not an array of objects, a tool without a non-empty string
// name, an input_schema that is not a schema, two tools of one name.
func readTools(tools gjson.Result) (*ladder.Tools, error) {
	ambiguous, invalid := wire.ToolsAmbiguous, wire.ToolsInvalid
	switch list, lerr := wire.DeclaredList(tools, "tools"); {
	case lerr != nil:
		return nil, lerr
	case !list:
		return ladder.NoTools, nil
	}
	ts := &ladder.Tools{}
	var err error
	tools.ForEach(func(i, t gjson.Result) bool {
		where := fmt.Sprintf("tools[%d]", i.Int())
		if !t.IsObject() {
			err = invalid(where + " is not an object")
			return false
		}
		if !custom(t) {
			if t.Get("type").Type != gjson.String {
				err = invalid(where + "'s type is not a string")
				return false
			}
			return true
		}
		name, s := t.Get("name"), t.Get("input_schema")
		switch {
		case name.Type != gjson.String || name.Str == "":
			err = invalid(where + " has no name: a tool is named by a non-empty string")
			return false
		case s.Exists() && s.Type != gjson.Null && !s.IsObject():
			err = invalid(where + "'s input_schema is not a JSON schema (an object)")
			return false
		}
		var params []byte
		if s.IsObject() {
			params = []byte(s.Raw)
		}
		if !ts.Add(name.Str, params) {
			err = ambiguous(fmt.Sprintf("%s repeats the name %q: calls would be checked against the first declaration, and a client may run the last", where, wire.Clip(name.Str, 64)))
			return false
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return ts, nil
}

// Request is an inspected Messages request.
type Request struct {
	Body  []byte
	tools *ladder.Tools
	model string
	// reply is where the members of the reply ReadReply read last are,
	// for Usage and Turns, which read the same body next.
	reply wire.Kept
}

// NewRequest reads the custom tools of a request (checked by Read); it
// returns nil when there is nothing to inspect. Messages has no JSON
// response format of its own (output is ignored): its JSON-output pattern
// is a forced tool, whose calls are checked as any other.
//
// m is where the body's members are (see Read).
func NewRequest(m *wire.Members, d *ladder.Declarations, output bool) *Request {
	ts, err := d.OpenTools("messages", m.Get("tools"), readTools)
	if err != nil || ts.Len() == 0 {
		return nil
	}
	return &Request{Body: m.Body(), tools: ts, model: strings.Clone(m.Get("model").Str)}
}

// Tools are the custom tools the request declares.
func (q *Request) Tools() *ladder.Tools { return q.tools }

// Model is the model the request names.
func (q *Request) Model() string { return q.model }

// Stateful is "": a Messages request carries its whole conversation.
func (q *Request) Stateful() string { return "" }
