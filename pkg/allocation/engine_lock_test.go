package allocation

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// engineFile reports whether name is one of the files whose methods of engine may touch its fields: the engine, its index
// and its ranges' state (tests included: engine*_test.go).
func engineFile(name string) bool {
	return strings.HasPrefix(name, "engine") || name == "index.go" || name == "rangestate.go" || name == "rangeindex.go"
}

// stubImporter gives every import an empty package of the path's last element: the check needs
// the types of this package only (the engine and what holds it), so nothing outside it is read.
type stubImporter struct{}

func (stubImporter) Import(path string) (*types.Package, error) {
	p := types.NewPackage(path, path[strings.LastIndex(path, "/")+1:])
	p.MarkComplete()
	return p, nil
}

// engineLockViolations type-checks the package made of files (name to source) and returns where a
// field of an engine value is selected outside a method of engine, where a method of engine is
// declared outside the engine's files, and where an engine is built field by field outside them.
// selections counts the field selections on engine values it saw, so that a caller can tell a
// scan that found nothing from one that could see nothing.
func engineLockViolations(t *testing.T, files map[string]string) (violations []string, selections int) {
	t.Helper()
	fset := token.NewFileSet()
	var parsed []*ast.File
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range files {
			if !yield(n) {
				return
			}
		}
	}) {
		f, err := parser.ParseFile(fset, name, files[name], 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
	}
	info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}, Types: map[ast.Expr]types.TypeAndValue{}}
	conf := types.Config{Importer: stubImporter{}, Error: func(error) {}} // the stubs leave errors; the engine's types are whole
	pkg, _ := conf.Check("allocation", fset, parsed, info)
	obj := pkg.Scope().Lookup("engine")
	if obj == nil {
		t.Fatal("no type engine in the package")
	}
	engineType := obj.Type()
	isEngine := func(tp types.Type) bool {
		if p, ok := tp.(*types.Pointer); ok {
			tp = p.Elem()
		}
		return types.Identical(tp, engineType)
	}
	for _, f := range parsed {
		file := filepath.Base(fset.Position(f.Pos()).Filename)
		for _, decl := range f.Decls {
			fn, isFunc := decl.(*ast.FuncDecl)
			method := isFunc && fn.Recv != nil && len(fn.Recv.List) == 1 && isEngine(info.TypeOf(fn.Recv.List[0].Type))
			if method && !engineFile(file) {
				violations = append(violations, fset.Position(fn.Pos()).String()+": method "+fn.Name.Name+" of engine outside the engine's files")
			}
			where := "package level"
			if isFunc {
				where = fn.Name.Name
			}
			ast.Inspect(decl, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.SelectorExpr:
					sel := info.Selections[x]
					if sel == nil || sel.Kind() != types.FieldVal || !isEngine(sel.Recv()) {
						return true
					}
					selections++
					if !method {
						violations = append(violations, fset.Position(x.Pos()).String()+": "+where+" selects ."+x.Sel.Name+" of an engine")
					}
				case *ast.CompositeLit:
					if isEngine(info.TypeOf(x)) && !engineFile(file) {
						violations = append(violations, fset.Position(x.Pos()).String()+": "+where+" builds an engine field by field")
					}
				}
				return true
			})
		}
	}
	return violations, selections
}

// TestEngineOwnsItsLock: no function of the package but the engine's own methods, in the engine's
// files, touches the engine's mutex or what it guards (idx, ranges, placeholders, ...): a lock
// taken or a map read elsewhere is how two claims end up with one address.
func TestEngineOwnsItsLock(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".go") {
			b, err := os.ReadFile(e.Name())
			if err != nil {
				t.Fatal(err)
			}
			files[e.Name()] = string(b)
		}
	}
	violations, selections := engineLockViolations(t, files)
	for _, v := range violations {
		t.Error(v)
	}
	// The engine's own methods select its fields in many places: a scan that saw none of them
	// did not resolve the engine's type and proves nothing.
	if selections < 50 {
		t.Fatalf("the scan saw %d selections of engine fields; the type check did not resolve them", selections)
	}
}

// TestEngineLockScanFlags: the scan flags a Manager that locks the engine itself, reads its index
// or builds one by hand, and a method of engine declared outside the engine's files; the engine's
// own methods pass.
func TestEngineLockScanFlags(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"engine.go": `package allocation
import "sync"
type engine struct {
	mu  sync.Mutex
	idx map[string]int
}
func (g *engine) get(k string) int { g.mu.Lock(); defer g.mu.Unlock(); return g.idx[k] }
`,
		"manager.go": `package allocation
type Manager struct{ g *engine }
func (m *Manager) peek(k string) int { m.g.mu.Lock(); defer m.g.mu.Unlock(); return m.g.idx[k] }
func (m *Manager) fine(k string) int { return m.g.get(k) }
func build() *engine { return &engine{idx: nil} }
func (g *engine) stray() int { return len(g.idx) }
`,
	}
	violations, _ := engineLockViolations(t, files)
	want := []string{
		"manager.go:3:40: peek selects .mu of an engine",
		"manager.go:3:61: peek selects .mu of an engine",
		"manager.go:3:85: peek selects .idx of an engine",
		"manager.go:5:32: build builds an engine field by field",
		"manager.go:6:1: method stray of engine outside the engine's files",
	}
	if !slices.Equal(violations, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(violations, "\n"), strings.Join(want, "\n"))
	}
}
