package harvester

import (
	"strings"
	"testing"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

func TestNetworkOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		fields   map[string]interface{}
		want     string // the network, "" when a problem is expected
		from     string
		note     string // reason of the note, if any
		problem  string // reason of the problem, if any
		contains string // part of the problem's message
	}{
		{name: "networkName namespace/name", fields: map[string]interface{}{"networkName": "default/vlan10"},
			want: "default/vlan10", from: "networkName"},
		{name: "networkName bare is used with a note", fields: map[string]interface{}{"networkName": "vlan10"},
			want: "vlan10", from: "networkName", note: v1.ReasonNetworkWithoutNamespace},
		{name: "networkName surrounded by blanks", fields: map[string]interface{}{"networkName": "  default/vlan10\n"},
			want: "default/vlan10", from: "networkName"},
		{name: "networkName with two slashes", fields: map[string]interface{}{"networkName": "a/b/c"},
			problem: v1.ReasonInvalidNetwork, contains: `networkName "a/b/c" is not namespace/name`},
		{name: "networkName with empty namespace", fields: map[string]interface{}{"networkName": "/vlan10"},
			problem: v1.ReasonInvalidNetwork},
		{name: "networkName not a string", fields: map[string]interface{}{"networkName": int64(10)},
			problem: v1.ReasonInvalidNetwork, contains: "not a string"},
		{name: "nothing", fields: map[string]interface{}{"cpuCount": "2"},
			problem: v1.ReasonInvalidNetwork, contains: "neither networkInfo nor networkName"},
		{name: "empty strings", fields: map[string]interface{}{"networkInfo": "", "networkName": " "},
			problem: v1.ReasonInvalidNetwork, contains: "neither"},
		{name: "networkInfo one interface",
			fields: map[string]interface{}{"networkInfo": `{"interfaces":[{"networkName":"default/vlan20","macAddress":""}]}`},
			want:   "default/vlan20", from: "networkInfo interface 1 of 1"},
		{name: "networkInfo wins over networkName",
			fields: map[string]interface{}{"networkName": "default/vlan10", "networkInfo": `{"interfaces":[{"networkName":"default/vlan20"}]}`},
			want:   "default/vlan20", from: "networkInfo interface 1 of 1"},
		{name: "networkInfo first interface with a network",
			fields: map[string]interface{}{"networkInfo": `{"interfaces":[{"networkName":""},{"networkName":"prod/vlan30"},{"networkName":"default/vlan10"}]}`},
			want:   "prod/vlan30", from: "networkInfo interface 2 of 3"},
		{name: "networkInfo bare interface network", fields: map[string]interface{}{"networkInfo": `{"interfaces":[{"networkName":"vlan30"}]}`},
			want: "vlan30", from: "networkInfo interface 1 of 1", note: v1.ReasonNetworkWithoutNamespace},
		{name: "networkInfo written as an object",
			fields: map[string]interface{}{"networkInfo": map[string]interface{}{"interfaces": []interface{}{map[string]interface{}{"networkName": "default/vlan40"}}}},
			want:   "default/vlan40", from: "networkInfo interface 1 of 1"},
		{name: "networkInfo not JSON", fields: map[string]interface{}{"networkInfo": "vlan10, vlan20", "networkName": "default/vlan10"},
			problem: v1.ReasonInvalidNetwork, contains: "networkInfo is not the JSON"},
		{name: "networkInfo without interfaces", fields: map[string]interface{}{"networkInfo": `{"interfaces":[]}`},
			problem: v1.ReasonInvalidNetwork, contains: "lists no interfaces"},
		{name: "networkInfo empty object", fields: map[string]interface{}{"networkInfo": `{}`},
			problem: v1.ReasonInvalidNetwork, contains: "lists no interfaces"},
		{name: "networkInfo interfaces of the wrong type", fields: map[string]interface{}{"networkInfo": `{"interfaces":"eth0"}`},
			problem: v1.ReasonInvalidNetwork, contains: "not the JSON"},
		{name: "networkInfo interfaces without networks", fields: map[string]interface{}{"networkInfo": `{"interfaces":[{"macAddress":"x"},{}]}`},
			problem: v1.ReasonInvalidNetwork, contains: "none of the 2 networkInfo interfaces"},
		{name: "networkInfo interface network malformed", fields: map[string]interface{}{"networkInfo": `{"interfaces":[{"networkName":"a//b"}]}`},
			problem: v1.ReasonInvalidNetwork, contains: "interface 1"},
		{name: "networkName upper case", fields: map[string]interface{}{"networkName": "default/VLAN10"},
			problem: v1.ReasonInvalidNetwork, contains: "DNS-1123 subdomain"},
		{name: "networkName namespace upper case", fields: map[string]interface{}{"networkName": "Default/vlan10"},
			problem: v1.ReasonInvalidNetwork, contains: "DNS-1123 label"},
		{name: "networkName namespace with a dot", fields: map[string]interface{}{"networkName": "de.fault/vlan10"},
			problem: v1.ReasonInvalidNetwork, contains: "DNS-1123 label"},
		{name: "networkName blank inside", fields: map[string]interface{}{"networkName": "default/vlan 10"},
			problem: v1.ReasonInvalidNetwork, contains: "DNS-1123"},
		{name: "networkName control characters", fields: map[string]interface{}{"networkName": "default/vlan\n\x1b[31mred"},
			problem: v1.ReasonInvalidNetwork, contains: "DNS-1123"},
		{name: "networkName bare, not a name", fields: map[string]interface{}{"networkName": "vlan_10"},
			problem: v1.ReasonInvalidNetwork, contains: "DNS-1123"},
		{name: "networkName name too long", fields: map[string]interface{}{"networkName": "default/" + strings.Repeat("a", 254)},
			problem: v1.ReasonInvalidNetwork, contains: "DNS-1123"},
		{name: "networkName namespace too long", fields: map[string]interface{}{"networkName": strings.Repeat("a", 64) + "/vlan10"},
			problem: v1.ReasonInvalidNetwork, contains: "DNS-1123"},
		{name: "networkName dotted name", fields: map[string]interface{}{"networkName": "default/vlan10.prod"},
			want: "default/vlan10.prod", from: "networkName"},
		{name: "networkInfo interface network not a name", fields: map[string]interface{}{"networkInfo": `{"interfaces":[{"networkName":"default/<script>"}]}`},
			problem: v1.ReasonInvalidNetwork, contains: "interface 1"},
		{name: "networkInfo a number", fields: map[string]interface{}{"networkInfo": 3.0},
			problem: v1.ReasonInvalidNetwork, contains: "not a JSON string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, p := NetworkOf(tt.fields)
			if tt.problem != "" {
				if p == nil {
					t.Fatalf("NetworkOf = %+v, want problem %s", got, tt.problem)
				}
				if p.Reason != tt.problem || !strings.Contains(p.Message, tt.contains) {
					t.Fatalf("problem = %v, want %s containing %q", p, tt.problem, tt.contains)
				}
				return
			}
			if p != nil {
				t.Fatalf("unexpected problem %v", p)
			}
			if got.Network.String() != tt.want || got.From != tt.from {
				t.Errorf("NetworkOf = %s from %q, want %s from %q", got.Network, got.From, tt.want, tt.from)
			}
			switch {
			case tt.note == "" && got.Note != nil:
				t.Errorf("unexpected note %v", got.Note)
			case tt.note != "" && (got.Note == nil || got.Note.Reason != tt.note):
				t.Errorf("note = %v, want %s", got.Note, tt.note)
			}
		})
	}
}

