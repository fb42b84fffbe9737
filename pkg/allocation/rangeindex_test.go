package allocation

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
	"github.com/kubefip/kube-fip-operator/test/rig/fakes"
)

func names(rs []*v1.FloatingIPRange) string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// TestRangeIndexFindsExactlyTheOverlaps: a range meets the ranges holding its CIDR and those
// inside it, in either family, and no other; excludes count (a range whose only shared addresses
// another excludes does not overlap it); a changed or removed range is found as it is now.
func TestRangeIndexFindsExactlyTheOverlaps(t *testing.T) {
	now := time.Now()
	x := newRangeIndex()
	for _, r := range []*v1.FloatingIPRange{
		rangeOf("wide", "10.0.0.0/16", now, nil),
		rangeOf("inner", "10.0.1.0/24", now, nil),
		rangeOf("innermost", "10.0.1.16/28", now, nil),
		rangeOf("beside", "10.1.0.0/24", now, nil),
		rangeOf("excluded", "10.0.2.0/30", now, nil, "10.0.2.1"),
		rangeOf("v6", "fd00::/64", now, nil),
		rangeOf("v6-inner", "fd00::/120", now, nil),
		rangeOf("invalid", "10.0.0.0/33", now, nil),
	} {
		x.set(r)
	}
	find := func(name, cidr string, exclude ...string) string {
		r := rangeOf(name, cidr, now, nil, exclude...)
		p, err := ipam.NewPool(cidr, exclude)
		if err != nil {
			t.Fatal(err)
		}
		return names(x.overlapping(r, p))
	}
	for _, tc := range []struct{ name, cidr, want string }{
		{"inner", "10.0.1.0/24", "innermost,wide"},
		{"wide", "10.0.0.0/16", "excluded,inner,innermost"},
		{"innermost", "10.0.1.16/28", "inner,wide"},
		{"beside", "10.1.0.0/24", ""},
		{"new", "10.0.0.0/8", "beside,excluded,inner,innermost,wide"},
		{"v6-inner", "fd00::/120", "v6"},
		{"elsewhere", "192.168.0.0/24", ""},
	} {
		if got := find(tc.name, tc.cidr); got != tc.want {
			t.Errorf("%s (%s) overlaps %q; want %q", tc.name, tc.cidr, got, tc.want)
		}
	}
	// 10.0.2.0/30 hands out .2 only (.1 is excluded): a /31 of .2-.3 that excludes .2 shares none.
	if got := find("edge", "10.0.2.2/31", "10.0.2.2"); strings.Contains(got, "excluded") {
		t.Errorf("a range sharing only excluded addresses overlaps %q", got)
	}
	// A range moved elsewhere, and one removed, are found as they are now.
	x.set(rangeOf("inner", "172.16.0.0/24", now, nil))
	x.remove("innermost")
	if got := find("wide", "10.0.0.0/16"); got != "excluded" {
		t.Errorf("after the moves, wide overlaps %q; want excluded", got)
	}
	if got := find("probe", "172.16.0.128/25"); got != "inner" {
		t.Errorf("the moved range is not found at its new CIDR: %q", got)
	}
	x.mu.Lock()
	n := len(x.entries)
	x.mu.Unlock()
	if n != 7 {
		t.Errorf("%d ranges indexed, want 7", n)
	}
}

// TestOverlapNamesTheOldest: of several older ranges a younger one overlaps, the oldest is named.
func TestOverlapNamesTheOldest(t *testing.T) {
	now := time.Now()
	young := rangeOf("young", "10.0.0.0/24", now, nil)
	p := overlap(young, []*v1.FloatingIPRange{
		rangeOf("older", "10.0.0.0/16", now.Add(-time.Hour), nil),
		rangeOf("oldest", "10.0.0.0/8", now.Add(-2*time.Hour), nil),
		rangeOf("younger", "10.0.0.0/25", now.Add(time.Hour), nil),
	})
	if p == nil || p.Reason != v1.ReasonOverlap || !strings.Contains(p.Message, "FloatingIPRange oldest") {
		t.Errorf("overlap = %v; want Overlap naming the oldest", p)
	}
	if p := overlap(rangeOf("first", "10.0.0.0/8", now.Add(-3*time.Hour), nil), []*v1.FloatingIPRange{young}); p != nil {
		t.Errorf("the oldest range is flagged: %v", p)
	}
}

