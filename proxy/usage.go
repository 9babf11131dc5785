package proxy

import (
	"strconv"

	"github.com/tidwall/gjson"
)

// sumUsage adds the usage of every reply to the base response's usage, field
// by field at any depth (prompt_tokens, completion_tokens_details.*, a
// provider's cost...), so the client sees what all the attempts cost.
func sumUsage(base []byte, replies [][]byte) []byte {
	type total struct {
		i     int64
		f     float64
		float bool
	}
	sums := map[string]*total{}
	var order []string
	add := func(body []byte) {
		walkNumbers(gjson.GetBytes(body, "usage"), "", func(path string, v gjson.Result) {
			t := sums[path]
			if t == nil {
				t = &total{}
				sums[path] = t
				order = append(order, path)
			}
			if n, err := strconv.ParseInt(v.Raw, 10, 64); err == nil && !t.float {
				t.i += n
				t.f += float64(n)
			} else {
				t.float = true
				t.f += v.Float()
			}
		})
	}
	add(base)
	for _, r := range replies {
		add(r)
	}
	if len(order) == 0 {
		return base
	}
	out := base
	for _, p := range order {
		t := sums[p]
		v := strconv.FormatInt(t.i, 10)
		if t.float {
			v = strconv.FormatFloat(t.f, 'g', -1, 64)
		}
		out = patch(out, "usage."+p, v)
	}
	return out
}

// walkNumbers calls fn for every number below r, with its gjson path.
func walkNumbers(r gjson.Result, prefix string, fn func(string, gjson.Result)) {
	if !r.IsObject() {
		return
	}
	r.ForEach(func(k, v gjson.Result) bool {
		p := gjson.Escape(k.String())
		if prefix != "" {
			p = prefix + "." + p
		}
		switch {
		case v.Type == gjson.Number:
			fn(p, v)
		case v.IsObject():
			walkNumbers(v, p, fn)
		}
		return true
	})
}
