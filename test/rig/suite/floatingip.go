package suite

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
)

// StatusText is a FloatingIP's status in one line, for a failure message.
func StatusText(x *v1.FloatingIP) string {
	if x == nil {
		return "<none>"
	}
	var parts []string
	for _, c := range x.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return fmt.Sprintf("ip=%q range=%q %s", x.Status.IPAddress, x.Status.Range, strings.Join(parts, " "))
}

// Allocated tells whether the FloatingIP holds an address: Allocated, with the address in its
// status and its spec alike.
func Allocated(x *v1.FloatingIP) bool {
	return x != nil && v1.Allocated.IsTrue(x) && x.Status.IPAddress != "" && x.Spec.IPAddress == x.Status.IPAddress
}

// WaitFIP waits until the FloatingIP namespace/name holds an address and returns it.
func WaitFIP(t testing.TB, api kubefipcontrollers.Interface, namespace, name string, timeout time.Duration) *v1.FloatingIP {
	t.Helper()
	var x *v1.FloatingIP
	err := rig.Until(timeout, fmt.Sprintf("FloatingIP %s/%s holding an address", namespace, name), nil, func() (bool, error) {
		var err error
		x, err = api.FloatingIP().Get(namespace, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return Allocated(x), fmt.Errorf("status %s", StatusText(x))
	})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// FIPsIn lists the FloatingIPs of a namespace.
func FIPsIn(t testing.TB, api kubefipcontrollers.Interface, namespace string) []v1.FloatingIP {
	t.Helper()
	list, err := api.FloatingIP().List(namespace, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// HeldIn returns the addresses FloatingIPs hold in range rangeName, read from the
// FloatingIPAllocation objects: address → holder, as the range's status recorded them before those
// objects existed. Addresses retained for deleted clusters are not held: see RetainedIn.
func HeldIn(t testing.TB, api kubefipcontrollers.Interface, rangeName string) map[string]v1.Allocation {
	t.Helper()
	out := map[string]v1.Allocation{}
	for _, a := range allocationsOf(t, api, rangeName) {
		s, ok := v1.ParseAllocationName(a.Name)
		if !ok || a.Spec.Retained != nil {
			continue
		}
		out[s.Addr.String()] = v1.Allocation{Namespace: a.Spec.Owner.Namespace, Name: a.Spec.Owner.Name, UID: a.Spec.Owner.UID}
	}
	return out
}

// RetainedIn returns the addresses of range rangeName retained for deleted guest clusters:
// address → allocation.
func RetainedIn(t testing.TB, api kubefipcontrollers.Interface, rangeName string) map[string]v1.FloatingIPAllocation {
	t.Helper()
	out := map[string]v1.FloatingIPAllocation{}
	for _, a := range allocationsOf(t, api, rangeName) {
		if a.Spec.Retained != nil {
			out[a.Spec.Address] = a
		}
	}
	return out
}

// allocationsOf lists the FloatingIPAllocations of range rangeName.
func allocationsOf(t testing.TB, api kubefipcontrollers.Interface, rangeName string) []v1.FloatingIPAllocation {
	t.Helper()
	list, err := api.FloatingIPAllocation().List(metav1.ListOptions{LabelSelector: v1.LabelRange + "=" + v1.RangeLabelValue(rangeName)})
	if err != nil {
		t.Fatal(err)
	}
	var out []v1.FloatingIPAllocation
	for _, a := range list.Items {
		if a.Spec.Range == rangeName {
			out = append(out, a)
		}
	}
	return out
}
