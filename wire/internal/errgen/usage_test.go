package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// wireImport is the wire package's import path.
const wireImport = "github.com/outposthq/outpost/wire"

// TestNoLiteralReasons parses every Go file of the module but tests and the
// generated constants, and fails on a reason spelled as a string literal
// rather than a wire.Reason* constant: the reason argument of wire.Errorf,
// any `Reason:` (or `reason:`) field of a composite literal, a constant,
// variable or assignment named reason*, and a comparison or switch on a
// .Reason field. A wire.Code*/wire.Reason* pair used together must be a
// row of the table. And every Reason constant is used somewhere, so a
// reason nothing returns is marked planned.
func TestNoLiteralReasons(t *testing.T) {
	tab, err := load(filepath.Join(wireDir, "reasons.json"))
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(filepath.Join(wireDir, ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root %s: %v", root, err)
	}
	c := newChecker(tab)
	n := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); p != root && err == nil {
				return filepath.SkipDir // another module (third_party/nats-server is upstream's code)
			}
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || rel == "wire/errors_generated.go" {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		return c.checkFile(rel, src)
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("checked only %d files: the walk is broken", n)
	}
	for _, p := range c.problems {
		t.Error(p)
	}
	for _, r := range tab.Reasons {
		if !r.Planned && !c.used[r.constName()] {
			t.Errorf("wire.%s (%s) is used nowhere: mark it planned in wire/reasons.json, or drop it", r.constName(), r.Reason)
		}
	}
}

// TestCheckerFindsLiterals runs the checker on small sources: each bad one
// must be reported, each good one not.
func TestCheckerFindsLiterals(t *testing.T) {
	tests := []struct {
		name, src string
		bad       bool
	}{
		{"Errorf literal", `wire.Errorf(wire.CodeNotFound, "no_route", "x")`, true},
		{"Errorf constant", `wire.Errorf(wire.CodeNotFound, wire.ReasonNoRoute, "x")`, false},
		{"Errorf empty", `wire.Errorf(wire.CodeNotFound, "", "x")`, false},
		{"Errorf variable", `wire.Errorf(wire.CodeNotFound, r, "x")`, false},
		{"Errorf unknown constant", `wire.Errorf(wire.CodeNotFound, wire.ReasonNope, "x")`, true},
		{"Errorf pair not in the table", `wire.Errorf(wire.CodeInternal, wire.ReasonNoRoute, "x")`, true},
		{"Errorf built literal", `wire.Errorf(wire.CodeNotFound, "no_" + s, "x")`, true},
		{"renamed import", `w.Errorf(w.CodeNotFound, "no_route", "x")`, true},
		{"Error literal", `&wire.Error{Code: wire.CodeConflict, Reason: "fenced"}`, true},
		{"Error constant", `&wire.Error{Code: wire.CodeConflict, Reason: wire.ReasonFenced}`, false},
		{"other struct Reason", `client.ErrorDetail{Reason: "fenced"}`, true},
		{"lowercase reason key", `row{code: wire.CodeConflict, reason: "fenced"}`, true},
		{"lowercase pair not in the table", `row{code: wire.CodeInternal, reason: wire.ReasonFenced}`, true},
		{"reason assignment", `reason = "fenced"`, true},
		{"reason from a constant", `reason := wire.ReasonFenced`, false},
		{"comparison", `we.Reason == "fenced"`, true},
		{"comparison reversed", `"fenced" != we.Reason`, true},
		{"comparison to a constant", `we.Reason == wire.ReasonFenced`, false},
		{"log key", `log.Info("x", "reason", why)`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			imp := `"github.com/outposthq/outpost/wire"`
			if strings.HasPrefix(tc.src, "w.") {
				imp = `w ` + imp
			}
			src := "package p\nimport " + imp + "\nfunc f() { _ = " + tc.src + " }\n"
			if strings.HasPrefix(tc.src, "reason") {
				src = "package p\nimport " + imp + "\nfunc f() { var reason string; " + tc.src + "; _ = reason }\n"
			}
			c := newChecker(testTable(t))
			if err := c.checkFile("p.go", []byte(src)); err != nil {
				t.Fatal(err)
			}
			if got := len(c.problems) > 0; got != tc.bad {
				t.Fatalf("problems %q, want bad=%v", c.problems, tc.bad)
			}
		})
	}
	for _, src := range []string{
		"package p\nconst reasonX = \"x\"\n",
		"package p\nvar ReasonX = \"x\"\n",
		"package p\nfunc f(x string) { switch x { } ; var e struct{ Reason string }; switch e.Reason { case \"x\": } }\n",
		"package wire\nfunc f() error { return Errorf(CodeNotFound, \"no_route\", \"x\") }\n",
	} {
		c := newChecker(testTable(t))
		if err := c.checkFile("p.go", []byte(src)); err != nil {
			t.Fatal(err)
		}
		if len(c.problems) == 0 {
			t.Errorf("no problem found in %q", src)
		}
	}
}

