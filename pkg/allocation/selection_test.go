package allocation

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/harvester"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
)

// vlan10 is the space of siteRange's ranges on harvester1.
var vlan10 = []v1.AddressSpace{{HarvesterClusterName: "harvester1", HarvesterNetworkName: "vlan10"}}

// guestOf is the claimant FloatingIP n of provisioning cluster fleet-default/<cluster>, labelled
// labels, in the cluster's namespace c-m-<cluster>.
func guestOf(cluster, n string, labels map[string]string) Claimant {
	return Claimant{
		Owner:   ipam.Owner{Namespace: "c-m-" + cluster, Name: n, UID: "uid-" + cluster + "-" + n},
		Cluster: v1.ClusterReference{Namespace: "fleet-default", Name: cluster},
		Labels:  labels,
	}
}

// sizedRange is a siteRange on harvester1 with exactly n addresses to hand out.
func sizedRange(name string, third, n int) *v1.FloatingIPRange {
	r := siteRange(name, fmt.Sprintf("10.%d.0.0/24", third), "harvester1", time.Now().Add(-time.Hour))
	r.Spec.Exclude = []string{fmt.Sprintf("10.%d.0.%d-10.%d.0.254", third, n+1, third)}
	return r
}

func TestSelectionOrder(t *testing.T) {
	t.Parallel()
	a, b, c, d := sizedRange("a", 1, 4), sizedRange("b", 2, 4), sizedRange("c", 3, 4), sizedRange("d", 4, 4)
	c.Spec.Priority = 10
	a.Spec.Priority = -1
	m := benchManager([]*v1.FloatingIPRange{a, b, c, d})
	var got []string
	order, _ := m.ordered(Want{Spaces: vlan10})
	for _, o := range order.ranges {
		got = append(got, o.r.Name)
	}
	// c (10) first, then b and d (0) by name, a (-1) last.
	if want := []string{"c", "b", "d", "a"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("selection order %v, want %v", got, want)
	}
	// A change of priority reorders; the index sorts the space again.
	b2 := b.DeepCopy()
	b2.Spec.Priority = 20
	b2.Generation++
	m.rangeSeen(b2)
	got = got[:0]
	order, _ = m.ordered(Want{Spaces: vlan10})
	for _, o := range order.ranges {
		got = append(got, o.r.Name)
	}
	if want := []string{"b", "c", "d", "a"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after b's priority 20: %v, want %v", got, want)
	}
}

func TestChooseOverflowsInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	small, big := sizedRange("a-small", 1, 2), sizedRange("b-big", 2, 100)
	m := benchManager([]*v1.FloatingIPRange{small, big})
	var got []string
	for i := 0; i < 4; i++ {
		c := guestOf(fmt.Sprintf("g%d", i), "kubevip", nil)
		ch := m.Choose(Want{Spaces: vlan10, Claimant: c})
		if _, _, err := m.Claim(ctx, ch.Range, c, netip.Addr{}, false); err != nil {
			t.Fatalf("claim %d in %s: %v", i, ch.Range, err)
		}
		got = append(got, ch.Range)
		if i == 3 && (len(ch.Passed) != 1 || ch.Passed[0] != (Passed{Range: "a-small", Reason: v1.ReasonRangeExhausted})) {
			t.Errorf("passed %v, want a-small exhausted", ch.Passed)
		}
	}
	if want := []string{"a-small", "a-small", "b-big", "b-big"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("ranges chosen %v, want %v", got, want)
	}
	if msg := Why([]Passed{{"a-small", v1.ReasonRangeExhausted}}); msg != "a-small has no free address" {
		t.Errorf("Why = %q", msg)
	}
	// Everything full: no range, and First is where the FloatingIP waits.
	full := benchManager([]*v1.FloatingIPRange{sizedRange("a", 1, 1)})
	c := guestOf("x", "kubevip", nil)
	if _, _, err := full.Claim(ctx, "a", c, netip.Addr{}, false); err != nil {
		t.Fatal(err)
	}
	ch := full.Choose(Want{Spaces: vlan10, Claimant: guestOf("y", "kubevip", nil)})
	if ch.Range != "" || ch.First != "a" {
		t.Errorf("all full: %+v, want no range and First a", ch)
	}
}

