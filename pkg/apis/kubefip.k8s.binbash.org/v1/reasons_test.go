package v1

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// reasonsInCode finds the reasons the operator's code writes: every string constant named
// Reason… or Problem…, and every string constant given as a reason (a reason: or Reason: field,
// an Event's reason argument), in the non-test, non-generated sources under pkg/. It maps each
// reason to where it is defined, a directory relative to pkg/ and the constant's name, and lists
// the reasons defined elsewhere than here or in pkg/config as misplaced.
func reasonsInCode(t *testing.T) (found map[string]string, misplaced []string) {
	t.Helper()
	root := filepath.Join("..", "..", "..")
	fset := token.NewFileSet()
	consts := map[string]map[string]string{} // directory -> constant name -> value
	used := map[string]map[string]bool{}     // directory -> constant names given as a reason
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "generated" {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "zz_generated") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		if consts[dir] == nil {
			consts[dir], used[dir] = map[string]string{}, map[string]bool{}
		}
		collect(f, consts[dir], used[dir])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	found = map[string]string{}
	// Reasons live here, beside their classes; only pkg/config, which imports nothing of
	// Kubernetes, defines the configuration's problems itself.
	here := filepath.Join("apis", "kubefip.k8s.binbash.org", "v1")
	for dir, cs := range consts {
		for name, value := range cs {
			if strings.HasPrefix(name, "Reason") || strings.HasPrefix(name, "Problem") || used[dir][name] {
				rel, _ := filepath.Rel(root, dir)
				found[value] = filepath.Join(rel, name)
				if rel != here && rel != "config" {
					misplaced = append(misplaced, filepath.Join(rel, name)+" = "+strconv.Quote(value))
				}
			}
		}
	}
	return found, misplaced
}

// collect records f's string constants in consts and the names of constants given as a reason
// in used.
func collect(f *ast.File, consts map[string]string, used map[string]bool) {
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GenDecl:
			if n.Tok != token.CONST {
				return true
			}
			for _, spec := range n.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if v, err := strconv.Unquote(lit.Value); err == nil {
							consts[name.Name] = v
						}
					}
				}
			}
		case *ast.KeyValueExpr:
			if key, ok := n.Key.(*ast.Ident); ok && strings.EqualFold(key.Name, "reason") {
				if id, ok := n.Value.(*ast.Ident); ok {
					used[id.Name] = true
				}
			}
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if ok && (sel.Sel.Name == "Event" || sel.Sel.Name == "Eventf") && len(n.Args) >= 3 {
				if id, ok := n.Args[2].(*ast.Ident); ok {
					used[id.Name] = true
				}
			}
		}
		return true
	})
}

// TestEveryReasonIsClassified fails on a reason in the code that the classification does not
// list, and on a classified reason no code writes any more.
func TestEveryReasonIsClassified(t *testing.T) {
	t.Parallel()
	inCode, misplaced := reasonsInCode(t)
	for _, m := range misplaced {
		t.Errorf("reason %s is defined outside this package; define it in reasons.go", m)
	}
	// The scan must see the reasons of every writer, or it proves nothing.
	for _, r := range []string{"IPConflict", "Provisioning", "Configured", "InvalidRange", "NoMatchingRange", "ChartSourceNotAllowed"} {
		if _, ok := inCode[r]; !ok {
			t.Fatalf("the scan of the code missed reason %s; found %d reasons", r, len(inCode))
		}
	}
	classes := classified(t)
	for reason, where := range inCode {
		if _, ok := classes[reason]; !ok {
			t.Errorf("reason %q (%s) is not classified in reasons.go", reason, where)
		}
	}
	for reason := range classes {
		if _, ok := inCode[reason]; !ok {
			t.Errorf("reason %q is classified but no code defines it", reason)
		}
	}
}

func TestEventTypeFollowsTheClass(t *testing.T) {
	t.Parallel()
	for reason, c := range classified(t) {
		want := corev1.EventTypeWarning
		if c == Done || c == Progress {
			want = corev1.EventTypeNormal
		}
		if got := EventType(reason); got != want {
			t.Errorf("EventType(%s) = %s; want %s for its class %d", reason, got, want, c)
		}
	}
	if got := EventType("SomethingNew"); got != corev1.EventTypeWarning {
		t.Errorf("an unclassified reason's Event is %s; want Warning", got)
	}
	for _, r := range []string{"Provisioning", "Disconnected", "ClusterNotFound", "NotAllocated", "RangeNotFound"} {
		if EventType(r) != corev1.EventTypeNormal {
			t.Errorf("progress %s makes a Warning Event", r)
		}
	}
	for _, r := range []string{"IPConflict", "RangeExhausted", "InvalidRange", "Overlap", "NoMatchingRange", "ChartSourceNotAllowed"} {
		if EventType(r) != corev1.EventTypeWarning {
			t.Errorf("failure %s makes a Normal Event", r)
		}
	}
}

// classified is ReasonTable as a map from each reason to its class; it fails on a reason listed
// twice, or in no class.
func classified(t *testing.T) map[string]Class {
	t.Helper()
	out := map[string]Class{}
	for _, row := range ReasonTable() {
		if row.On == "" || row.Do == "" {
			t.Errorf("reasons %v: the table says not where they are shown or what to do", row.Reasons)
		}
		for _, r := range row.Reasons {
			if _, dup := out[r]; dup {
				t.Errorf("reason %s is listed twice", r)
			}
			if row.Class == Unclassified {
				t.Errorf("reason %s is listed without a class", r)
			}
			out[r] = row.Class
		}
	}
	return out
}

// TestClassOfIsTheTable: ClassOf's generated switch gives every reason the class of its row, so
// that a change of the table without go generate fails here.
func TestClassOfIsTheTable(t *testing.T) {
	t.Parallel()
	classes := classified(t)
	for reason, c := range classes {
		if got := ClassOf(reason); got != c {
			t.Errorf("ClassOf(%s) = %d; the table says %d (run go generate)", reason, got, c)
		}
	}
	if got := ClassOf("NoSuchReason"); got != Unclassified {
		t.Errorf("ClassOf of a reason the table does not list = %d; want Unclassified", got)
	}
}
