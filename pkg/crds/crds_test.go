package crds

import (
	"net/netip"
	"regexp"
	"strings"
	"testing"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestMappedAddressPattern checks the CEL rule's expression against the address parser: it must
// catch every spelling of an IPv4-mapped IPv6 address and nothing else.
func TestMappedAddressPattern(t *testing.T) {
	t.Parallel()
	iprange := regexp.MustCompile("^(" + mappedAddress + ")")
	exclude := regexp.MustCompile("(^|-)(" + mappedAddress + ")")
	for _, tc := range []struct {
		text   string
		mapped bool
	}{
		{"::ffff:10.0.0.0/120", true},
		{"::FFFF:10.0.0.0/120", true},
		{"::ffff:a00:0/120", true},
		{"0:0:0:0:0:ffff:a00:0/120", true},
		{"0000:0000:0000:0000:0000:ffff:0a00:0000/120", true},
		{"0::ffff:a00:0/120", true},
		{"::0:ffff:a00:0/120", true},
		{"0:0:0:0:0:ffff::/96", true},
		{"::ffff:0:0/96", true},
		{"::ffff:10.0.0.1", true},
		{"::ffff:1/128", false},
		{"::ffff:0:0:1/128", false},
		{"::/0", false},
		{"fd00::ffff:a00:1/128", false},
		{"10.0.0.0/24", false},
		{"ffff::/16", false},
		{"fd00:10::/64", false},
	} {
		addr := tc.text
		if i := strings.IndexByte(addr, '/'); i >= 0 {
			addr = addr[:i]
		}
		parsed := netip.MustParseAddr(addr)
		if parsed.Is4In6() != tc.mapped {
			t.Fatalf("test case %s: the parser says mapped=%v", tc.text, parsed.Is4In6())
		}
		if got := iprange.MatchString(tc.text); got != tc.mapped {
			t.Errorf("iprange rule on %s: refused=%v, want %v", tc.text, got, tc.mapped)
		}
		if got := exclude.MatchString(tc.text); got != tc.mapped {
			t.Errorf("exclude rule on %s: refused=%v, want %v", tc.text, got, tc.mapped)
		}
		if got := exclude.MatchString("::1-" + tc.text); got != tc.mapped {
			t.Errorf("exclude rule on the range ::1-%s: refused=%v, want %v", tc.text, got, tc.mapped)
		}
	}
}

// TestColumnsDescribed: every printer column of every kind, default and wide, has a description;
// the Rancher UI shows it as the column header's tooltip.
func TestColumnsDescribed(t *testing.T) {
	t.Parallel()
	list, err := List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 {
		t.Fatalf("%d CRDs, want 3", len(list))
	}
	for _, def := range list {
		columns := def.Spec.Versions[0].AdditionalPrinterColumns
		if len(columns) == 0 {
			t.Errorf("%s: no printer columns", def.Spec.Names.Kind)
		}
		for _, c := range columns {
			if strings.TrimSpace(c.Description) == "" {
				t.Errorf("%s column %s (priority %d): no description", def.Spec.Names.Kind, c.Name, c.Priority)
			}
		}
	}
}

// TestColumnsMatchTheSchema: a column reading a spec or status field names a field the schema has,
// with the schema's type, so that a count sorts as a number and a renamed field cannot leave an
// empty column behind.
func TestColumnsMatchTheSchema(t *testing.T) {
	t.Parallel()
	list, err := List()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, def := range list {
		version := def.Spec.Versions[0]
		for _, c := range version.AdditionalPrinterColumns {
			if !strings.HasPrefix(c.JSONPath, ".spec.") && !strings.HasPrefix(c.JSONPath, ".status.") || strings.Contains(c.JSONPath, "[") {
				continue
			}
			prop, ok := schemaAt(version.Schema.OpenAPIV3Schema, c.JSONPath)
			if !ok {
				t.Errorf("%s column %s: %s is not in the schema", def.Spec.Names.Kind, c.Name, c.JSONPath)
				continue
			}
			want := prop.Type
			if c.Type == "date" && prop.Type == "string" {
				// A timestamp is a string in the schema (wrangler gives metav1.Time no format).
				want = "date"
			}
			if c.Type != want {
				t.Errorf("%s column %s: type %s, the schema's %s is %s", def.Spec.Names.Kind, c.Name, c.Type, c.JSONPath, want)
			}
			checked++
		}
	}
	if checked < 10 {
		t.Fatalf("only %d columns checked against the schema", checked)
	}
}

// TestRangeCountColumnsAreIntegers: the range's count columns sort as numbers: they are integer
// columns on the integer status fields, and the exact decimal counts stay in wide columns.
func TestRangeCountColumnsAreIntegers(t *testing.T) {
	t.Parallel()
	def := crdOf(t, "FloatingIPRange")
	version := def.Spec.Versions[0]
	want := map[string]struct {
		path, typ string
		priority  int32
	}{
		"Capacity":        {".status.capacityCount", "integer", 0},
		"Used":            {".status.used", "integer", 0},
		"Available":       {".status.availableCount", "integer", 0},
		"Used%":           {".status.usedPercent", "integer", 0},
		"Harvester":       {".metadata.annotations.harvesterClusterName", "string", 0},
		"Network":         {".metadata.annotations.harvesterNetworkName", "string", 0},
		"Retained":        {".status.retained", "integer", 1},
		"Exact-Capacity":  {".status.capacity", "string", 1},
		"Exact-Available": {".status.available", "string", 1},
	}
	seen := map[string]bool{}
	for _, c := range version.AdditionalPrinterColumns {
		w, ok := want[c.Name]
		if !ok {
			continue
		}
		seen[c.Name] = true
		if c.JSONPath != w.path || c.Type != w.typ || c.Priority != w.priority {
			t.Errorf("column %s: %s %s priority %d, want %s %s priority %d", c.Name, c.JSONPath, c.Type, c.Priority, w.path, w.typ, w.priority)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("no column %s", name)
		}
	}
	for _, field := range []string{"capacityCount", "availableCount", "usedPercent"} {
		prop, ok := schemaAt(version.Schema.OpenAPIV3Schema, ".status."+field)
		if !ok {
			t.Errorf("status.%s is not in the schema", field)
			continue
		}
		if prop.Type != "integer" || strings.TrimSpace(prop.Description) == "" {
			t.Errorf("status.%s: type %q, description %q; want a described integer", field, prop.Type, prop.Description)
		}
	}
	guest := false
	for _, c := range crdOf(t, "FloatingIP").Spec.Versions[0].AdditionalPrinterColumns {
		if c.Name == "Guest" {
			guest = c.JSONPath == ".status.guestState" && c.Priority == 0
		}
	}
	if !guest {
		t.Error("FloatingIP: no default column Guest on .status.guestState")
	}
}

func crdOf(t *testing.T, kind string) *apiextv1.CustomResourceDefinition {
	t.Helper()
	list, err := List()
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range list {
		if def.Spec.Names.Kind == kind {
			return def
		}
	}
	t.Fatalf("no CRD of kind %s", kind)
	return nil
}

// schemaAt follows a simple JSONPath (.status.used) through the schema's properties.
func schemaAt(root *apiextv1.JSONSchemaProps, path string) (apiextv1.JSONSchemaProps, bool) {
	cur := *root
	for _, name := range strings.Split(strings.TrimPrefix(path, "."), ".") {
		next, ok := cur.Properties[name]
		if !ok {
			return apiextv1.JSONSchemaProps{}, false
		}
		cur = next
	}
	return cur, true
}