func TestClusterSelector(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	prod, shared := sizedRange("a-prod", 1, 10), sizedRange("b-shared", 2, 10)
	prod.Spec.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	m := benchManager([]*v1.FloatingIPRange{prod, shared})
	prodCluster := guestOf("p", "kubevip", map[string]string{"env": "prod"})
	devCluster := guestOf("d", "kubevip", map[string]string{"env": "dev"})
	if ch := m.Choose(Want{Spaces: vlan10, Claimant: prodCluster}); ch.Range != "a-prod" {
		t.Errorf("prod cluster chose %q, want a-prod", ch.Range)
	}
	ch := m.Choose(Want{Spaces: vlan10, Claimant: devCluster})
	if ch.Range != "b-shared" || len(ch.Passed) != 1 || ch.Passed[0].Reason != v1.ReasonClusterNotSelected {
		t.Errorf("dev cluster: %+v, want b-shared after a-prod not selecting it", ch)
	}
	// A claim the selector refuses says so; one of a FloatingIP of no cluster too.
	var notSelected *NotSelectedError
	if _, _, err := m.Claim(ctx, "a-prod", devCluster, netip.Addr{}, false); !errors.As(err, &notSelected) {
		t.Fatalf("dev claim in a-prod: %v, want NotSelectedError", err)
	}
	if _, _, err := m.Claim(ctx, "a-prod", who("hand"), netip.Addr{}, false); !errors.As(err, &notSelected) || notSelected.Cluster.Name != "" {
		t.Fatalf("claim of no cluster in a-prod: %v, want NotSelectedError without a cluster", err)
	}
	// Held addresses stay held when the selector stops admitting the cluster.
	addr, _, err := m.Claim(ctx, "a-prod", prodCluster, netip.Addr{}, false)
	if err != nil {
		t.Fatal(err)
	}
	prod2 := prod.DeepCopy()
	prod2.Spec.ClusterSelector.MatchLabels["env"] = "staging"
	m.rangeSeen(prod2)
	if _, err := m.deps.Ranges.Update(prod2); err != nil {
		t.Fatal(err)
	}
	again, _, err := m.Claim(ctx, "a-prod", prodCluster, netip.Addr{}, false)
	if err != nil || again != addr {
		t.Fatalf("after the selector changed, the holder's claim gave %s, %v; want %s kept", again, err, addr)
	}
	if _, _, err := m.Claim(ctx, "a-prod", guestOf("p", "second", map[string]string{"env": "prod"}), netip.Addr{}, false); !errors.As(err, &notSelected) {
		t.Fatalf("a new claim of the cluster the selector no longer admits: %v, want NotSelectedError", err)
	}
	// An invalid selector keeps the range from handing out anything, with InvalidRange.
	bad := sizedRange("c-bad", 3, 10)
	bad.Spec.ClusterSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Near"}}}
	m2 := benchManager([]*v1.FloatingIPRange{bad})
	if sum := m2.Summarize(bad); sum.Problem == nil || sum.Problem.Reason != v1.ReasonInvalidRange {
		t.Errorf("invalid selector: problem %v, want InvalidRange", sum.Problem)
	}
}

func TestClusterLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	capped, other := sizedRange("a", 1, 10), sizedRange("b", 2, 10)
	capped.Spec.MaxAddressesPerCluster = 2
	m := benchManager([]*v1.FloatingIPRange{capped, other})
	for i := 0; i < 2; i++ {
		if _, _, err := m.Claim(ctx, "a", guestOf("g", fmt.Sprint("f", i), nil), netip.Addr{}, false); err != nil {
			t.Fatal(err)
		}
	}
	var limit *LimitError
	if _, _, err := m.Claim(ctx, "a", guestOf("g", "f2", nil), netip.Addr{}, false); !errors.As(err, &limit) || limit.Limit != 2 || limit.Namespace != "c-m-g" {
		t.Fatalf("third claim of one cluster: %v, want LimitError of 2 for c-m-g", err)
	}
	ch := m.Choose(Want{Spaces: vlan10, Claimant: guestOf("g", "f2", nil)})
	if ch.Range != "b" || ch.Passed[0].Reason != v1.ReasonClusterLimitReached {
		t.Errorf("choice at the limit: %+v, want b after a at the limit", ch)
	}
	// Another cluster is not counted against it.
	if _, _, err := m.Claim(ctx, "a", guestOf("h", "f0", nil), netip.Addr{}, false); err != nil {
		t.Fatalf("another cluster's claim: %v", err)
	}
}

