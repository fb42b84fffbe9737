package main

import (
	"go/ast"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/kubefip/kube-fip-operator/pkg/cachetrim"
)

const modulePath = "github.com/kubefip/kube-fip-operator"

// The two ways the tests load the module's packages: typesAndImports, each package's types, files
// and imports, all the way down (from export data); syntaxAndTypes, each package's syntax and
// types with what they resolve to, from source.
const (
	typesAndImports = packages.NeedName | packages.NeedTypes | packages.NeedFiles | packages.NeedImports | packages.NeedDeps
	syntaxAndTypes  = packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedImports
)

// loaded keeps each load of the module: every test of a mode reads the same packages, which are
// loaded once (type-checking the module from source takes seconds).
var loaded = struct {
	sync.Mutex
	byMode map[packages.LoadMode][]*packages.Package
}{byMode: map[packages.LoadMode][]*packages.Package{}}

// loadPackages loads every package of the module with what mode asks for, once.
func loadPackages(t *testing.T, mode packages.LoadMode) []*packages.Package {
	t.Helper()
	loaded.Lock()
	defer loaded.Unlock()
	if pkgs, ok := loaded.byMode[mode]; ok {
		return pkgs
	}
	cfg := &packages.Config{Mode: mode}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Fatal(err)
	}
	if packages.PrintErrors(pkgs) > 0 {
		t.Fatal("packages did not load")
	}
	loaded.byMode[mode] = pkgs
	return pkgs
}

// TestNoPackageLevelMutableState: the allocator, configuration and metrics are values passed to
// whoever needs them. No package-level variable outside generated code may hold something that can
// be changed behind everyone's back: maps, slices, channels, functions, pointers (but a compiled
// regexp), interfaces (but error sentinels). Embedded files (embed.FS) are read-only.
func TestNoPackageLevelMutableState(t *testing.T) {
	for _, pkg := range loadPackages(t, typesAndImports) {
		if strings.HasPrefix(pkg.PkgPath, modulePath+"/pkg/generated") || pkg.Types == nil {
			continue
		}
		scope := pkg.Types.Scope()
		for _, name := range scope.Names() {
			v, ok := scope.Lookup(name).(*types.Var)
			if !ok {
				continue
			}
			file := pkg.Fset.Position(v.Pos()).Filename
			if strings.Contains(file, "zz_generated") || strings.HasSuffix(file, "_test.go") {
				continue
			}
			if reason := mutable(v.Type(), 0); reason != "" {
				t.Errorf("%s: package-level variable %s.%s is %s; pass it as a value instead", pkg.Fset.Position(v.Pos()), pkg.Name, name, reason)
			}
		}
	}
}

func mutable(typ types.Type, depth int) string {
	if depth > 5 {
		return ""
	}
	switch u := typ.Underlying().(type) {
	case *types.Basic:
		return ""
	case *types.Array:
		return mutable(u.Elem(), depth+1)
	case *types.Struct:
		if named, ok := typ.(*types.Named); ok && named.Obj().Pkg() != nil &&
			named.Obj().Pkg().Path() == "embed" && named.Obj().Name() == "FS" {
			return "" // files compiled into the binary: read-only
		}
		for i := 0; i < u.NumFields(); i++ {
			if r := mutable(u.Field(i).Type(), depth+1); r != "" {
				return "a struct holding " + r
			}
		}
		return ""
	case *types.Pointer:
		if named, ok := u.Elem().(*types.Named); ok && named.Obj().Pkg() != nil &&
			named.Obj().Pkg().Path() == "regexp" && named.Obj().Name() == "Regexp" {
			return "" // compiled once, safe for concurrent use, no mutating methods
		}
		return "a pointer (" + typ.String() + ")"
	case *types.Interface:
		if types.Identical(typ, types.Universe.Lookup("error").Type()) {
			return "" // sentinel errors
		}
		return "an interface (" + typ.String() + ")"
	default:
		return "a " + typeKind(u) + " (" + typ.String() + ")"
	}
}

func typeKind(t types.Type) string {
	switch t.(type) {
	case *types.Map:
		return "map"
	case *types.Slice:
		return "slice"
	case *types.Chan:
		return "channel"
	case *types.Signature:
		return "function"
	}
	return "value of a mutable kind"
}

