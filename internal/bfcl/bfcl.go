// Package bfcl loads the Berkeley Function Calling Leaderboard corpus kept in
// testdata/bfcl: real tool declarations and the arguments a correct call
// passes. Tests, fuzz seeds and benchmarks use it as a supply of real, messy
// tool schemas.
package bfcl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Case is one corpus entry: the tools declared and the calls that answer it.
type Case struct {
	ID        string
	Category  string
	Functions []Function
	// GroundTruth holds the calls a correct answer makes; it is empty for
	// entries whose answer file is missing.
	GroundTruth []Call
}

// Function is one tool declaration.
type Function struct {
	Name        string
	Description string
	// Parameters is the declaration converted to JSON Schema.
	Parameters json.RawMessage
}

// Call is one ground-truth call: for each parameter, the acceptable values.
// An empty string among them means the parameter may be omitted.
type Call struct {
	Name   string
	Params map[string][]any
}

// Arguments returns one correct set of arguments: the first acceptable value
// of each parameter, and no entry for a parameter that may be omitted and
// has no other value.
func (c Call) Arguments() map[string]any {
	m := make(map[string]any, len(c.Params))
	for k, v := range c.Params {
		m[k] = v
	}
	return pick(m)
}

// pick resolves a map of alternatives: each field holds a list of acceptable
// values, and nested objects (alone or inside arrays) are maps of
// alternatives themselves, as BFCL writes them.
func pick(alternatives map[string]any) map[string]any {
	out := make(map[string]any, len(alternatives))
	for k, v := range alternatives {
		vals, ok := v.([]any)
		if !ok {
			out[k] = v
			continue
		}
		for _, val := range vals {
			if s, ok := val.(string); ok && s == "" {
				continue
			}
			out[k] = resolve(val)
			break
		}
	}
	return out
}

func resolve(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return pick(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = resolve(e)
		}
		return out
	}
	return v
}

// Load reads every category in dir (testdata/bfcl) with its answers.
func Load(dir string) ([]Case, error) {
	files, err := filepath.Glob(filepath.Join(dir, "BFCL_v4_*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no BFCL files in %s", dir)
	}
	sort.Strings(files)
	var out []Case
	for _, f := range files {
		cat := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "BFCL_v4_"), ".json")
		answers, err := loadAnswers(filepath.Join(dir, "possible_answer", filepath.Base(f)))
		if err != nil {
			return nil, err
		}
		err = eachLine(f, func(line []byte) error {
			var raw struct {
				ID       string `json:"id"`
				Function []struct {
					Name        string          `json:"name"`
					Description string          `json:"description"`
					Parameters  json.RawMessage `json:"parameters"`
				} `json:"function"`
			}
			if err := decode(line, &raw); err != nil {
				return err
			}
			c := Case{ID: raw.ID, Category: cat, GroundTruth: answers[raw.ID]}
			for _, fn := range raw.Function {
				p, err := Convert(fn.Parameters)
				if err != nil {
					return fmt.Errorf("%s: convert %s: %w", raw.ID, fn.Name, err)
				}
				c.Functions = append(c.Functions, Function{Name: fn.Name, Description: fn.Description, Parameters: p})
			}
			out = append(out, c)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	return out, nil
}

func loadAnswers(path string) (map[string][]Call, error) {
	out := map[string][]Call{}
	err := eachLine(path, func(line []byte) error {
		var raw struct {
			ID          string                        `json:"id"`
			GroundTruth []map[string]map[string][]any `json:"ground_truth"`
		}
		if err := decode(line, &raw); err != nil {
			return err
		}
		for _, gt := range raw.GroundTruth {
			for name, params := range gt {
				out[raw.ID] = append(out[raw.ID], Call{Name: name, Params: params})
			}
		}
		return nil
	})
	if os.IsNotExist(err) {
		return out, nil
	}
	return out, err
}

func eachLine(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			return err
		}
	}
	return sc.Err()
}

func decode(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return d.Decode(v)
}

// typeNames maps BFCL's type names to JSON Schema's; "any" maps to no type.
var typeNames = map[string]string{
	"dict":  "object",
	"float": "number",
	"tuple": "array",
	"any":   "",
}

// Convert rewrites a BFCL parameters declaration as JSON Schema: BFCL's type
// names become JSON Schema's at every depth; nothing else changes.
func Convert(params []byte) (json.RawMessage, error) {
	var v any
	if err := decode(params, &v); err != nil {
		return nil, err
	}
	convert(v)
	return json.Marshal(v)
}

func convert(v any) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	if t, ok := m["type"].(string); ok {
		if nt, known := typeNames[t]; known {
			if nt == "" {
				delete(m, "type")
			} else {
				m["type"] = nt
			}
		}
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for _, p := range props {
			convert(p)
		}
	}
	convert(m["items"])
	convert(m["additionalProperties"])
}