// TestClusterLimitUnderConcurrentClaims: workers claiming for FloatingIPs of one cluster at once
// never pass the limit in one process.
func TestClusterLimitUnderConcurrentClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := sizedRange("a", 1, 200)
	r.Spec.MaxAddressesPerCluster = 3
	m := benchManager([]*v1.FloatingIPRange{r})
	var wg sync.WaitGroup
	var mu sync.Mutex
	held := 0
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := m.Claim(ctx, "a", guestOf("g", fmt.Sprint("f", i), nil), netip.Addr{}, false); err == nil {
				mu.Lock()
				held++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if held != 3 {
		t.Fatalf("%d claims of one cluster succeeded, want its limit of 3", held)
	}
}

func TestContaining(t *testing.T) {
	a, b := sizedRange("a", 1, 1), sizedRange("b", 2, 10)
	m := benchManager([]*v1.FloatingIPRange{a, b})
	w := Want{Spaces: vlan10, Claimant: guestOf("y", "kubevip", nil)}
	if got, ok := m.Containing(w, netip.MustParseAddr("10.2.0.5")); !ok || got != "b" {
		t.Errorf("Containing 10.2.0.5 = %q, %v; want b", got, ok)
	}
	if _, ok := m.Containing(w, netip.MustParseAddr("10.9.0.5")); ok {
		t.Error("an address of no range was found in one")
	}
	// A family asks for ranges of that family only.
	six := siteRange("c6", "fd00:10::/120", "harvester1", time.Now().Add(-time.Hour))
	m6 := benchManager([]*v1.FloatingIPRange{a, b, six})
	if ch := m6.Choose(Want{Spaces: vlan10, Family: harvester.IPv6, Claimant: w.Claimant}); ch.Range != "c6" {
		t.Errorf("IPv6 choice %q, want c6", ch.Range)
	}
}

// TestChooseSkipsFullRangesUntilOneFrees: ranges found full are skipped by the next selection,
// and looked at again once an address of the space is freed, so that a released address in an
// earlier range is taken again first.
func TestChooseSkipsFullRangesUntilOneFrees(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var ranges []*v1.FloatingIPRange
	for i := 0; i < 5; i++ {
		ranges = append(ranges, sizedRange(fmt.Sprintf("r%d", i), i+1, 1))
	}
	m := benchManager(ranges)
	for _, r := range ranges {
		m.Summarize(r) // as the range controller does at start
	}
	var claimants []Claimant
	for i := 0; i < 4; i++ {
		c := guestOf(fmt.Sprintf("g%d", i), "kubevip", nil)
		ch := m.Choose(Want{Spaces: vlan10, Claimant: c})
		if ch.Range != fmt.Sprintf("r%d", i) {
			t.Fatalf("claim %d chose %q, want r%d", i, ch.Range, i)
		}
		if _, _, err := m.Claim(ctx, ch.Range, c, netip.Addr{}, false); err != nil {
			t.Fatal(err)
		}
		claimants = append(claimants, c)
	}
	ch := m.Choose(Want{Spaces: vlan10, Claimant: guestOf("x", "kubevip", nil)})
	if ch.Range != "r4" || ch.Skipped == 0 {
		t.Fatalf("fifth choice %+v, want r4 after skipping the full ranges", ch)
	}
	if why := ch.Why(); why != fmt.Sprintf("the %d ranges from r0 on have no free address", ch.Skipped)+tail(ch.Passed) {
		t.Errorf("Why = %q", why)
	}
	// r1 frees its address: the next selection takes it, not r4.
	if _, err := m.Release(ctx, "r1", claimants[1].UID); err != nil {
		t.Fatal(err)
	}
	if ch := m.Choose(Want{Spaces: vlan10, Claimant: guestOf("y", "kubevip", nil)}); ch.Range != "r1" {
		t.Fatalf("after r1 freed an address, chose %+v, want r1", ch)
	}
}

func tail(passed []Passed) string {
	if len(passed) == 0 {
		return ""
	}
	return "; " + Why(passed)
}

