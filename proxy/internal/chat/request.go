package chat

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// Path is the Chat Completions route below the API's base URL; a fallback
// re-ask goes there too.
const Path = "/chat/completions"

// Items is the member whose items a chat request's Members record: the
// conversation.
const Items = "messages"

// Read checks that a chat request's body reads the same to toolguard as to
// the upstream: strict JSON, an object, and tools declared unambiguously.
// It returns where the body's members are, found in the same pass, for
// MendHistory and NewRequest. The error is a *wire.Error for the client.
//
// d, if not nil, remembers declarations read before (see
// ladder.Declarations): they are not walked again, and tools read strictly
// before are not read again.
func Read(body []byte, known wire.KnownPrefix, d *ladder.Declarations, r wire.Repeats) (*wire.Members, error) {
	m, err := wire.ReadRequest(body, requestShape, wire.Items{Name: Items, Calls: historyCalls}, known, d.KnownValue("chat"), r)
	if err != nil {
		return nil, err
	}
	t := readTop(m)
	if _, err := d.Read("chat", declaring(t), func(tools bool) (ladder.Declared, error) {
		if ae := checkDeclarations(t); ae != nil {
			return ladder.Declared{}, ae
		}
		if !tools {
			return ladder.Declared{}, nil
		}
		return toolsOf(t), nil
	}); err != nil {
		return nil, err
	}
	return m, nil
}

// declaring is the members that declare a request's tools, as
// ladder.Declarations keeps them.
func declaring(t top) []string { return []string{t.tools.Raw, t.functions.Raw} }

// toolsOf reads the function tools of a request that checkDeclarations
// accepted: those of tools, or if it declares none there, those of the
// legacy functions.
func toolsOf(t top) ladder.Declared {
	if !t.tools.IsArray() && !t.functions.IsArray() {
		return ladder.Declared{Tools: ladder.NoTools, Legacy: true}
	}
	ts := &ladder.Tools{}
	add := func(fn gjson.Result) {
		var params []byte
		if p := fn.Get("parameters"); p.IsObject() || p.Type == gjson.True || p.Type == gjson.False {
			params = []byte(p.Raw)
		}
		ts.Add(fn.Get("name").Str, params)
	}
	t.tools.ForEach(func(_, t gjson.Result) bool {
		if typ := t.Get("type"); !typ.Exists() || typ.String() == "function" {
			add(t.Get("function"))
		}
		return true
	})
	if ts.Len() > 0 {
		return ladder.Declared{Tools: ts}
	}
	t.functions.ForEach(func(_, fn gjson.Result) bool {
		add(fn)
		return true
	})
	return ladder.Declared{Tools: ts, Legacy: true}
}

// Request is an inspected chat completion request: the body that goes
// upstream and the tools it declares.
type Request struct {
	Body  []byte
	tools *ladder.Tools
	// legacy: the tools are declared with the legacy "functions" field.
	legacy bool
	model  string
	// output stands for the content when the request declares a JSON
	// response_format (see ladder.OutputTool); nil otherwise.
	output *ladder.Tool
	// reply is what ReadReply found of the first reply's members.
	reply wire.Kept
}

// NewRequest reads the function tools of a chat request (checked by Read,
// whose Members m are, with the same d) and, if output is set, its JSON
// response_format. It returns nil when the request declares neither:
// nothing is then inspected.
func NewRequest(m *wire.Members, d *ladder.Declarations, output bool) *Request {
	t := readTop(m)
	decl, ok := d.Lookup("chat", declaring(t))
	if !ok {
		decl = toolsOf(t)
	}
	var out *ladder.Tool
	if output && t.responseFormat.Exists() {
		out = ladder.OutputFormat(t.responseFormat.Get("type").Str, t.responseFormat.Get("json_schema.schema"))
	}
	if decl.Tools.Len() == 0 && out == nil {
		return nil
	}
	return &Request{Body: m.Body(), tools: decl.Tools, legacy: decl.Legacy, model: strings.Clone(t.model.Str), output: out}
}