// benchManager is a Manager over ranges, fed as the range informer would feed it.
func benchManager(ranges []*v1.FloatingIPRange) *Manager {
	m := NewManager(Deps{Ranges: fakes.NewRanges(ranges...), Allocations: fakes.NewAllocations()}, Options{OrphanGracePeriod: time.Hour})
	for _, r := range ranges {
		m.rangeSeen(r)
	}
	m.rangesFed = true
	return m
}

// siteRanges are sites×networks ranges, each network of each site its own address space, and
// every site using the same private addresses as the others, as sites often do: network n is a
// /24 at 10.0.8n.0, except network 0, a /21 with 1,024 excluded addresses.
func siteRanges(sites, networks int) []*v1.FloatingIPRange {
	created := time.Now().Add(-time.Hour)
	var out []*v1.FloatingIPRange
	for s := 0; s < sites; s++ {
		for n := 0; n < networks; n++ {
			name := fmt.Sprintf("site%03d-net%d", s, n)
			base := netip.AddrFrom4([4]byte{10, 0, byte(n * 8), 0})
			r := rangeOf(name, netip.PrefixFrom(base, 24).String(), created, nil)
			r.Annotations = map[string]string{
				v1.AnnotationHarvesterClusterName: fmt.Sprintf("site%03d", s),
				v1.AnnotationHarvesterNetworkName: fmt.Sprintf("default/vlan%d", n),
			}
			if n == 0 {
				r.Spec.IPRange = netip.PrefixFrom(base, 21).String()
				a := base.Next()
				for i := 0; i < 1024; i++ {
					r.Spec.Exclude = append(r.Spec.Exclude, a.String())
					a = a.Next().Next()
				}
			}
			r.UID = types.UID("uid-" + name)
			out = append(out, r)
		}
	}
	return out
}

// claimCost runs b.N rounds on a fresh benchManager over ranges, each range summarized once as
// the range controller does at start; each round makes claims calls of claim. It reports and
// returns the mean cost of one call in µs.
func claimCost(b *testing.B, ranges []*v1.FloatingIPRange, claims int, claim func(m *Manager, iter, c int) error) float64 {
	var total time.Duration
	for iter := 0; iter < b.N; iter++ {
		b.StopTimer()
		m := benchManager(ranges)
		for _, r := range ranges {
			m.Summarize(r)
		}
		b.StartTimer()
		start := time.Now()
		for c := 0; c < claims; c++ {
			if err := claim(m, iter, c); err != nil {
				b.Fatal(err)
			}
		}
		total += time.Since(start)
	}
	perClaim := float64(total.Microseconds()) / float64(b.N*claims)
	b.ReportMetric(perClaim, "µs/claim")
	return perClaim
}

// BenchmarkClaim claims 1,000 addresses: all from one range, then one from each of 1,000 ranges
// (100 sites × 10 networks, the same addresses at every site). It prints the mean cost of a claim
// in each and their ratio: a claim decides overlaps through the range index of its space, so the
// second stays near the first.
func BenchmarkClaim(b *testing.B) {
	const claims = 1000
	one := siteRanges(1, 1) // a /21 with 1,024 excludes: 1,022 addresses to hand out
	many := siteRanges(100, 10)
	var perClaim [2]float64
	for i, tc := range []struct {
		name   string
		ranges []*v1.FloatingIPRange
	}{{"1-range", one}, {"1000-ranges", many}} {
		b.Run(tc.name, func(b *testing.B) {
			perClaim[i] = claimCost(b, tc.ranges, claims, func(m *Manager, iter, c int) error {
				r := tc.ranges[c%len(tc.ranges)]
				owner := Claimant{Owner: ipam.Owner{Namespace: "c-m-bench", Name: fmt.Sprintf("f%d", c), UID: fmt.Sprintf("uid-%d-%d", iter, c)}}
				if _, _, err := m.Claim(b.Context(), r.Name, owner, netip.Addr{}, false); err != nil {
					return fmt.Errorf("claim %d in %s: %w", c, r.Name, err)
				}
				return nil
			})
		})
	}
	if perClaim[0] > 0 && perClaim[1] > 0 {
		fmt.Printf("BenchmarkClaim: mean claim %.1f µs with 1 range, %.1f µs with 1,000 ranges: %.2f×\n",
			perClaim[0], perClaim[1], perClaim[1]/perClaim[0])
	}
}