// TestPurePackagesHaveNoKubernetesImports: the allocator and the configuration parser are plain Go,
// tested without any cluster.
func TestPurePackagesHaveNoKubernetesImports(t *testing.T) {
	pure := map[string]bool{modulePath + "/pkg/ipam": true, modulePath + "/pkg/config": true, modulePath + "/pkg/problem": true}
	allowed := map[string]bool{"sigs.k8s.io/yaml": true, "sigs.k8s.io/yaml/goyaml.v2": true}
	found := 0
	for _, pkg := range loadPackages(t, typesAndImports) {
		if !pure[pkg.PkgPath] {
			continue
		}
		found++
		seen := map[string]bool{}
		var walk func(p *packages.Package)
		walk = func(p *packages.Package) {
			for path, imp := range p.Imports {
				if seen[path] {
					continue
				}
				seen[path] = true
				if allowed[path] {
					continue
				}
				if strings.HasPrefix(path, "k8s.io/") || strings.HasPrefix(path, "sigs.k8s.io/") || strings.Contains(path, "rancher/") {
					t.Errorf("%s imports %s (via %s)", pkg.PkgPath, path, p.PkgPath)
				}
				walk(imp)
			}
		}
		walk(pkg)
	}
	if found != len(pure) {
		t.Errorf("found %d of the %d pure packages", found, len(pure))
	}
}

// TestOneStatusWriterPerKind: every FloatingIP and FloatingIPRange status write goes through
// pkg/status, so that one conflict policy holds and Ready is derived in one place. A second call
// of a generated UpdateStatus for one of these kinds anywhere else fails here.
func TestOneStatusWriterPerKind(t *testing.T) {
	pkgs := loadPackages(t, syntaxAndTypes)
	const apiPath = modulePath + "/pkg/apis/kubefip.k8s.binbash.org/v1"
	writers := map[string][]string{}
	for _, pkg := range pkgs {
		if strings.HasPrefix(pkg.PkgPath, modulePath+"/pkg/generated") || strings.HasPrefix(pkg.PkgPath, modulePath+"/test/") {
			continue
		}
		for _, file := range pkg.Syntax {
			if strings.HasSuffix(pkg.Fset.Position(file.Pos()).Filename, "_test.go") {
				continue
			}
			ast.Inspect(file, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "UpdateStatus" {
					return true
				}
				sig, ok := pkg.TypesInfo.TypeOf(sel).(*types.Signature)
				if !ok || sig.Params().Len() != 1 {
					return true
				}
				ptr, ok := sig.Params().At(0).Type().(*types.Pointer)
				if !ok {
					return true
				}
				named, ok := ptr.Elem().(*types.Named)
				if !ok || named.Obj().Pkg() == nil || named.Obj().Pkg().Path() != apiPath {
					return true
				}
				kind := named.Obj().Name()
				writers[kind] = append(writers[kind], pkg.Fset.Position(call.Pos()).String())
				if pkg.PkgPath != modulePath+"/pkg/status" {
					t.Errorf("%s writes %s status; go through pkg/status instead", pkg.Fset.Position(call.Pos()), kind)
				}
				return true
			})
		}
	}
	for _, kind := range []string{"FloatingIP", "FloatingIPRange"} {
		if len(writers[kind]) != 1 {
			t.Errorf("%s status is written at %d places, want 1: %v", kind, len(writers[kind]), writers[kind])
		}
	}
}

