package validate_test

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/internal/bfcl"
	"github.com/toolguard/toolguard/validate"
)

var update = flag.Bool("update", false, "rewrite testdata/bfcl-known-invalid.tsv from this run")

const knownInvalidFile = "testdata/bfcl-known-invalid.tsv"

// reason classifies why a ground truth of the corpus does not satisfy its own
// declaration. The corpus is written for Python: None for an omitted
// optional parameter, values outside the enum it declares, and so on.
func reason(errs []validate.Error) string {
	var kinds []string
	seen := map[string]bool{}
	for _, e := range errs {
		var k string
		switch {
		case strings.HasSuffix(e.Message, "but got null"):
			k = "null (Python None) for an optional parameter"
		case e.Keyword == "enum":
			k = "value outside the declared enum"
		case e.Keyword == "required":
			k = "required parameter absent from the ground truth"
		case e.Keyword == "type":
			k = "value of another type than declared"
		default:
			k = e.Keyword
		}
		if !seen[k] {
			seen[k] = true
			kinds = append(kinds, k)
		}
	}
	sort.Strings(kinds)
	return strings.Join(kinds, "; ")
}

// TestBFCLGroundTruthValidates compiles every declaration of the corpus and
// checks that the arguments of each correct call validate against it. The
// ground truths that cannot are listed with their reason in
// testdata/bfcl-known-invalid.tsv, and each of those is checked to still fail
// for that reason, so the list cannot go stale (-update rewrites it).
func TestBFCLGroundTruthValidates(t *testing.T) {
	cases, err := bfcl.Load("../testdata/bfcl")
	if err != nil {
		t.Fatal(err)
	}
	known := readKnownInvalid(t)
	got := map[string]string{}
	cache := validate.NewCache(8192)
	var decls, calls int
	for _, c := range cases {
		schemas := map[string]*validate.Schema{}
		for _, fn := range c.Functions {
			decls++
			s, err := cache.Get(fn.Parameters)
			if err != nil {
				t.Errorf("%s: compile %s: %v", c.ID, fn.Name, err)
				continue
			}
			schemas[fn.Name] = s
		}
		for i, call := range c.GroundTruth {
			s := schemas[call.Name]
			if s == nil {
				t.Errorf("%s: ground truth calls undeclared tool %q", c.ID, call.Name)
				continue
			}
			calls++
			args, err := json.Marshal(call.Arguments())
			if err != nil {
				t.Fatal(err)
			}
			if _, errs := s.ValidateJSON(args); errs != nil {
				got[fmt.Sprintf("%s#%d %s", c.ID, i, call.Name)] = reason(errs)
			}
		}
	}
	if decls < 6000 {
		t.Fatalf("loaded %d declarations, want the whole corpus (6,226)", decls)
	}
	if *update {
		writeKnownInvalid(t, got)
		return
	}
	for k, r := range got {
		if known[k] != r {
			t.Errorf("%s does not validate (%s); known: %q", k, r, known[k])
		}
	}
	for k := range known {
		if _, ok := got[k]; !ok {
			t.Errorf("%s is listed as invalid but validates: run with -update", k)
		}
	}
	t.Logf("%d declarations compiled; %d of %d ground-truth calls validate, %d listed with their reason",
		decls, calls-len(got), calls, len(got))
}

func readKnownInvalid(t *testing.T) map[string]string {
	f, err := os.Open(knownInvalidFile)
	if err != nil {
		if os.IsNotExist(err) && *update {
			return nil
		}
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, r, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("%s: malformed line %q", knownInvalidFile, line)
		}
		out[k] = r
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func writeKnownInvalid(t *testing.T, got map[string]string) {
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# BFCL ground truths that do not satisfy their own declaration, and why.\n")
	b.WriteString("# Written by: go test ./validate -run BFCL -update\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s\t%s\n", k, got[k])
	}
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(knownInvalidFile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBFCLSchemasAreFarInsideTheSizeLimits: the size limits are chosen from
// the corpus, about a hundred times its largest schema; a corpus that grows
// past a hundredth of them should make the limits be chosen again.
func TestBFCLSchemasAreFarInsideTheSizeLimits(t *testing.T) {
	cases, err := bfcl.Load("../testdata/bfcl")
	if err != nil {
		t.Fatal(err)
	}
	var nodes, expanded int
	var weight int64
	for _, c := range cases {
		for _, fn := range c.Functions {
			s, err := validate.Compile(fn.Parameters)
			if err != nil {
				t.Fatalf("%s: %v", c.ID, err)
			}
			nodes, expanded, weight = max(nodes, s.Nodes()), max(expanded, s.Expanded()), max(weight, s.Weight())
		}
	}
	t.Logf("largest BFCL schema: %d nodes, expanded size %d, estimated weight %d bytes", nodes, expanded, weight)
	if nodes*100 > validate.MaxSchemaNodes || expanded*100 > validate.MaxExpandedNodes || weight*100 > validate.MaxSchemaWeight {
		t.Errorf("the limits (%d nodes, %d expanded, %d bytes) leave less than a margin of 100",
			validate.MaxSchemaNodes, validate.MaxExpandedNodes, validate.MaxSchemaWeight)
	}
}
