package e2e

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
)

// keptNamespace holds the FloatingIP that plays a second guest asking for the kept address.
const keptNamespace = "e2e-kept"

// TestMovedAddressKeptWhileServed: on real nodes, a FloatingIP moved to another range while a
// Service holds its old address keeps the old address out of the pool until the Service lets it
// go. The echo Service keeps the old address, and the real kube-vip keeps announcing it to the
// client after the move; the address's allocation stays, kept for the guest cluster while served,
// and a second FloatingIP asking for it is refused (IPRetained, naming the Service). Once the
// Service is deleted in the guest, the address goes back to its range and the second FloatingIP
// gets it.
func TestMovedAddressKeptWhileServed(t *testing.T) {
	s := current(t)
	ctx := context.Background()
	old := s.guestFIP(t)
	s.echoServed(t, old, "before the move")
	s.waitServed(t, time.Minute, v1.ReasonServed)

	guests, err := s.fips.FloatingIPRange().Get("e2e-guests", metav1.GetOptions{})
	rig.Must(t, err)
	block := s.freeBlock(t, netip.MustParsePrefix(guests.Spec.IPRange))
	moved := &v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "e2e-moved", Annotations: map[string]string{
		v1.AnnotationHarvesterClusterName: guests.Annotations[v1.AnnotationHarvesterClusterName],
		v1.AnnotationHarvesterNetworkName: guests.Annotations[v1.AnnotationHarvesterNetworkName]}},
		Spec: v1.FloatingIPRangeSpec{IPRange: block.String()}}
	if _, err := s.fips.FloatingIPRange().Create(moved); err != nil {
		t.Fatal(err)
	}
	_, err = s.mgmtKube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: keptNamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	s.allowNamespace(t, "e2e-guests", keptNamespace, true)
	fipName := s.guestFIPName(t)
	t.Cleanup(func() {
		// The suite's world again: the echo Service gone, the guest's FloatingIP back in
		// e2e-guests, the second FloatingIP, its namespace's admission and the range gone.
		s.dropEcho(t)
		if err := s.fips.FloatingIP().Delete(keptNamespace, "second", nil); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
		s.editGuestFIP(t, fipName, "e2e-guests")
		s.guestFIPIn(t, "e2e-guests")
		s.allowNamespace(t, "e2e-guests", keptNamespace, false)
		if err := s.fips.FloatingIPRange().Delete(moved.Name, nil); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})

	// The FloatingIP moves to the new range; the echo Service keeps the old address.
	s.editGuestFIP(t, fipName, moved.Name)
	now := s.guestFIPIn(t, moved.Name)
	if !block.Contains(now) {
		t.Fatalf("the moved FloatingIP holds %s, not of %s", now, block)
	}
	s.guestEvent(t, time.Minute, v1.ReasonAddressKept, old.String(), "default/echo")
	s.servedThrough(t, old, "the old address after the move, as the echo Service keeps it")
	var alloc *v1.FloatingIPAllocation
	rig.Eventually(t, time.Minute, "the old address's allocation kept while served", func() bool {
		list, err := s.fips.FloatingIPAllocation().List(metav1.ListOptions{LabelSelector: v1.LabelAddress + "=" + v1.AllocationAddressText(old)})
		if err != nil || len(list.Items) != 1 {
			return false
		}
		alloc = &list.Items[0]
		return alloc.Spec.Retained != nil && alloc.Spec.Retained.WhileServed && alloc.Spec.Retained.ServedBy == "default/echo"
	})

	// A second FloatingIP asking for the old address does not get it: the admission webhook
	// refuses it, naming the cluster, the Service and the allocation that keep it.
	second := &v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Name: "second", Namespace: keptNamespace,
		Annotations: map[string]string{v1.AnnotationFloatingIPRange: "e2e-guests"}},
		Spec: v1.FloatingIPSpec{IPAddress: old.String()}}
	_, err = s.fips.FloatingIP().Create(second)
	if err == nil || !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) && !strings.Contains(err.Error(), "denied") {
		t.Fatalf("a second FloatingIP asking for the kept %s: %v; want it refused", old, err)
	}
	for _, want := range []string{"kept for cluster fleet-default/" + guestName, "default/echo", alloc.Name} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not name %q", err, want)
		}
	}
	t.Logf("refused: %v", err)

	// The Service lets it go: the address is released, and the second FloatingIP gets it.
	s.dropEcho(t)
	s.guestEvent(t, time.Minute, v1.ReasonKeptAddressReleased, old.String())
	if _, err := s.fips.FloatingIP().Create(second); err != nil {
		t.Fatalf("the second FloatingIP asking for the released %s: %v", old, err)
	}
	x := s.waitFIP(t, keptNamespace, "second", time.Minute, "the released address", func(x *v1.FloatingIP) bool {
		return v1.Allocated.IsTrue(x) && x.Status.IPAddress == old.String()
	})
	t.Logf("the second FloatingIP holds %s once the echo Service is gone", x.Status.IPAddress)
}

// guestFIPName is the name of the guest's one FloatingIP.
func (s *suite) guestFIPName(t *testing.T) string {
	t.Helper()
	list, err := s.fips.FloatingIP().List(guestID, metav1.ListOptions{})
	rig.Must(t, err)
	if len(list.Items) != 1 {
		t.Fatalf("the guest has %d FloatingIPs; want 1", len(list.Items))
	}
	return list.Items[0].Name
}

// editGuestFIP moves the guest's FloatingIP name to range rangeName, to be given its lowest free
// address, as a person does.
func (s *suite) editGuestFIP(t *testing.T, name, rangeName string) {
	t.Helper()
	rig.Eventually(t, 30*time.Second, "FloatingIP "+name+" moved to "+rangeName, func() bool {
		x, err := s.fips.FloatingIP().Get(guestID, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		x.Annotations[v1.AnnotationFloatingIPRange], x.Spec.IPAddress = rangeName, ""
		_, err = s.fips.FloatingIP().Update(x)
		return err == nil
	})
}

// allowNamespace lets namespace take addresses of range name, or no longer.
func (s *suite) allowNamespace(t *testing.T, name, namespace string, allow bool) {
	t.Helper()
	rig.Eventually(t, 30*time.Second, "range "+name+" edited", func() bool {
		r, err := s.fips.FloatingIPRange().Get(name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		r.Spec.AllowedNamespaces = slices.DeleteFunc(r.Spec.AllowedNamespaces, func(n string) bool { return n == namespace })
		if allow {
			r.Spec.AllowedNamespaces = append(r.Spec.AllowedNamespaces, namespace)
		}
		_, err = s.fips.FloatingIPRange().Update(r)
		return err == nil
	})
}

// waitFIP waits for FloatingIP namespace/name to satisfy cond.
func (s *suite) waitFIP(t *testing.T, namespace, name string, timeout time.Duration, what string, cond func(*v1.FloatingIP) bool) *v1.FloatingIP {
	t.Helper()
	var x *v1.FloatingIP
	rig.Eventually(t, timeout, "FloatingIP "+namespace+"/"+name+": "+what, func() bool {
		got, err := s.fips.FloatingIP().Get(namespace, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		x = got
		return cond(x)
	})
	return x
}
