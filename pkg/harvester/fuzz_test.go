package harvester

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/problem"
)

// FuzzParseNetworkInfo: whatever a HarvesterConfig's networkInfo holds, parsing returns a network
// or a problem with a short message — never a panic, never both, never a network that could not
// have come from the input.
func FuzzParseNetworkInfo(f *testing.F) {
	for _, seed := range []string{
		`{"interfaces":[{"networkName":"default/vlan10","macAddress":""}]}`,
		`{"interfaces":[{"networkName":""},{"networkName":"prod/vlan30"}]}`,
		`{"interfaces":[{"networkName":"vlan10"}]}`,
		`{"interfaces":[]}`, `{"interfaces":null}`, `{"interfaces":"eth0"}`, `{"interfaces":[{"networkName":5}]}`,
		`{}`, `[]`, `null`, `"x"`, ``, `{`, `not json`, `{"interfaces":[{"networkName":"a/b/c"}]}`,
		`{"interfaces":[{"networkName":" /x"}]}`, "{\"interfaces\":[{\"networkName\":\"d\\u0000/\\u00ff\"}]}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, p := ParseNetworkInfo(s)
		checkOutcome(t, s, c, p)
		// The same through the HarvesterConfig's fields, as string and as decoded JSON.
		c2, p2 := NetworkOf(map[string]interface{}{"networkInfo": s})
		if strings.TrimSpace(s) != "" && (!sameChoice(c, c2) || (p2 == nil) != (p == nil)) {
			t.Fatalf("NetworkOf and ParseNetworkInfo disagree on %q: %+v %v / %+v %v", s, c2, p2, c, p)
		}
		var decoded interface{}
		if json.Unmarshal([]byte(s), &decoded) == nil {
			c3, p3 := NetworkOf(map[string]interface{}{"networkInfo": decoded})
			checkOutcome(t, s, c3, p3)
		}
	})
}

// FuzzParseNetworkName: the same for networkName.
func FuzzParseNetworkName(f *testing.F) {
	for _, seed := range []string{"default/vlan10", "vlan10", "", "/", "a/", "/b", "a/b/c", " a/b ", "a /b", "\x00/\xff"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, p := ParseNetworkName(s)
		checkOutcome(t, s, c, p)
		if p == nil && !strings.Contains(s, c.Network.Name) {
			t.Fatalf("network %s is not in %q", c.Network, s)
		}
	})
}

// FuzzParseCredentialRef: a reference parses to a valid namespace and name or to a problem.
func FuzzParseCredentialRef(f *testing.F) {
	for _, seed := range []string{"cattle-global-data:cc-abc", "cc-abc", "", ":", "a:b:c", "A:b", "ns:" + strings.Repeat("n", 300)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		ns, name, p := ParseCredentialRef(ref, "fleet-default", "cattle-global-data")
		if p != nil {
			if ns != "" || name != "" || len(p.Message) > 600 {
				t.Fatalf("problem with a result or a long message: %q %q %v", ns, name, p)
			}
			return
		}
		if ns == "" || name == "" || strings.ContainsAny(ns+name, ":/ ") {
			t.Fatalf("ParseCredentialRef(%q) = %q, %q", ref, ns, name)
		}
	})
}

// FuzzParseStack: whatever cluster-cidr and service-cidr hold, as strings or decoded JSON, the
// answer is dual-stack only when both list a CIDR of each family, with a short note or none —
// never a panic.
func FuzzParseStack(f *testing.F) {
	for _, seed := range [][2]string{
		{"10.42.0.0/16,fd00:42::/56", "fd00:43::/112,10.43.0.0/16"}, {"10.42.0.0/16", "10.43.0.0/16"},
		{`["10.42.0.0/16","fd00:42::/56"]`, `[" ","fd00:43::/112, 10.43.0.0/16"]`}, {"42", "{}"}, {"", ","},
		{"10.42.0.0/16,fd00:42::/56", "not a cidr,10.43.0.0/16"}, {"\x00/\xff", strings.Repeat("10.0.0.0/8,", 200)},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, cluster, service string) {
		check := func(config map[string]interface{}) {
			s := ParseStack(config)
			if len(s.Note) > 600 || (s.DualStack && s.Note != "") {
				t.Fatalf("%q / %q: %+v", cluster, service, s)
			}
			if s.DualStack && (!strings.Contains(cluster, ".") || !strings.Contains(cluster, ":") || !strings.Contains(service, ".") || !strings.Contains(service, ":")) {
				t.Fatalf("%q / %q: dual-stack without an address of each family in each", cluster, service)
			}
		}
		check(map[string]interface{}{ClusterCIDRKey: cluster, ServiceCIDRKey: service})
		var c, s interface{}
		if json.Unmarshal([]byte(cluster), &c) == nil && json.Unmarshal([]byte(service), &s) == nil {
			check(map[string]interface{}{ClusterCIDRKey: c, ServiceCIDRKey: s})
		}
	})
}

func checkOutcome(t *testing.T, input string, c Choice, p *problem.Problem) {
	t.Helper()
	if p != nil {
		if c != (Choice{}) {
			t.Fatalf("%q: both a network (%+v) and a problem (%v)", input, c, p)
		}
		if p.Reason != v1.ReasonInvalidNetwork || len(p.Message) > 600 {
			t.Fatalf("%q: problem %s with a %d-character message", input, p.Reason, len(p.Message))
		}
		return
	}
	n := c.Network
	if n.Name == "" || strings.Contains(n.Name, "/") || strings.Contains(n.Namespace, "/") || c.From == "" {
		t.Fatalf("%q: malformed network %+v", input, c)
	}
	if (n.Namespace == "") != (c.Note != nil) {
		t.Fatalf("%q: network %s with note %v", input, n, c.Note)
	}
	if utf8.ValidString(input) && !n.Matches(n.Name) {
		t.Fatalf("%q: network %s does not match its own name", input, n)
	}
}

func sameChoice(a, b Choice) bool {
	return a.Network == b.Network && a.From == b.From && (a.Note == nil) == (b.Note == nil) &&
		(a.Note == nil || *a.Note == *b.Note)
}