// Model is the model the request names.
func (q *Request) Model() string { return q.model }

// checkDeclarations refuses a chat request whose function tools toolguard
// could read differently from the upstream or the client:
//
//   - tools or functions that is not an array, or both holding entries
//     (which of them an upstream honours varies);
//   - a tools entry of another type that still carries a function (an
//     upstream may read it as a function tool, which toolguard would not
//     check); an entry with no type is a function tool, as upstreams
//     default it;
//   - a function tool or legacy function without a function object, a
//     non-empty string name, or with parameters that are not a schema
//     (toolguard would not declare it, an upstream may);
//   - two functions of one name: toolguard checks calls against the first,
//     a client that keys its tools by name (most do) runs the last.
func checkDeclarations(t top) *wire.Error {
	ambiguous, invalid := wire.ToolsAmbiguous, wire.ToolsInvalid
	tools, functions := t.tools, t.functions
	toolList, err := wire.DeclaredList(tools, "tools")
	if err != nil {
		return err
	}
	functionList, err := wire.DeclaredList(functions, "functions")
	if err != nil {
		return err
	}
	if toolList && functionList && tools.Get("#").Int() > 0 && functions.Get("#").Int() > 0 {
		return ambiguous("declare functions in tools or in the legacy functions, not both: upstreams differ in which they honour")
	}
	seen := map[string]bool{}
	function := func(where string, fn gjson.Result) bool {
		name := fn.Get("name")
		switch p := fn.Get("parameters"); {
		case !fn.IsObject():
			err = invalid(where + " has no function object")
		case name.Type != gjson.String || name.Str == "":
			err = invalid(where + " has no name: a function is named by a non-empty string")
		case p.Exists() && p.Type != gjson.Null && !p.IsObject() && !p.IsBool():
			err = invalid(where + "'s parameters are not a JSON schema (an object)")
		case seen[name.Str]:
			err = ambiguous(fmt.Sprintf("%s repeats the name %q: calls would be checked against the first declaration, and a client may run the last", where, wire.Clip(name.Str, 64)))
		}
		seen[name.Str] = true
		return err == nil
	}
	if toolList {
		tools.ForEach(func(i, t gjson.Result) bool {
			where := fmt.Sprintf("tools[%d]", i.Int())
			typ, fn := t.Get("type"), t.Get("function")
			switch {
			case !t.IsObject():
				err = invalid(where + " is not an object")
				return false
			case !typ.Exists() || (typ.Type == gjson.String && typ.Str == "function"):
				return function(where, fn)
			case fn.Exists():
				err = ambiguous(fmt.Sprintf("%s has type %s but carries a function: an upstream may read it as a function tool, which toolguard would not check", where, wire.Clip(typ.Raw, 40)))
				return false
			}
			return true
		})
	}
	if err != nil {
		return err
	}
	if functionList {
		functions.ForEach(func(i, f gjson.Result) bool {
			return function(fmt.Sprintf("functions[%d]", i.Int()), f)
		})
	}
	return err
}

// Stateful is "": a chat completion carries its whole conversation.
func (q *Request) Stateful() string { return "" }

// Tools are the functions the request declares.
func (q *Request) Tools() *ladder.Tools { return q.tools }

// top is the members of a request that toolguard reads.
type top struct {
	model, messages, tools, functions, responseFormat gjson.Result
}

// readTop looks the members up where the strict reading found them: each
// lookup in the body after a long messages array would skip over all of it
// again. The results point into the body, which is never changed in place:
// patches build new bodies.
func readTop(m *wire.Members) top {
	return top{
		model: m.Get("model"), messages: m.Get("messages"), tools: m.Get("tools"),
		functions: m.Get("functions"), responseFormat: m.Get("response_format"),
	}
}