// TestInstallPolicyHasOneHome: what may reach a guest (chart sources, images, values, rendered
// objects) is decided under pkg/installpolicy alone: only its render package runs a chart's
// templates, and only its approve and chartvalues packages decode strictly what a chart rendered
// or a configuration gives. No other production package renders or decodes charts, and every Helm action that applies to a guest hands Helm
// only the approved manifest (helminstall's approvedManifest as its post-renderer) with hooks and CRDs
// off. package/charts, which renders the operator's own chart offline for packaging, applies nothing.
func TestInstallPolicyHasOneHome(t *testing.T) {
	pkgs := loadPackages(t, syntaxAndTypes)
	const policy = modulePath + "/pkg/installpolicy"
	judging := map[string][]string{
		"helm.sh/helm/v3/pkg/engine":                      {policy + "/render"},
		"sigs.k8s.io/json":                                {policy + "/approve", policy + "/chartvalues"},
		"k8s.io/apimachinery/pkg/runtime/serializer/json": {policy + "/approve"},
	}
	found := false
	for _, pkg := range pkgs {
		if pkg.PkgPath == policy {
			found = true
		}
		if !strings.HasPrefix(pkg.PkgPath, modulePath+"/pkg/") || strings.HasPrefix(pkg.PkgPath, modulePath+"/pkg/generated") {
			continue
		}
		for imp, homes := range judging {
			if _, ok := pkg.Imports[imp]; ok && !slices.Contains(homes, pkg.PkgPath) {
				t.Errorf("%s imports %s: rendering and judging charts belongs to %s", pkg.PkgPath, imp, strings.Join(homes, " and "))
			}
		}
		if pkg.PkgPath == modulePath+"/package/charts" {
			continue
		}
		for _, file := range pkg.Syntax {
			if strings.HasSuffix(pkg.Fset.Position(file.Pos()).Filename, "_test.go") {
				continue
			}
			actions := map[string]map[string]bool{}
			ast.Inspect(file, func(n ast.Node) bool {
				assign, ok := n.(*ast.AssignStmt)
				if !ok {
					return true
				}
				for i, lhs := range assign.Lhs {
					sel, ok := lhs.(*ast.SelectorExpr)
					if !ok || i >= len(assign.Rhs) {
						continue
					}
					recv := types.ExprString(sel.X)
					if actions[recv] == nil {
						actions[recv] = map[string]bool{}
					}
					rhs := types.ExprString(assign.Rhs[i])
					switch sel.Sel.Name {
					case "PostRenderer":
						if typ := pkg.TypesInfo.TypeOf(assign.Rhs[i]); typ == nil || !strings.HasSuffix(typ.String(), "/pkg/helminstall.approvedManifest") {
							t.Errorf("%s: %s.PostRenderer = %s; Helm must be handed the approved manifest (helminstall.approvedManifest)",
								pkg.Fset.Position(assign.Pos()), recv, rhs)
						}
						actions[recv]["PostRenderer"] = true
					case "DisableHooks", "SkipCRDs":
						actions[recv][sel.Sel.Name] = rhs == "true"
					}
				}
				return true
			})
			for recv, set := range actions {
				if set["PostRenderer"] && (!set["DisableHooks"] || !set["SkipCRDs"]) {
					t.Errorf("%s: the Helm action %s does not turn off hooks and CRDs", pkg.Fset.Position(file.Pos()), recv)
				}
			}
		}
	}
	if !found {
		t.Error("pkg/installpolicy was not found")
	}
}

// TestInstallPolicyLayers: the packages of pkg/installpolicy depend on each other one way, each on
// those below it only: guestchart (the charts and Refusal) at the bottom; chart sources, chart
// archives, the render and kube-vip's environment on it; images on kube-vip's releases; the values
// schema on images; approval on the values and the render; and the package itself, which composes
// the Policy and its Plans, on all of them. None of them imports helminstall, which applies what
// they approved.
func TestInstallPolicyLayers(t *testing.T) {
	const policy = modulePath + "/pkg/installpolicy"
	below := map[string][]string{
		"guestchart":   nil,
		"chartsource":  {"guestchart"},
		"chartarchive": {"guestchart"},
		"render":       {"guestchart"},
		"kubevipenv":   {"guestchart"},
		"imagepolicy":  {"guestchart", "kubevipenv"},
		"chartvalues":  {"guestchart", "imagepolicy"},
		"approve":      {"guestchart", "kubevipenv", "imagepolicy", "chartvalues", "render"},
	}
	for name := range below {
		below[""] = append(below[""], name)
	}
	found := 0
	for _, pkg := range loadPackages(t, typesAndImports) {
		name, ok := strings.CutPrefix(pkg.PkgPath, policy)
		if !ok || (name != "" && !strings.HasPrefix(name, "/")) {
			continue
		}
		name = strings.TrimPrefix(name, "/")
		allowed, known := below[name]
		if !known {
			t.Errorf("%s has no place in the layers of pkg/installpolicy: add it to TestInstallPolicyLayers", pkg.PkgPath)
			continue
		}
		found++
		for imp := range pkg.Imports {
			if imp == modulePath+"/pkg/helminstall" {
				t.Errorf("%s imports %s, which applies what the install policy approved", pkg.PkgPath, imp)
			}
			dep, ok := strings.CutPrefix(imp, policy+"/")
			if imp == policy || (ok && !slices.Contains(allowed, dep)) {
				t.Errorf("%s imports %s: the packages of pkg/installpolicy depend only on those below them", pkg.PkgPath, imp)
			}
		}
	}
	if found != len(below) {
		t.Errorf("found %d of the %d packages of pkg/installpolicy", found, len(below))
	}
}

