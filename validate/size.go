package validate

import "fmt"

// The compiler's cost grows with the number of subschemas, not with the
// schema's bytes: every object of a schema becomes a compiled subschema of
// about 1.4 KB, and the library compiles n subschemas in time quadratic in n
// (8,000 empty ones, 24 KB of JSON, took 0.7 s and 10 MB; 80,000, 240 KB,
// more than a minute and 97 MB). So a schema's size is counted before it is
// compiled, in two ways:
//
//   - its nodes: the JSON objects and arrays it holds, which bound what the
//     compiler does and keeps;
//   - its expanded size: the subschemas with every reference replaced by
//     what it names, counted once per path (memoised, so counting is linear;
//     a reference back into a subschema being counted counts 1, since a
//     recursive schema goes only as deep as the arguments, which the step
//     budget bounds). It is the number of subschemas the validator may visit
//     for one value of the arguments.
//
// A schema over either limit does not compile: its calls pass unchecked.
// The largest schema of the BFCL corpus (6,226 declarations) has 26 nodes and
// an expanded size of 23 (see TestBFCLSchemasAreFarInsideTheSizeLimits).
const (
	// MaxSchemaNodes bounds the objects and arrays of one schema: about 100
	// times the largest of the BFCL corpus. A schema of 3,000 subschemas
	// compiles in about 0.13 s into 4 MB.
	MaxSchemaNodes = 3_000
	// MaxExpandedNodes bounds a schema's expanded size: about 260 times the
	// largest of the BFCL corpus and twice MaxSchemaNodes, so a schema
	// without references is never refused for it.
	MaxExpandedNodes = 6_000
)

// countNodes counts the objects and arrays of a decoded document, and its
// other values, stopping past max nodes.
func countNodes(v any, max int) (nodes, scalars int) {
	var walk func(any)
	walk = func(v any) {
		if nodes > max {
			return
		}
		switch v := v.(type) {
		case map[string]any:
			nodes++
			for _, e := range v {
				walk(e)
			}
		case []any:
			nodes++
			for _, e := range v {
				walk(e)
			}
		default:
			scalars++
		}
	}
	walk(v)
	return nodes, scalars
}

// expandedSize counts the subschemas of the plan p with references
// expanded, stopping past max.
func expandedSize(p *plan, max int) int {
	memo := map[*plan]int{}
	var size func(p *plan) int
	size = func(p *plan) int {
		if n, ok := memo[p]; ok {
			return n
		}
		memo[p] = 1 // a reference back into p while it is counted
		n := 1
		add := func(subs ...*plan) {
			for _, s := range subs {
				if s != nil && n <= max {
					n += size(s)
				}
			}
		}
		add(p.inPlace...)
		for _, s := range p.props {
			add(s)
		}
		for _, pp := range p.patProps {
			add(pp.sch)
		}
		add(p.additional...)
		add(p.names)
		for _, s := range p.deps {
			add(s)
		}
		add(p.prefix...)
		add(p.items...)
		add(p.contains)
		n = min(n, max+1)
		memo[p] = n
		return n
	}
	return size(p)
}

// Memory a compiled schema holds, measured with runtime.MemStats around
// Compile: 1,200 bytes per subschema (2,999 empty ones held 3.59 MB), 79 per
// other value (an enum of 60,000 numbers held 4.74 MB), twice the bytes of
// long strings (a 250 KB description held 0.51 MB). The estimate rounds
// each up.
const (
	weightPerNode   = 1280
	weightPerScalar = 96
	weightPerByte   = 4
	weightFixed     = 4096
	// MaxSchemaWeight bounds one schema's estimated memory: a schema over it
	// does not compile. A schema within MaxSchemaBytes and MaxSchemaNodes
	// reaches it only with some 80,000 values (an enum of them).
	MaxSchemaWeight = 8 << 20
)

// weight estimates the memory a compiled schema holds.
func weight(nodes, scalars, size int) int64 {
	return weightPerNode*int64(nodes) + weightPerScalar*int64(scalars) + weightPerByte*int64(size) + weightFixed
}

// checkSize refuses a schema over MaxSchemaNodes or MaxSchemaWeight. It
// returns the schema's node count and estimated weight.
func checkSize(doc any, size int) (int, int64, error) {
	nodes, scalars := countNodes(doc, MaxSchemaNodes)
	if nodes > MaxSchemaNodes {
		return nodes, 0, ErrSchemaTooLarge{fmt.Sprintf("more than %d objects and arrays", MaxSchemaNodes)}
	}
	w := weight(nodes, scalars, size)
	if w > MaxSchemaWeight {
		return nodes, w, ErrSchemaTooLarge{fmt.Sprintf("%d values, estimated to hold %d bytes compiled, over the limit of %d",
			nodes+scalars, w, MaxSchemaWeight)}
	}
	return nodes, w, nil
}
