package repair

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolguard/toolguard/validate"
)

func compile(t testing.TB, schema string) *validate.Schema {
	t.Helper()
	s, err := validate.Compile([]byte(schema))
	if err != nil {
		t.Fatalf("compile %s: %v", schema, err)
	}
	return s
}

var mendAll = Options{Syntax: true, SchemaGuided: true}

func kindsOf(edits []Edit) []Kind {
	var out []Kind
	for _, e := range edits {
		out = append(out, e.Kind)
	}
	return out
}

func TestArguments(t *testing.T) {
	for _, tt := range argumentsCases {
		t.Run(tt.name, func(t *testing.T) {
			s := compile(t, tt.schema)
			got := Arguments([]byte(tt.give), s, mendAll)
			if tt.want == "" {
				if got.Valid() {
					t.Fatalf("Arguments(%s) = %s with edits %v, want it left invalid", tt.give, got.Args, got.Edits)
				}
				return
			}
			if !got.Valid() {
				t.Fatalf("Arguments(%s): errors %v, want %s", tt.give, got.Errors, tt.want)
			}
			if diff := cmp.Diff(string(got.Args), tt.want); diff != "" {
				t.Errorf("Args (-got +want):\n%s", diff)
			}
			if diff := cmp.Diff(kindsOf(got.Edits), tt.kinds); diff != "" {
				t.Errorf("edit kinds (-got +want):\n%s\nedits: %+v", diff, got.Edits)
			}
		})
	}
}

// TestFailedGuideLeavesWhatSyntaxMended: when the schema-guided edits do
// not make the arguments valid, Args is what the errors describe, the
// arguments as the syntax step left them, none of the guided edits made
// before the guide gave up (here, the key it renamed).
func TestFailedGuideLeavesWhatSyntaxMended(t *testing.T) {
	s := compile(t, `{"type":"object","properties":{"selector":{"type":"string"},"count":{"type":"integer"}},`+
		`"required":["selector","count"],"additionalProperties":false}`)
	got := Arguments([]byte(`"{'Selector': '#a', 'count': 'many',}"`), s, mendAll)
	if got.Valid() {
		t.Fatalf("valid: %s", got.Args)
	}
	if want := `{"Selector":"#a","count":"many"}`; string(got.Args) != want {
		t.Errorf("Args = %s, want %s", got.Args, want)
	}
	if len(got.Edits) == 0 || got.Edits[len(got.Edits)-1].Kind == KindRenameKey {
		t.Errorf("edits %+v, want the syntax step's alone", got.Edits)
	}
}

// TestArgumentsValidUnchanged checks the pass-through promise: valid
// arguments come back byte for byte, whatever the options.
func TestArgumentsValidUnchanged(t *testing.T) {
	s := compile(t, clickSchema)
	give := "{ \"selector\" :\t\"#go\" }"
	raw, err := json.Marshal(give)
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []Options{{}, {Syntax: true}, mendAll} {
		got := Arguments(raw, s, opts)
		if diff := cmp.Diff(got, Result{Args: []byte(give)}); diff != "" {
			t.Errorf("%+v: (-got +want):\n%s", opts, diff)
		}
	}
}

func TestArgumentsOptions(t *testing.T) {
	s := compile(t, searchSchema)
	tests := []struct {
		name  string
		give  string
		opts  Options
		valid bool
	}{
		{name: "check-only-leaves-syntax", give: `"{'query': 'go'}"`, opts: Options{}, valid: false},
		{name: "syntax-mends-syntax", give: `"{'query': 'go'}"`, opts: Options{Syntax: true}, valid: true},
		{name: "syntax-leaves-types", give: `"{\"query\": 5}"`, opts: Options{Syntax: true}, valid: false},
		{name: "check-only-refuses-object", give: `{"query": "go"}`, opts: Options{}, valid: false},
		{name: "guided-mends-types", give: `"{\"query\": 5}"`, opts: mendAll, valid: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Arguments([]byte(tt.give), s, tt.opts)
			if got.Valid() != tt.valid {
				t.Errorf("Valid() = %v, want %v (args %s, errors %v)", got.Valid(), tt.valid, got.Args, got.Errors)
			}
		})
	}
}

func TestArgumentsWithoutSchema(t *testing.T) {
	tests := []struct {
		name string
		give string
		want string
	}{
		{name: "object", give: `"{\"a\": 1}"`, want: `{"a": 1}`},
		{name: "repaired", give: `"{'a': 1,}"`, want: `{"a":1}`},
		{name: "bare-string", give: `"\"x\""`},
		{name: "prose", give: `"hello there"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Arguments([]byte(tt.give), nil, mendAll)
			if tt.want == "" {
				if got.Valid() {
					t.Fatalf("got %s, want errors", got.Args)
				}
				return
			}
			if diff := cmp.Diff(string(got.Args), tt.want); diff != "" || !got.Valid() {
				t.Errorf("errors %v; Args (-got +want):\n%s", got.Errors, diff)
			}
		})
	}
}

func TestArgumentsTooLarge(t *testing.T) {
	raw, err := json.Marshal(`{'a': '` + string(make([]byte, MaxInput)) + `'}`)
	if err != nil {
		t.Fatal(err)
	}
	got := Arguments(raw, nil, mendAll)
	if got.Valid() || len(got.Edits) > 0 {
		t.Errorf("oversized arguments: got valid=%v edits=%v, want errors and no edit", got.Valid(), got.Edits)
	}
}

func TestSyntax(t *testing.T) {
	for _, tt := range syntaxCases {
		t.Run(tt.name, func(t *testing.T) {
			got, edits, err := Syntax([]byte(tt.give))
			if tt.want == "" {
				if err == nil {
					t.Fatalf("Syntax(%s) = %s, want an error", tt.give, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Syntax(%s): %v", tt.give, err)
			}
			if diff := cmp.Diff(string(got), tt.want); diff != "" {
				t.Errorf("(-got +want):\n%s", diff)
			}
			if diff := cmp.Diff(kindsOf(edits), tt.kinds); diff != "" {
				t.Errorf("edit kinds (-got +want):\n%s", diff)
			}
		})
	}
}

func TestEditRecorded(t *testing.T) {
	s := compile(t, searchSchema)
	got := Arguments([]byte(`"{\"query\": \"go\", \"filter\": {\"lang\": \"en\", \"year\": \"2020\"}}"`), s, mendAll)
	want := []Edit{{Kind: KindCoerceType, Path: "/filter/year", Before: `"2020"`, After: `2020`}}
	if diff := cmp.Diff(got.Edits, want); diff != "" {
		t.Errorf("(-got +want):\n%s", diff)
	}
}

// TestEmptyArgumentsSayWhatIsMissing: "" and null where the schema needs
// properties are re-asked with errors the model can act on: nothing was
// sent, and what is required.
func TestEmptyArgumentsSayWhatIsMissing(t *testing.T) {
	for _, give := range []string{`""`, `"null"`, `"  "`} {
		got := Arguments([]byte(give), compile(t, clickSchema), mendAll)
		if got.Valid() || validate.Join(got.Errors) != "/: no JSON value was sent (empty or null)\n/: missing properties: 'selector'" {
			t.Errorf("Arguments(%s): errors %q", give, validate.Join(got.Errors))
		}
	}
}
