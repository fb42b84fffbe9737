// Command trim cuts an upstream Go program down to the parts a test runs, in a copy of its
// module: it edits one source file in place, keeping the table entries or dropping the struct
// fields named, and the imports only the removed code used go with them. Everything else of the
// file is kept byte for byte (comments too), then gofmt'ed. It fails, and so stops the build,
// when the file no longer has the shape named: a change upstream then shows in the build, not as
// a program that quietly lost something a test needs.
//
//	trim -keep NAMES FILE
//	    In the one table of FILE that holds any of NAMES, keep only the entries named. A table is a
//	    composite literal keyed by constants (externaldns.ProviderAWS: aws.New, ...) or a switch
//	    over string literals (case "exec": ...; its default stays); an entry is named by its key's
//	    identifier or by one of its case's strings. Every name must be found.
//	trim -drop NAMES -via EXPRS [-struct TYPE] FILE
//	    Delete the fields NAMES of struct TYPE, and every if statement whose condition reads one of
//	    them through one of EXPRS (c.Providers, conf); any other read of them left fails.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	keep := flag.String("keep", "", "the table entries to keep, comma-separated")
	drop := flag.String("drop", "", "the struct fields to drop, comma-separated")
	via := flag.String("via", "", "the expressions the dropped fields are read through, comma-separated")
	structName := flag.String("struct", "", "the struct type holding the dropped fields")
	flag.Parse()
	if flag.NArg() != 1 || (*keep == "") == (*drop == "") || (*drop != "" && *via == "") {
		fmt.Fprintln(os.Stderr, "usage: trim -keep NAMES FILE | trim -drop NAMES -via EXPRS [-struct TYPE] FILE")
		os.Exit(2)
	}
	file := flag.Arg(0)
	var err error
	if *keep != "" {
		err = edit(file, func(e *editor) error { return e.keepEntries(set(*keep)) })
	} else {
		err = edit(file, func(e *editor) error { return e.dropFields(*structName, set(*drop), set(*via)) })
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "trim: %s: %v\n", file, err)
		os.Exit(1)
	}
}

func set(list string) map[string]bool {
	m := map[string]bool{}
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			m[s] = true
		}
	}
	return m
}

// span is a byte range of the source to cut.
type span struct{ from, to int }

type editor struct {
	src  []byte
	fset *token.FileSet
	file *ast.File
	cut  []span
}

// edit parses file, lets change mark what to cut, cuts it and the imports left unused, and
// writes the file back gofmt'ed.
func edit(file string, change func(*editor) error) error {
	src, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	e := &editor{src: src, fset: token.NewFileSet()}
	if e.file, err = parser.ParseFile(e.fset, file, src, parser.ParseComments); err != nil {
		return err
	}
	if err := change(e); err != nil {
		return err
	}
	e.dropUnusedImports()
	out, err := format.Source(e.apply())
	if err != nil {
		return fmt.Errorf("the trimmed file does not parse: %w", err)
	}
	return os.WriteFile(file, out, 0o644)
}

func (e *editor) offset(p token.Pos) int { return e.fset.Position(p).Offset }

func (e *editor) mark(n ast.Node) { e.cut = append(e.cut, span{e.offset(n.Pos()), e.offset(n.End())}) }

func (e *editor) isCut(p token.Pos) bool {
	o := e.offset(p)
	return slices.ContainsFunc(e.cut, func(s span) bool { return o >= s.from && o < s.to })
}

// keepEntries keeps, of the one table holding any of keep, only the entries keep names.
func (e *editor) keepEntries(keep map[string]bool) error {
	found := map[string]bool{}
	tables := 0
	ast.Inspect(e.file, func(n ast.Node) bool {
		entries, ok := table(n)
		if !ok || !slices.ContainsFunc(entries, func(en entry) bool { return slices.ContainsFunc(en.names, func(s string) bool { return keep[s] }) }) {
			return true
		}
		tables++
		for _, en := range entries {
			kept := false
			for _, name := range en.names {
				if keep[name] {
					found[name], kept = true, true
				}
			}
			if !kept {
				e.mark(en.node)
			}
		}
		return false
	})
	if tables != 1 {
		return fmt.Errorf("%d tables hold the entries to keep, want 1", tables)
	}
	for name := range keep {
		if !found[name] {
			return fmt.Errorf("the table has no entry %s", name)
		}
	}
	return nil
}

// entry is one entry of a table and the names it goes by.
type entry struct {
	node  ast.Node
	names []string
}

// table says whether n is a table, and its entries: a composite literal whose every element is
// keyed by an identifier, a selector or a string, or a switch whose every case but the default
// lists string literals.
func table(n ast.Node) ([]entry, bool) {
	var entries []entry
	switch n := n.(type) {
	case *ast.CompositeLit:
		for _, elt := range n.Elts {
			kv, ok := elt.(*ast.KeyValueExpr)
			if !ok {
				return nil, false
			}
			name, ok := nameOf(kv.Key)
			if !ok {
				return nil, false
			}
			entries = append(entries, entry{elt, []string{name}})
		}
	case *ast.SwitchStmt:
		for _, stmt := range n.Body.List {
			cc := stmt.(*ast.CaseClause)
			if cc.List == nil {
				continue
			}
			en := entry{node: cc}
			for _, x := range cc.List {
				lit, ok := x.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return nil, false
				}
				s, _ := strconv.Unquote(lit.Value)
				en.names = append(en.names, s)
			}
			entries = append(entries, en)
		}
	}
	return entries, len(entries) > 0
}

