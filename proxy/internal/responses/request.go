package responses

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// Path is the Responses route below the API's base URL; a fallback re-ask
// goes there too.
const Path = "/responses"

// The shapes of the bodies toolguard reads (see wire.Strict).
var (
	toolShape = wire.Shape{"type": nil, "name": nil, "parameters": nil, "strict": nil, "description": nil}
	itemShape = wire.Shape{
		"type": nil, "id": nil, "role": nil, "content": partShape, "status": nil,
		"call_id": nil, "name": nil, "namespace": nil, "arguments": nil, "output": nil,
	}
	requestShape = wire.Shape{
		"model": nil, "stream": nil, "stream_options": nil, "input": itemShape, "tools": toolShape,
		"tool_choice": wire.Shape{"type": nil, "name": nil}, "previous_response_id": nil,
		"conversation": nil, "store": nil, "background": nil,
		"text": wire.Shape{"format": wire.Shape{"type": nil, "name": nil, "schema": nil, "strict": nil}},
	}
	partShape     = wire.Shape{"type": nil, "text": nil, "refusal": nil}
	usageShape    = wire.Shape{"input_tokens": nil, "output_tokens": nil, "total_tokens": nil}
	responseShape = wire.Shape{
		"id": nil, "model": nil, "status": nil, "output": itemShape, "usage": usageShape, "error": nil,
		"incomplete_details": wire.Shape{"reason": nil},
	}
	eventShape = wire.Shape{
		"type": nil, "sequence_number": nil, "output_index": nil, "item_id": nil, "item": itemShape,
		"delta": nil, "arguments": nil, "name": nil, "response": responseShape,
	}
)

func init() {
	// A namespace holds functions as tools holds them.
	toolShape["tools"] = toolShape
}

// Items is the member whose items a Responses request's Members record:
// the conversation's input items.
const Items = "input"

// Read checks that a Responses request's body reads the same to toolguard
// as to the upstream: strict JSON, an object, and function tools declared
// unambiguously. It returns where the body's members are, found in the
// same pass, for MendHistory, NewRequest and Uninspectable. The error is a
// *wire.Error for the client.
//
// d, if not nil, remembers declarations read before (see
// ladder.Declarations): they are not walked again, and tools read strictly
// before are not read again.
func Read(body []byte, known wire.KnownPrefix, d *ladder.Declarations, r wire.Repeats) (*wire.Members, error) {
	m, err := wire.ReadRequest(body, requestShape, wire.Items{Name: Items, Calls: historyItems}, known, d.KnownValue("responses"), r)
	if err != nil {
		return nil, err
	}
	if _, err := d.ReadTools("responses", m.Get("tools"), readTools); err != nil {
		return nil, err
	}
	return m, nil
}

// tool is a declared function: its key in ladder.Tools is its name, or
// "namespace.name" for a function of a namespace.
type tool struct{ namespace, name string }

