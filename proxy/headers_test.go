package proxy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"testing"
)

// headerFuncs are the functions that index a header map by a name they are
// given, with the position of the name among their arguments.
var headerFuncs = map[string]int{"headerGet": 1, "headerValues": 1, "headerSet": 1, "headerSetIn": 1, "headerDel": 1, "headerHasToken": 1, "relocate": 1}

// TestHeaderNamesAreCanonical: every call in this package's code to a
// function that indexes a header map directly (headers.go) names the
// header with a constant in canonical form. A name in another form would
// never match, and what toolguard checks in that header would go unchecked.
// (Such a function may pass on the name it was given.)
func TestHeaderNamesAreCanonical(t *testing.T) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	consts := map[string]string{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
								consts[n.Name], _ = strconv.Unquote(lit.Value)
							}
						}
					}
				}
			}
		}
	}
	calls := map[string]int{}
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			params := map[string]bool{}
			if _, ok := headerFuncs[fd.Name.Name]; ok {
				for _, p := range fd.Type.Params.List {
					for _, n := range p.Names {
						params[n.Name] = true
					}
				}
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				var fn *ast.Ident
				switch f := call.Fun.(type) {
				case *ast.Ident:
					fn = f
				case *ast.SelectorExpr: // a method
					fn = f.Sel
				default:
					return true
				}
				at, ok := headerFuncs[fn.Name]
				if !ok {
					return true
				}
				calls[fn.Name]++
				pos := fset.Position(call.Pos())
				var name string
				switch a := call.Args[at].(type) {
				case *ast.BasicLit:
					name, _ = strconv.Unquote(a.Value)
				case *ast.Ident:
					if params[a.Name] {
						return true // passed on by a function of headerFuncs
					}
					c, ok := consts[a.Name]
					if !ok {
						t.Errorf("%s: %s names its header with %s, not a constant", pos, fn.Name, a.Name)
						return true
					}
					name = c
				default:
					t.Errorf("%s: %s names its header with an expression, not a constant", pos, fn.Name)
					return true
				}
				if c := textproto.CanonicalMIMEHeaderKey(name); c != name {
					t.Errorf("%s: %s(%q): the header's name in canonical form is %q", pos, fn.Name, name, c)
				}
				return true
			})
		}
	}
	for fn := range headerFuncs {
		if calls[fn] == 0 {
			t.Errorf("no call to %s found: is the list of header functions out of date?", fn)
		}
	}
}
