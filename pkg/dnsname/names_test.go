package dnsname

import (
	"slices"
	"strings"
	"testing"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// TestNames: what a range's spec.dns gives a guest cluster, and the names it cannot give.
func TestNames(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 64)
	for _, tc := range []struct {
		name    string
		dns     v1.RangeDNS
		cluster string
		want    []string
		err     string
	}{
		{"the default: the cluster's name in the zone", v1.RangeDNS{Zone: "guests.example.com"}, "demo", []string{"demo.guests.example.com"}, ""},
		{"with the wildcard", v1.RangeDNS{Zone: "guests.example.com", Wildcard: true}, "demo", []string{"demo.guests.example.com", "*.demo.guests.example.com"}, ""},
		{"a name of its own", v1.RangeDNS{Zone: "example.com", Name: "ingress-{cluster}.lab"}, "demo", []string{"ingress-demo.lab.example.com"}, ""},
		{"a FloatingIP of no guest cluster", v1.RangeDNS{Zone: "example.com"}, "", nil, "names no guest cluster"},
		{"an uppercase cluster name", v1.RangeDNS{Zone: "example.com"}, "Demo", nil, "lowercase"},
		{"a cluster name with a dot makes no new label", v1.RangeDNS{Zone: "example.com"}, "a..b", nil, "empty label"},
		{"a label too long", v1.RangeDNS{Zone: "example.com"}, long, nil, "longer than 63"},
		{"a hyphen at the end", v1.RangeDNS{Zone: "example.com", Name: "{cluster}-"}, "demo", nil, "hyphen"},
		{"a name too long", v1.RangeDNS{Zone: strings.Repeat("abcdefghi.", 25) + "com"}, "demo", nil, "longer than 253"},
		{"no zone", v1.RangeDNS{}, "demo", nil, "zone is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Names(tc.dns, tc.cluster)
			switch {
			case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
				t.Errorf("Names = %q, %v; want %q", got, err, tc.want)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("Names = %q, %v; want an error saying %q", got, err, tc.err)
			}
		})
	}
}