func nameOf(key ast.Expr) (string, bool) {
	switch k := key.(type) {
	case *ast.Ident:
		return k.Name, true
	case *ast.SelectorExpr:
		return k.Sel.Name, true
	case *ast.BasicLit:
		s, err := strconv.Unquote(k.Value)
		return s, err == nil
	}
	return "", false
}

// dropFields deletes the fields drop of struct structName (when named) and the if statements
// reading them through via; it fails on any other read left.
func (e *editor) dropFields(structName string, drop, via map[string]bool) error {
	reads := func(n ast.Node) bool {
		hit := false
		ast.Inspect(n, func(m ast.Node) bool {
			if se, ok := m.(*ast.SelectorExpr); ok && drop[se.Sel.Name] && via[render(se.X)] {
				hit = true
			}
			return !hit
		})
		return hit
	}
	fields := map[string]bool{}
	var err error
	ast.Inspect(e.file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.TypeSpec:
			st, ok := n.Type.(*ast.StructType)
			if !ok || n.Name.Name != structName {
				return true
			}
			for _, f := range st.Fields.List {
				if len(f.Names) == 1 && drop[f.Names[0].Name] {
					fields[f.Names[0].Name] = true
					e.mark(f)
				}
			}
		case *ast.IfStmt:
			if !reads(n.Cond) {
				return true
			}
			if n.Init != nil || n.Else != nil {
				err = errors.Join(err, fmt.Errorf("the if statement at %v reading a dropped field has an init or an else", e.fset.Position(n.Pos())))
			}
			e.mark(n)
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	if structName != "" && len(fields) != len(drop) {
		return fmt.Errorf("struct %s has %d of the %d fields to drop", structName, len(fields), len(drop))
	}
	ast.Inspect(e.file, func(n ast.Node) bool {
		if se, ok := n.(*ast.SelectorExpr); ok && drop[se.Sel.Name] && via[render(se.X)] && !e.isCut(se.Pos()) {
			err = errors.Join(err, fmt.Errorf("%s.%s is still read at %v", render(se.X), se.Sel.Name, e.fset.Position(se.Pos())))
		}
		return true
	})
	if len(e.cut) == 0 && err == nil {
		return errors.New("nothing to drop")
	}
	return err
}

func render(x ast.Expr) string {
	switch x := x.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return render(x.X) + "." + x.Sel.Name
	}
	return ""
}

// dropUnusedImports cuts the imports that only the code already cut used.
func (e *editor) dropUnusedImports() {
	used := func(withCut bool) map[string]bool {
		names := map[string]bool{}
		ast.Inspect(e.file, func(n ast.Node) bool {
			if se, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := se.X.(*ast.Ident); ok && (withCut || !e.isCut(id.Pos())) {
					names[id.Name] = true
				}
			}
			return true
		})
		return names
	}
	before, after := used(true), used(false)
	for _, imp := range e.file.Imports {
		if name := importName(imp); before[name] && !after[name] {
			e.mark(imp)
		}
	}
}

var majorVersion = regexp.MustCompile(`^v[0-9]+$`)

// importName is the name an import is used by: its own, or its path's last element (the one
// before a major version suffix, and up to a dot or dash for gopkg.in).
func importName(imp *ast.ImportSpec) string {
	if imp.Name != nil {
		return imp.Name.Name
	}
	p, _ := strconv.Unquote(imp.Path.Value)
	base := path.Base(p)
	if majorVersion.MatchString(base) {
		base = path.Base(path.Dir(p))
	}
	if i := strings.IndexAny(base, ".-"); i >= 0 && strings.HasPrefix(p, "gopkg.in/") {
		base = base[:i]
	}
	return base
}

// apply cuts the marked spans, each widened to its whole lines (with an entry's trailing comma)
// where it has them to itself, so that no blank lines are left.
func (e *editor) apply() []byte {
	src := e.src
	cut := slices.Clone(e.cut)
	for i, c := range cut {
		from, to := c.from, c.to
		if to < len(src) && src[to] == ',' {
			to++
		}
		for from > 0 && (src[from-1] == ' ' || src[from-1] == '\t') {
			from--
		}
		for to < len(src) && (src[to] == ' ' || src[to] == '\t') {
			to++
		}
		if (from == 0 || src[from-1] == '\n') && to < len(src) && src[to] == '\n' {
			cut[i] = span{from, to + 1}
		} else if src[c.to-1] != ',' && c.to < len(src) && src[c.to] == ',' {
			cut[i] = span{c.from, c.to + 1}
		}
	}
	slices.SortFunc(cut, func(a, b span) int { return a.from - b.from })
	var out bytes.Buffer
	last := 0
	for _, s := range cut {
		if s.from < last {
			continue // inside a span already cut
		}
		out.Write(src[last:s.from])
		last = s.to
	}
	out.Write(src[last:])
	return out.Bytes()
}
