// Command trim cuts external-dns down to the one DNS provider and registry named on its command
// line, in a copy of its module: in the two files that list every provider and registry
// (provider/factory/provider.go, registry/factory/registry.go) it keeps only the entry of each
// constructor table named, and the imports the rest used go. Nothing else of external-dns
// changes: its command, flags, controller, sources, plan, registry and the provider kept build as
// released. The providers left out are most of its compile (their cloud SDKs), and nothing here
// can reach their clouds.
//
// Usage: trim MODULE_COPY PROVIDER_CONST REGISTRY_CONST, the constants named as external-dns's
// pkg/apis/externaldns names them (ProviderRFC2136, RegistryTXT).
package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: trim MODULE_COPY PROVIDER_CONST REGISTRY_CONST")
		os.Exit(2)
	}
	for _, f := range []struct{ file, keep string }{
		{"provider/factory/provider.go", os.Args[2]},
		{"registry/factory/registry.go", os.Args[3]},
	} {
		if err := trim(filepath.Join(os.Args[1], f.file), f.keep); err != nil {
			fmt.Fprintf(os.Stderr, "trim: %s: %v\n", f.file, err)
			os.Exit(1)
		}
	}
}

// trim keeps, of every composite literal keyed by externaldns.<name>, only the entry keyed by
// externaldns.<keep>, and drops the imports nothing uses any more. It fails unless exactly one
// table lost entries and kept exactly one: a change upstream then stops the build, not the test.
func trim(file, keep string) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
	if err != nil {
		return err
	}
	tables := 0
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok {
			return true
		}
		var kept []ast.Expr
		dropped := 0
		for _, elt := range lit.Elts {
			kv, ok := elt.(*ast.KeyValueExpr)
			if !ok {
				return true
			}
			sel, ok := kv.Key.(*ast.SelectorExpr)
			if !ok || !isIdent(sel.X, "externaldns") {
				return true
			}
			if sel.Sel.Name == keep {
				kept = append(kept, elt)
			} else {
				dropped++
			}
		}
		if dropped > 0 {
			if len(kept) != 1 {
				err = fmt.Errorf("the table keyed by externaldns.* has no single %s entry", keep)
			}
			lit.Elts = kept
			tables++
		}
		return false
	})
	if err != nil {
		return err
	}
	if tables != 1 {
		return fmt.Errorf("found %d constructor tables, want 1", tables)
	}
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok {
				used[id.Name] = true
			}
		}
		return true
	})
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.IMPORT {
			continue
		}
		specs := gen.Specs[:0]
		for _, spec := range gen.Specs {
			imp := spec.(*ast.ImportSpec)
			path, _ := strconv.Unquote(imp.Path.Value)
			name := path[strings.LastIndex(path, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			if used[name] || !strings.Contains(path, ".") {
				specs = append(specs, spec)
			}
		}
		gen.Specs = specs
	}
	f.Comments = nil
	var buf bytes.Buffer
	if err := format.Node(&buf, fset, f); err != nil {
		return err
	}
	return os.WriteFile(file, buf.Bytes(), 0o644)
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