// TestUnitTestsNeedNoControlPlane: the tests under pkg/ run on in-memory fakes and the client-go
// fake clientsets, and those under package/ read the image layout and render the charts, so that
// `make unit` (go test ./pkg/... ./package/...) needs no API server; the tests against a real one
// live under test/. No pkg/ or package/ test imports the control-plane rig, directly or through
// another package.
func TestUnitTestsNeedNoControlPlane(t *testing.T) {
	const controlPlane = modulePath + "/test/rig/controlplane"
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps, Tests: true}
	pkgs, err := packages.Load(cfg, "./pkg/...", "./package/...")
	if err != nil {
		t.Fatal(err)
	}
	if packages.PrintErrors(pkgs) > 0 {
		t.Fatal("packages did not load")
	}
	checked := 0
	for _, pkg := range pkgs {
		if !strings.HasPrefix(pkg.PkgPath, modulePath+"/pkg/") && !strings.HasPrefix(pkg.PkgPath, modulePath+"/package/") {
			continue
		}
		checked++
		seen := map[string]bool{}
		var reaches func(p *packages.Package, path []string) []string
		reaches = func(p *packages.Package, path []string) []string {
			if p.PkgPath == controlPlane {
				return append(path, p.PkgPath)
			}
			if seen[p.PkgPath] {
				return nil
			}
			seen[p.PkgPath] = true
			for _, imp := range p.Imports {
				if found := reaches(imp, append(path, p.PkgPath)); found != nil {
					return found
				}
			}
			return nil
		}
		if chain := reaches(pkg, nil); chain != nil {
			t.Errorf("%s (%s) needs the control plane: %s", pkg.PkgPath, pkg.ID, strings.Join(chain, " → "))
		}
	}
	if checked == 0 {
		t.Fatal("no package under pkg/ or package/ was loaded")
	}
}

// TestPackageMapIsTrue: docs/design.md's package map names every package of the module (under
// pkg/, at the depth it maps them; under package/ and test/ by their top directory) and nothing
// that does not exist.
func TestPackageMapIsTrue(t *testing.T) {
	doc, err := os.ReadFile("docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "\n## Packages\n")
	if !ok {
		t.Fatal("docs/design.md has no Packages section")
	}
	mapped := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		if rest, ok := strings.CutPrefix(line, "| `"); ok {
			path, _, _ := strings.Cut(rest, "`")
			mapped[strings.TrimSuffix(path, "/")] = true
		}
	}
	for path := range mapped {
		if _, err := os.Stat(path); err != nil {
			t.Errorf("the map names %s, which does not exist", path)
		}
	}
	for _, pkg := range loadPackages(t, typesAndImports) {
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg.PkgPath, modulePath), "/")
		if rel == "" {
			continue // main.go
		}
		covered := false
		// A package is covered by its own row or by a row of a directory above it; a row may
		// also name a package below it (pkg/apis/<group>/v1 stands for pkg/apis/<group>).
		for m := range mapped {
			if strings.HasPrefix(m, rel+"/") {
				covered = true
			}
		}
		for p := rel; !covered && p != "." && p != ""; p = filepath.Dir(p) {
			if mapped[p] {
				covered = true
				break
			}
		}
		if !covered {
			t.Errorf("package %s is not in docs/design.md's map", rel)
		}
	}
	// The map names pkg/ packages themselves, not just pkg/.
	for _, dir := range []string{"pkg", "pkg/controllers"} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() && !mapped[dir+"/"+e.Name()] && !(dir == "pkg" && e.Name() == "apis") {
				t.Errorf("%s/%s is not in docs/design.md's map", dir, e.Name())
			}
		}
	}
}

