package proxy

import (
	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/validate"
)

// objectSchema stands in for a function declared without parameters: such a
// function takes an object, and OpenAI sends "{}" for it.
var objectSchema = []byte(`{"type":"object"}`)

// tool is one declared function.
type tool struct {
	name   string
	params []byte // the parameters schema as the client sent it
}

// toolset is what a request declares: function tools (or legacy functions).
type toolset struct {
	legacy bool // declared with the legacy "functions" field
	byName map[string]*tool
	names  []string
}

// declaredTools reads the function tools of a chat request. It returns nil
// when the request declares none, and then nothing is inspected.
func declaredTools(body []byte) *toolset {
	ts := &toolset{byName: map[string]*tool{}}
	add := func(fn gjson.Result) {
		n := fn.Get("name")
		name := n.Str
		if n.Type != gjson.String || name == "" || ts.byName[name] != nil {
			return
		}
		params := objectSchema
		if p := fn.Get("parameters"); p.IsObject() || p.Type == gjson.True || p.Type == gjson.False {
			params = []byte(p.Raw)
		}
		ts.byName[name] = &tool{name: name, params: params}
		ts.names = append(ts.names, name)
	}
	gjson.GetBytes(body, "tools").ForEach(func(_, t gjson.Result) bool {
		if typ := t.Get("type"); !typ.Exists() || typ.String() == "function" {
			add(t.Get("function"))
		}
		return true
	})
	if len(ts.names) == 0 {
		ts.legacy = true
		gjson.GetBytes(body, "functions").ForEach(func(_, fn gjson.Result) bool {
			add(fn)
			return true
		})
	}
	if len(ts.names) == 0 {
		return nil
	}
	return ts
}

// schema returns the tool's compiled schema, or nil when it does not compile
// (the cache logs that once per schema).
func (ts *toolset) schema(c *validate.Cache, t *tool) *validate.Schema {
	s, err := c.Get(t.params)
	if err != nil {
		return nil
	}
	return s
}
