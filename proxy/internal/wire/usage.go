package wire

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// maxUsageFields bounds the usage fields summed: a real usage object has a
// dozen, and a reply must not make toolguard track thousands.
const maxUsageFields = 64

// SumUsage adds the usage of every reply (at "usage" in each) to the usage
// object at path at of base, field
// by field at any depth (prompt_tokens, completion_tokens_details.*, a
// provider's cost...), so the client sees what all the attempts cost. The
// numbers already in base are replaced in one pass over it; fields only the
// replies have are added after. Fields past the first maxUsageFields are
// left as base has them.
func SumUsage(base []byte, at string, replies [][]byte) ([]byte, error) {
	type total struct {
		i     int64
		f     float64
		float bool
		at    gjson.Result // the number in base, if it has one
	}
	sums := map[string]*total{}
	var order []string
	add := func(body []byte, isBase bool) {
		path := "usage"
		if isBase {
			path = at
		}
		walkNumbers(gjson.GetBytes(body, path), "", func(path string, v gjson.Result) {
			t := sums[path]
			if t == nil {
				if len(order) == maxUsageFields {
					return
				}
				t = &total{}
				sums[path] = t
				order = append(order, path)
			}
			if isBase {
				t.at = v
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
	add(base, true)
	for _, r := range replies {
		add(r, false)
	}
	if len(order) == 0 {
		return base, nil
	}
	var edits []Splice
	var added []string
	for _, p := range order {
		t := sums[p]
		v := strconv.FormatInt(t.i, 10)
		if t.float {
			v = strconv.FormatFloat(t.f, 'g', -1, 64)
		}
		if at, ok := SpanOf(base, t.at); ok {
			edits = append(edits, Splice{Start: at.Start, End: at.End, With: []byte(v)})
		} else {
			added = append(added, p, v)
		}
	}
	slices.SortFunc(edits, func(a, b Splice) int { return a.Start - b.Start })
	out, err := ApplySplices(base, edits)
	if err != nil {
		return nil, fmt.Errorf("sum usage: %w", err)
	}
	for i := 0; i < len(added); i += 2 {
		if out, err = sjson.SetRawBytes(out, at+"."+added[i], []byte(added[i+1])); err != nil {
			return nil, fmt.Errorf("sum usage: set %s: %w", added[i], err)
		}
	}
	return out, nil
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
