package integration

import (
	"net/netip"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kubefipv1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// newAllocation is the FloatingIPAllocation the operator writes when owner claims addr in rangeName.
func newAllocation(addr netip.Addr, rangeName string, owner *kubefipv1.FloatingIP) *kubefipv1.FloatingIPAllocation {
	family := "IPv4"
	if addr.Is6() {
		family = "IPv6"
	}
	return &kubefipv1.FloatingIPAllocation{
		ObjectMeta: metav1.ObjectMeta{
			Name: kubefipv1.AllocationName(kubefipv1.AddressSpace{}, addr),
			Labels: map[string]string{
				kubefipv1.LabelAddress:        kubefipv1.AllocationAddressText(addr),
				kubefipv1.LabelRange:          kubefipv1.RangeLabelValue(rangeName),
				kubefipv1.LabelIPFamily:       family,
				kubefipv1.LabelOwnerNamespace: owner.Namespace,
			},
		},
		Spec: kubefipv1.FloatingIPAllocationSpec{
			Address: addr.String(),
			Range:   rangeName,
			Owner:   kubefipv1.FloatingIPReference{Namespace: owner.Namespace, Name: owner.Name, UID: owner.UID},
		},
	}
}

// schemaOwner is a FloatingIP reference for schema tests: the API server does not check that the
// owner exists, only the operator does.
func schemaOwner(name string) *kubefipv1.FloatingIP {
	return &kubefipv1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Namespace: "c-m-schema04", Name: name,
		UID: types.UID("0b6c2a8e-5d3f-4f7a-9a7e-" + strings.Repeat("0", 12-len(name)) + name)}}
}

// TestSchemaAllocationAcceptsItsAddress: an allocation named after its address, as
// kubefipv1.AllocationName writes it, is taken for IPv4 and IPv6; its labels may change, its spec
// may not — releasing an address is deleting the object.
func TestSchemaAllocationAcceptsItsAddress(t *testing.T) {
	shard := shards.Take(t)
	c := shard.Kubefip.FloatingIPAllocation()
	for _, text := range []string{"10.214.0.5", "fd00:214::5"} {
		addr := netip.MustParseAddr(text)
		a, err := c.Create(newAllocation(addr, "schema-alloc", schemaOwner("a1")))
		if err != nil {
			t.Fatalf("creating the allocation of %s: %v", addr, err)
		}
		t.Cleanup(func() { _ = c.Delete(a.Name, &metav1.DeleteOptions{}) })
		if want := kubefipv1.AllocationName(kubefipv1.AddressSpace{}, addr); a.Name != want || a.Spec.Address != text {
			t.Errorf("created %s with spec.address %s, want %s with %s", a.Name, a.Spec.Address, want, text)
		}

		// A second claim of the address is a create of the same name: the API server refuses it.
		if _, err := c.Create(newAllocation(addr, "schema-alloc-other", schemaOwner("a2"))); !apierrors.IsAlreadyExists(err) {
			t.Errorf("a second allocation of %s: error %v, want AlreadyExists", addr, err)
		}

		a.Labels["example.com/note"] = "labels-stay-mutable"
		if a, err = c.Update(a); err != nil {
			t.Fatalf("updating the labels of %s: %v", addr, err)
		}
		for field, tc := range map[string]struct {
			change func(*kubefipv1.FloatingIPAllocationSpec)
			want   string
		}{
			"range":   {func(s *kubefipv1.FloatingIPAllocationSpec) { s.Range = "schema-alloc-other" }, "are immutable"},
			"address": {func(s *kubefipv1.FloatingIPAllocationSpec) { s.Address = "10.214.0.6" }, "metadata.name must be the address"},
			"space": {func(s *kubefipv1.FloatingIPAllocationSpec) {
				s.Space = kubefipv1.AddressSpace{HarvesterClusterName: "elsewhere"}
			}, "are immutable"},
			"owner.uid": {func(s *kubefipv1.FloatingIPAllocationSpec) { s.Owner.UID = schemaOwner("a2").UID }, "spec.owner changes only when a retained address is taken back"},
		} {
			if field == "address" && addr.Is6() {
				continue
			}
			moved := a.DeepCopy()
			tc.change(&moved.Spec)
			_, err := c.Update(moved)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("changing spec.%s of %s: error %v, want Invalid saying %q", field, a.Name, err, tc.want)
			}
		}
		// Retained for a deleted cluster, the holder stays; taken back, the holder changes.
		kept := a.DeepCopy()
		kept.Spec.Retained = &kubefipv1.Retention{Cluster: kubefipv1.ClusterReference{Namespace: "fleet-default", Name: "demo"}, Until: metav1.Now()}
		if a, err = c.Update(kept); err != nil {
			t.Fatalf("retaining %s: %v", addr, err)
		}
		back := a.DeepCopy()
		back.Spec.Retained, back.Spec.Owner = nil, kubefipv1.FloatingIPReference{Namespace: "c-m-schema05", Name: "a3", UID: schemaOwner("a3").UID}
		if a, err = c.Update(back); err != nil {
			t.Fatalf("taking back %s: %v", addr, err)
		}
		got, err := c.Get(a.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec != a.Spec {
			t.Errorf("spec of %s is now %+v, want %+v", a.Name, got.Spec, a.Spec)
		}
	}
}