// readTools reads the function tools of a request, refusing declarations
// that toolguard could read differently from the upstream or the client:
// tools that is not an array of objects, an entry without a type, a
// function without a non-empty string name or whose parameters are not a
// schema, and two functions of one name (toolguard would check calls
// against the first, a client that keys its tools by name runs the last).
// Entries of other types (built-in tools, custom tools, MCP) are not
// inspected.
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
	function := func(where string, namespace string, t gjson.Result) bool {
		name, p := t.Get("name"), t.Get("parameters")
		switch {
		case name.Type != gjson.String || name.Str == "":
			err = invalid(where + " has no name: a function is named by a non-empty string")
			return false
		case p.Exists() && p.Type != gjson.Null && !p.IsObject() && !p.IsBool():
			err = invalid(where + "'s parameters are not a JSON schema (an object)")
			return false
		}
		key := name.Str
		if namespace != "" {
			key = namespace + "." + name.Str
		}
		var params []byte
		if p.IsObject() || p.IsBool() {
			params = []byte(p.Raw)
		}
		if !ts.Add(key, params) {
			err = ambiguous(fmt.Sprintf("%s repeats the name %q: calls would be checked against the first declaration, and a client may run the last", where, wire.Clip(key, 64)))
			return false
		}
		return true
	}
	tools.ForEach(func(i, t gjson.Result) bool {
		where := fmt.Sprintf("tools[%d]", i.Int())
		typ := t.Get("type")
		switch {
		case !t.IsObject():
			err = invalid(where + " is not an object")
			return false
		case typ.Type != gjson.String:
			err = invalid(where + " has no type")
			return false
		case typ.Str == "function":
			return function(where, "", t)
		case typ.Str == "namespace":
			ns := t.Get("name")
			if ns.Type != gjson.String || ns.Str == "" {
				err = invalid(where + " is a namespace without a name")
				return false
			}
			fns := t.Get("tools")
			if fns.Exists() && !fns.IsArray() {
				err = ambiguous(where + ".tools must be an array")
				return false
			}
			fns.ForEach(func(j, f gjson.Result) bool {
				w := fmt.Sprintf("%s.tools[%d]", where, j.Int())
				switch ft := f.Get("type"); {
				case !f.IsObject():
					err = invalid(w + " is not an object")
					return false
				case ft.Type == gjson.String && ft.Str == "function":
					return function(w, ns.Str, f)
				}
				return true
			})
			return err == nil
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return ts, nil
}

// Request is an inspected Responses request.
type Request struct {
	Body  []byte
	tools *ladder.Tools
	model string
	// stateful says why the request must not be re-asked (see Stateful).
	stateful string
	// output stands for the text when the request declares a JSON
	// text.format (see ladder.OutputTool); nil otherwise.
	output *ladder.Tool
	// reply is what ReadReply found of the reply's members.
	reply wire.Kept
}

// NewRequest reads the function tools of a request (checked by Read) and,
// if output is set, its JSON text.format. It returns nil when there is
// nothing to inspect. A background request is read like any other: see
// Uninspectable.
//
// m is where the body's members are (see Read).
func NewRequest(m *wire.Members, d *ladder.Declarations, output bool) *Request {
	ts, err := d.OpenTools("responses", m.Get("tools"), readTools)
	if err != nil {
		return nil
	}
	var out *ladder.Tool
	if output {
		f := m.Get("text").Get("format")
		out = ladder.OutputFormat(f.Get("type").Str, f.Get("schema"))
	}
	if ts.Len() == 0 && out == nil {
		return nil
	}
	q := &Request{Body: m.Body(), tools: ts, model: strings.Clone(m.Get("model").Str), output: out}
	switch c := m.Get("conversation"); {
	case c.Exists() && c.Type != gjson.Null:
		q.stateful = "the request continues a conversation, whose stored items a re-ask would change"
	case m.Get("previous_response_id").Type == gjson.String:
		q.stateful = "the request continues a stored response (previous_response_id), which a re-ask would not continue from"
	}
	return q
}

// Uninspectable says why toolguard cannot inspect the reply to a request,
// or "". declares says whether the request itself declares something to
// inspect. A background response is fetched later by its id, outside any
// request toolguard sees, and its stream can be resumed there too: that
// matters only for a request that declares something. Any background but
// false or null counts: a server may read "true", 1 or {} as true. A stored
// prompt (prompt, by its id) may declare function tools and a JSON text
// format of its own that the request does not show, so its calls and output
// could not be checked, whatever the request declares.
func Uninspectable(m *wire.Members, declares bool) string {
	if p := m.Get("prompt"); p.Exists() && p.Type != gjson.Null {
		return "a stored prompt may declare tools and an output format that the request does not show, so its calls could not be checked"
	}
	if !declares {
		return ""
	}
	switch b := m.Get("background"); {
	case !b.Exists(), b.Type == gjson.Null, b.Type == gjson.False:
		return ""
	}
	return "a background response is fetched later by its id, outside any request toolguard sees"
}

// Tools are the functions the request declares.
func (q *Request) Tools() *ladder.Tools { return q.tools }

// Model is the model the request names.
func (q *Request) Model() string { return q.model }

// Stateful says why the request must not be re-asked, "" if it may be: a
// request that continues stored state (previous_response_id, a
// conversation) would see a re-ask's attempt added to that state, or
// chain from the wrong response.
func (q *Request) Stateful() string { return q.stateful }