// TestOneControllerShape: every controller package under pkg/controllers/ is built the same way:
// one exported Register(ctx context.Context, c *controllers.Context) error, which copies into the
// controller's own struct what it reads of the Context; no struct keeps the Context itself.
func TestOneControllerShape(t *testing.T) {
	const contextType = modulePath + "/pkg/controllers.Context"
	checked := 0
	// From source, not export data: the handlers are unexported types.
	for _, pkg := range loadPackages(t, syntaxAndTypes) {
		if !strings.HasPrefix(pkg.PkgPath, modulePath+"/pkg/controllers/") || pkg.Types == nil {
			continue
		}
		checked++
		scope := pkg.Types.Scope()
		fn, ok := scope.Lookup("Register").(*types.Func)
		if !ok {
			t.Errorf("%s has no func Register", pkg.PkgPath)
		} else {
			sig := fn.Type().(*types.Signature)
			want := "func(ctx context.Context, c *" + contextType + ") error"
			got := types.TypeString(sig, nil)
			params := sig.Params()
			shaped := params.Len() == 2 && sig.Results().Len() == 1 &&
				types.TypeString(params.At(0).Type(), nil) == "context.Context" &&
				types.TypeString(params.At(1).Type(), nil) == "*"+contextType &&
				types.TypeString(sig.Results().At(0).Type(), nil) == "error"
			if !shaped {
				t.Errorf("%s.Register is %s; want %s", pkg.PkgPath, got, want)
			}
		}
		for _, name := range scope.Names() {
			tn, ok := scope.Lookup(name).(*types.TypeName)
			if !ok {
				continue
			}
			st, ok := tn.Type().Underlying().(*types.Struct)
			if !ok {
				continue
			}
			for i := 0; i < st.NumFields(); i++ {
				if f := st.Field(i); strings.Contains(types.TypeString(f.Type(), nil), contextType) {
					t.Errorf("%s.%s keeps the controllers.Context (field %s); copy what it reads instead", pkg.PkgPath, name, f.Name())
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no controller package was loaded")
	}
}

// TestNoCodeReadsATrimmedField: the informers keep of Rancher's clusters only the fields
// pkg/cachetrim copies (ProvisioningCluster, ManagementCluster); a field it drops reads as empty
// from the cache, silently. This test finds every field of those objects that production code
// reads, and fails on any not kept below, the list pkg/cachetrim's transforms must keep: reading
// one more field means keeping it there, and adding it here. Of their metadata, only the fields
// and getters of cachetrim.ReadOnlyMetadata may be read.
func TestNoCodeReadsATrimmedField(t *testing.T) {
	const (
		prov = "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1."
		mgmt = "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3."
	)
	kept := map[string][]string{
		prov + "Cluster":          {"TypeMeta", "ObjectMeta", "Spec", "Status"},
		prov + "ClusterSpec":      {"CloudCredentialSecretName", "RKEConfig"},
		prov + "RKEConfig":        {"MachinePools", "MachineGlobalConfig"},
		prov + "RKEMachinePool":   {"Name", "ControlPlaneRole", "NodeConfig", "CloudCredentialSecretName"},
		prov + "ClusterStatus":    {"ClusterName", "ClientSecretName"},
		mgmt + "Cluster":          {"TypeMeta", "ObjectMeta", "Spec", "Status"},
		mgmt + "ClusterSpec":      {"DisplayName"},
		mgmt + "ClusterSpecBase":  {"DisplayName"},
		mgmt + "ClusterStatus":    {"Conditions"},
		mgmt + "ClusterCondition": {"Type", "Status", "Reason"},
	}
	pkgs := loadPackages(t, syntaxAndTypes)
	read := 0
	for _, pkg := range pkgs {
		if !strings.HasPrefix(pkg.PkgPath, modulePath+"/pkg/") || pkg.PkgPath == modulePath+"/pkg/cachetrim" ||
			strings.HasPrefix(pkg.PkgPath, modulePath+"/pkg/generated") || pkg.TypesInfo == nil {
			continue
		}
		for _, file := range pkg.Syntax {
			if strings.HasSuffix(pkg.Fset.Position(file.Pos()).Filename, "_test.go") {
				continue
			}
			ast.Inspect(file, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				s, ok := pkg.TypesInfo.Selections[sel]
				if !ok || (s.Kind() != types.FieldVal && s.Kind() != types.MethodVal) {
					return true
				}
				recv := s.Recv()
				if p, ok := recv.(*types.Pointer); ok {
					recv = p.Elem()
				}
				owner := types.TypeString(recv, nil)
				fields, trimmed := kept[owner]
				if !trimmed {
					return true
				}
				read++
				name := sel.Sel.Name
				if path := s.Index(); len(path) > 1 {
					// Promoted from an embedded struct: ObjectMeta's fields and getters are kept when
					// ReadOnlyMetadata lists them, another's when the embedded field is kept.
					st, ok := recv.Underlying().(*types.Struct)
					if ok && st.Field(path[0]).Name() == "ObjectMeta" {
						if !slices.Contains(strings.Fields(cachetrim.ReadOnlyMetadata), strings.TrimPrefix(name, "Get")) {
							t.Errorf("%s reads %s.%s, which pkg/cachetrim drops from the metadata of the cache (ReadOnlyMetadata)",
								pkg.Fset.Position(sel.Pos()), owner, name)
						}
						return true
					}
					if ok && slices.Contains(fields, st.Field(path[0]).Name()) {
						return true
					}
				}
				if s.Kind() != types.FieldVal {
					return true
				}
				if !slices.Contains(fields, name) {
					t.Errorf("%s reads %s.%s, which pkg/cachetrim drops from the cache", pkg.Fset.Position(sel.Pos()), owner, name)
				}
				return true
			})
		}
	}
	if read == 0 {
		t.Fatal("no read of a trimmed kind's field was found")
	}
}