func TestNetworkMatches(t *testing.T) {
	t.Parallel()
	n := Network{Namespace: "default", Name: "vlan10"}
	for annotation, want := range map[string]bool{
		"vlan10": true, "default/vlan10": true, " vlan10 ": true,
		"": false, "vlan1": false, "other/vlan10": false, "default": false,
	} {
		if got := n.Matches(annotation); got != want {
			t.Errorf("%s.Matches(%q) = %v, want %v", n, annotation, got, want)
		}
	}
	bare := Network{Name: "vlan10"}
	if !bare.Matches("vlan10") || bare.Matches("default/vlan10") {
		t.Errorf("a bare network matches only its bare name")
	}
}

func TestLongValuesAreShortenedInMessages(t *testing.T) {
	t.Parallel()
	_, p := ParseNetworkName(strings.Repeat("x", 5000) + "/a/b")
	if p == nil {
		t.Fatal("no problem for a malformed networkName")
	}
	if len(p.Message) > 300 {
		t.Errorf("problem message of %d characters; want a short one", len(p.Message))
	}
}

func TestExplainShortensLongValues(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("h", 10000)
	p := Selection{}.Explain(false, long, Network{Name: "vlan10"})
	if p == nil || len(p.Message) > 300 {
		t.Errorf("Explain echoed a %d-character display name in full", len(long))
	}
}