// spaceRanges are n ranges of one network (harvester1/vlan10), each a /24 at 10.a.b.0 with size
// addresses to hand out, all eligible for every guest cluster.
func spaceRanges(n, size int) []*v1.FloatingIPRange {
	created := time.Now().Add(-time.Hour)
	out := make([]*v1.FloatingIPRange, 0, n)
	for i := 0; i < n; i++ {
		base := netip.AddrFrom4([4]byte{10, byte(i / 256), byte(i % 256), 0})
		r := siteRange(fmt.Sprintf("r%04d", i), netip.PrefixFrom(base, 24).String(), "harvester1", created)
		if size < 254 {
			first := base.As4()
			first[3] = byte(size + 1)
			r.Spec.Exclude = []string{netip.AddrFrom4(first).String() + "-" + netip.AddrFrom4([4]byte{10, byte(i / 256), byte(i % 256), 254}).String()}
		}
		out = append(out, r)
	}
	return out
}

// BenchmarkSelectAndClaim gives 1,000 guest clusters an address each from one network with 1, 100
// and 1,000 ranges eligible for every cluster: each claim chooses its range (Choose) and claims in
// it, and the ranges fill in selection order, the claims overflowing from each full range to the
// next. It prints the mean cost of a selection and claim with each, and the ratios to 1 range.
func BenchmarkSelectAndClaim(b *testing.B) {
	const claims = 1000
	cases := []struct {
		name   string
		ranges []*v1.FloatingIPRange
	}{
		{"1-range", spaceRanges(1, 254)}, // 254 addresses: the last claims overflow nowhere
		{"100-ranges", spaceRanges(100, 11)},
		{"1000-ranges", spaceRanges(1000, 2)},
	}
	// One range of 254 cannot take 1,000 claims: it gets a /22 of 1,022 addresses instead.
	cases[0].ranges[0].Spec.IPRange = "10.0.0.0/22"
	cases[0].ranges[0].Spec.Exclude = nil
	perClaim := make([]float64, len(cases))
	for i, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			perClaim[i] = claimCost(b, tc.ranges, claims, func(m *Manager, iter, c int) error {
				who := guestOf(fmt.Sprintf("g%d-%d", iter, c), "kubevip", nil)
				ch := m.Choose(Want{Spaces: vlan10, Claimant: who})
				if ch.Range == "" {
					return fmt.Errorf("claim %d: no range has room: %s", c, ch.Why())
				}
				if _, _, err := m.Claim(b.Context(), ch.Range, who, netip.Addr{}, false); err != nil {
					return fmt.Errorf("claim %d in %s: %w", c, ch.Range, err)
				}
				return nil
			})
		})
	}
	if perClaim[0] > 0 && perClaim[1] > 0 && perClaim[2] > 0 {
		fmt.Printf("BenchmarkSelectAndClaim: mean selection and claim %.1f µs with 1 eligible range, %.1f µs with 100 (%.2f×), %.1f µs with 1,000 (%.2f×)\n",
			perClaim[0], perClaim[1], perClaim[1]/perClaim[0], perClaim[2], perClaim[2]/perClaim[0])
	}
}

// TestChooseFamily: a dual-stack cluster's second address comes from the ranges of its family on
// its network, whichever of the network's two names (bare, namespace/name) they carry; none of
// another network, Harvester cluster or family, and no range naming no network. With no range of
// the family the choice is empty and passes nothing over: discovery's NoRangeForFamily.
func TestChooseFamily(t *testing.T) {
	t.Parallel()
	old := time.Now().Add(-time.Hour)
	on := func(name, cidr, cluster, network string) *v1.FloatingIPRange {
		r := siteRange(name, cidr, cluster, old)
		r.Annotations[v1.AnnotationHarvesterNetworkName] = network
		return r
	}
	m := benchManager([]*v1.FloatingIPRange{
		on("v4-b", "10.1.0.0/24", "harvester1", "vlan10"),
		on("v4-a", "10.2.0.0/24", "harvester1", "default/vlan10"),
		on("v6", "fd00:1::/120", " harvester1 ", "vlan10"),
		on("a-v6-other-network", "fd00:2::/120", "harvester1", "vlan20"),
		on("a-v6-other-cluster", "fd00:3::/120", "harvester2", "vlan10"),
		on("a-v6-unannotated", "fd00:4::/120", "harvester3", ""),
		on("a-v4-harvester3", "10.3.0.0/24", "harvester3", "vlan10"),
	})
	both := func(cluster string) []v1.AddressSpace {
		return []v1.AddressSpace{{HarvesterClusterName: cluster, HarvesterNetworkName: "vlan10"},
			{HarvesterClusterName: cluster, HarvesterNetworkName: "default/vlan10"}}
	}
	who := guestOf("g", "kubevip", nil)
	for _, tc := range []struct {
		name   string
		spaces []v1.AddressSpace
		family harvester.Family
		want   string
	}{
		{"IPv4 on either name of the network: first by name", both("harvester1"), harvester.IPv4, "v4-a"},
		{"IPv6 on the network", both("harvester1"), harvester.IPv6, "v6"},
		{"IPv6 on another network", []v1.AddressSpace{{HarvesterClusterName: "harvester1", HarvesterNetworkName: "vlan20"}}, harvester.IPv6, "a-v6-other-network"},
		{"no IPv4 range on that network", []v1.AddressSpace{{HarvesterClusterName: "harvester1", HarvesterNetworkName: "vlan20"}}, harvester.IPv4, ""},
		{"no fallback to a range naming no network", both("harvester3"), harvester.IPv6, ""},
		{"the other Harvester cluster", both("harvester2"), harvester.IPv6, "a-v6-other-cluster"},
	} {
		ch := m.Choose(Want{Spaces: tc.spaces, Family: tc.family, Claimant: who})
		if ch.Range != tc.want || (tc.want == "" && (ch.First != "" || len(ch.Passed) > 0)) {
			t.Errorf("%s: Choose = %+v, want %q", tc.name, ch, tc.want)
		}
	}
}