func testTable(t *testing.T) *table {
	t.Helper()
	tab, err := parse([]byte(`{"codes": [{"code": "not_found", "status": 404, "meaning": "m"}, {"code": "conflict", "status": 409, "meaning": "m"}, {"code": "internal", "status": 500, "meaning": "m"}],
		"reasons": [{"reason": "no_route", "code": "not_found", "meaning": "m"}, {"reason": "fenced", "code": "conflict", "meaning": "m"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// checker finds literal reasons in Go sources.
type checker struct {
	consts   map[string]bool // Reason* and Code* constants the table makes
	pairs    map[string]bool // "CodeX/ReasonY" rows
	used     map[string]bool // Reason* constants referenced
	problems []string
}

func newChecker(t *table) *checker {
	c := &checker{consts: map[string]bool{}, pairs: map[string]bool{}, used: map[string]bool{}}
	for _, r := range t.Codes {
		if !r.Planned {
			c.consts[codeConst(r.Code)] = true
		}
	}
	for _, r := range t.Reasons {
		if !r.Planned {
			c.consts[r.constName()] = true
			c.pairs[codeConst(r.Code)+"/"+r.constName()] = true
		}
	}
	return c
}

// reasonName matches identifiers that name a reason.
var reasonName = regexp.MustCompile(`^(?i)reason`)

// checkFile checks one file; name is its path for messages.
func (c *checker) checkFile(name string, src []byte) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	inWire := f.Name.Name == "wire"
	qual := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == wireImport {
			qual = "wire"
			if imp.Name != nil {
				qual = imp.Name.Name
			}
		}
	}
	// wireConst returns X for wire.X (X alone inside package wire).
	wireConst := func(e ast.Expr) string {
		switch e := e.(type) {
		case *ast.SelectorExpr:
			if x, ok := e.X.(*ast.Ident); ok && qual != "" && x.Name == qual {
				return e.Sel.Name
			}
		case *ast.Ident:
			if inWire {
				return e.Name
			}
		}
		return ""
	}
	report := func(n ast.Node, format string, args ...any) {
		c.problems = append(c.problems, fset.Position(n.Pos()).String()+": "+fmt.Sprintf(format, args...))
	}
	// checkReason checks an expression used as a reason.
	checkReason := func(e ast.Expr) {
		if lit := stringLit(e); lit != "" {
			report(e, "reason %s is a literal: use a wire.Reason constant (add the reason to wire/reasons.json)", lit)
			return
		}
		if k := wireConst(e); strings.HasPrefix(k, "Reason") && !c.consts[k] {
			report(e, "wire.%s is not a reason of wire/reasons.json", k)
		}
	}
	// checkPair checks a code and a reason given together.
	checkPair := func(n ast.Node, code, reason ast.Expr) {
		ck, rk := wireConst(code), wireConst(reason)
		if strings.HasPrefix(ck, "Code") && strings.HasPrefix(rk, "Reason") && c.consts[rk] && !c.pairs[ck+"/"+rk] {
			report(n, "%s with %s is not a row of wire/reasons.json", ck, rk)
		}
	}
	isErrorf := func(fun ast.Expr) bool {
		if inWire {
			if id, ok := fun.(*ast.Ident); ok && id.Name == "Errorf" {
				return true
			}
		}
		s, ok := fun.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		x, ok := s.X.(*ast.Ident)
		return ok && qual != "" && x.Name == qual && s.Sel.Name == "Errorf"
	}
	isReasonField := func(e ast.Expr) bool {
		s, ok := e.(*ast.SelectorExpr)
		return ok && s.Sel.Name == "Reason"
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if k := wireConst(n); strings.HasPrefix(k, "Reason") {
				c.used[k] = true
			}
		case *ast.Ident:
			if inWire && strings.HasPrefix(n.Name, "Reason") {
				c.used[n.Name] = true
			}
		case *ast.CallExpr:
			if isErrorf(n.Fun) && len(n.Args) >= 2 {
				checkReason(n.Args[1])
				checkPair(n, n.Args[0], n.Args[1])
			}
		case *ast.CompositeLit:
			var code, reason ast.Expr
			for _, el := range n.Elts {
				kv, ok := el.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				key, ok := kv.Key.(*ast.Ident)
				switch {
				case !ok:
				case strings.EqualFold(key.Name, "reason"):
					reason = kv.Value
					checkReason(kv.Value)
				case strings.EqualFold(key.Name, "code"):
					code = kv.Value
				}
			}
			if code != nil && reason != nil {
				checkPair(n, code, reason)
			}
		case *ast.ValueSpec:
			for i, id := range n.Names {
				if reasonName.MatchString(id.Name) && i < len(n.Values) {
					checkReason(n.Values[i])
				}
			}
		case *ast.AssignStmt:
			for i, lhs := range n.Lhs {
				var nm string
				switch l := lhs.(type) {
				case *ast.Ident:
					nm = l.Name
				case *ast.SelectorExpr:
					nm = l.Sel.Name
				}
				if reasonName.MatchString(nm) && len(n.Rhs) == len(n.Lhs) {
					checkReason(n.Rhs[i])
				}
			}
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				if isReasonField(n.X) {
					checkReason(n.Y)
				}
				if isReasonField(n.Y) {
					checkReason(n.X)
				}
			}
		case *ast.SwitchStmt:
			if n.Tag != nil && isReasonField(n.Tag) {
				for _, s := range n.Body.List {
					for _, e := range s.(*ast.CaseClause).List {
						checkReason(e)
					}
				}
			}
		}
		return true
	})
	sort.Strings(c.problems)
	return nil
}

// stringLit returns the first non-empty string literal in e, quoted, or "".
func stringLit(e ast.Expr) string {
	found := ""
	ast.Inspect(e, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && found == "" {
			if s, err := strconv.Unquote(lit.Value); err == nil && s != "" {
				found = lit.Value
			}
		}
		return found == ""
	})
	return found
}