// TestClusterSelectorReading: the one reading of spec.clusterSelector, as selection, the range's list
// view and its NoClusterSelected check use it.
func TestClusterSelectorReading(t *testing.T) {
	t.Parallel()
	prod := map[string]string{"env": "prod"}
	for _, tc := range []struct {
		name     string
		spec     *metav1.LabelSelector
		text     string
		selects  bool
		admitsNo bool // admits a FloatingIP of no provisioning cluster
	}{
		{"none", nil, "", false, true},
		{"empty", &metav1.LabelSelector{}, "<every cluster>", true, false},
		{"matching", &metav1.LabelSelector{MatchLabels: prod}, "env=prod", true, false},
		{"other", &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}, "env=dev", false, false},
		{"invalid", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Bogus"}}}, "<invalid>", false, false},
	} {
		r := rangeOf("r", "10.1.0.0/24", time.Now(), nil)
		r.Spec.ClusterSelector = tc.spec
		sel := ClusterSelectorOf(r)
		if sel.String() != tc.text || sel.Selects(prod) != tc.selects || sel.Set() != (tc.spec != nil) || (sel.Err() != nil) != (tc.name == "invalid") {
			t.Errorf("%s: String %q, Selects %v, Set %v, Err %v", tc.name, sel, sel.Selects(prod), sel.Set(), sel.Err())
		}
		if sel.admits(Claimant{Labels: prod}) != tc.admitsNo || sel.admits(guestOf("x", "kubevip", prod)) != (tc.spec == nil || tc.selects) {
			t.Errorf("%s: admits differs", tc.name)
		}
	}
}

// TestChooseSkipsNoOtherFamily: the ranges a selection of one family skipped as of no use to it
// (another family) never become where a FloatingIP of that family waits: with no IPv6 range a
// second IPv6 selection is as empty as the first, and a full IPv6 range behind an IPv4 one is where
// it waits.
func TestChooseSkipsNoOtherFamily(t *testing.T) {
	t.Parallel()
	old := time.Now().Add(-time.Hour)
	who := guestOf("g", "kubevip", nil)
	v4only := benchManager([]*v1.FloatingIPRange{siteRange("a4", "10.1.0.0/24", "harvester1", old)})
	for i := 0; i < 2; i++ {
		if ch := v4only.Choose(Want{Spaces: vlan10, Family: harvester.IPv6, Claimant: who}); ch.Range != "" || ch.First != "" || len(ch.Passed) > 0 || ch.Skipped > 0 {
			t.Fatalf("IPv6 selection %d among IPv4 ranges = %+v, want none", i+1, ch)
		}
	}
	m := benchManager([]*v1.FloatingIPRange{siteRange("a4", "10.1.0.0/24", "harvester1", old), siteRange("b6", "fd00:10::1/128", "harvester1", old)})
	if _, _, err := m.Claim(context.Background(), "b6", guestOf("h", "kubevip", nil), netip.Addr{}, false); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if ch := m.Choose(Want{Spaces: vlan10, Family: harvester.IPv6, Claimant: who}); ch.Range != "" || ch.First != "b6" {
			t.Fatalf("IPv6 selection %d with b6 full = %+v, want to wait in b6", i+1, ch)
		}
	}
}
