package integration

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// TestGuestKeepsAnAddressItServes: a FloatingIP moved to another range while a Service of its
// guest holds its old address (the test writes the Service's status as kube-vip does once it has
// bound the address) keeps that address out of the pool: its allocation is the same object, kept
// for the cluster while served, with an AddressKept Event and the Service shown in the
// FloatingIP's status.keptAddresses; another FloatingIP asking for it is refused with IPRetained,
// told for which cluster, by which Service and how to free it. Once the Service is deleted in the
// guest, the next guest pass releases the address (KeptAddressReleased) and the other FloatingIP
// gets it. The same holds for the address of the cluster's last FloatingIP, deleted while served:
// the guest is asked about it with no FloatingIP left, and its range's deletion waits for the
// Service to go, not for the hold.
func TestGuestKeepsAnAddressItServes(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "kube-fip-kept")
	proxy := f.shard.StartClusterProxy(t)
	gc := rancherCluster(t, proxy, "kept", "c-m-kept0001", nil, f.shard.StartGuest(t, "kept"))
	f.extraNamespace(gc.id)
	const old, moved, fip = "10.194.0.5", "10.195.0.1", "kept-kubevip"
	f.operatorConfig(map[string]string{"operateGuestClusterInterval": "1", "kubevipGuestInstall": "disabled", "servedAddressHold": "1h"})
	f.operator()
	f.createRange("kept-old", "10.194.0.0/28")
	f.createRange("kept-new", "10.195.0.0/28")
	f.createFIPIn(gc.id, fip, "kept-old", old)
	gc.waitCIDR(t, old+"/32", 30*time.Second)
	f.servedReason(gc, fip, v1.ReasonIdle, 30*time.Second)

	// serve has the guest's Service ask for addr, and kube-vip bind it.
	serve := func(addr string) {
		t.Helper()
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "ingress", Namespace: "default", Labels: map[string]string{"implementation": "kube-vip"},
				Annotations: map[string]string{kubevipconfig.LoadBalancerIPsAnnotation: addr}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "https", Port: 443}}},
		}
		created, err := gc.direct.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: addr}}
		if _, err := gc.direct.CoreV1().Services("default").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.servedReason(gc, fip, v1.ReasonServed, 30*time.Second)
	}
	serve(old)

	// The FloatingIP moves to another range: the old address stays out of the pool.
	f.editFIPIn(gc.id, fip, func(x *v1.FloatingIP) {
		x.Annotations[v1.AnnotationFloatingIPRange] = "kept-new"
		x.Spec.IPAddress = ""
	})
	gc.waitCIDR(t, moved+"/32", 30*time.Second)
	space := v1.AddressSpace{HarvesterClusterName: "harvester-" + f.ns, HarvesterNetworkName: "vlan10"}
	allocation := v1.AllocationName(space, netip.MustParseAddr(old))
	cluster := v1.ClusterReference{Namespace: "fleet-default", Name: "kept"}
	a := f.waitAllocation(allocation, 30*time.Second, "kept while served", func(a *v1.FloatingIPAllocation) bool {
		return a != nil && a.Spec.Retained != nil && a.Spec.Retained.ServedBy == "default/ingress"
	})
	if !a.Spec.Retained.WhileServed || a.Spec.Retained.Cluster != cluster || time.Until(a.Spec.Retained.Until.Time) < 50*time.Minute {
		t.Errorf("the old address's retention: %+v; want while served for %v, for about an hour", a.Spec.Retained, cluster)
	}
	if !eventSoon(t, f.shard, gc.id, fip, corev1.EventTypeNormal, v1.ReasonAddressKept, old) {
		t.Errorf("no AddressKept Event naming %s", old)
	}
	x := f.waitFIPIn(gc.id, fip, 30*time.Second, "the kept address shown", func(x *v1.FloatingIP) bool {
		return len(x.Status.KeptAddresses) == 1 && x.Status.KeptAddresses[0].ServedBy == "default/ingress"
	})
	if k := x.Status.KeptAddresses[0]; k.Address != old || k.Range != "kept-old" || k.Allocation != allocation || !k.WhileServed {
		t.Errorf("status.keptAddresses[0] = %+v", k)
	}
	if x.Status.IPAddress != moved {
		t.Errorf("the FloatingIP holds %s; want %s", x.Status.IPAddress, moved)
	}

	// Another FloatingIP asking for the old address is told who keeps it, why, and the way out.
	f.createFIP("stranger", "kept-old", old)
	stranger := f.waitFIP("stranger", 30*time.Second, "IPRetained", reasonIs(v1.ReasonIPRetained))
	msg := message(stranger.Status.Conditions, v1.Allocated)
	for _, want := range []string{"kept", "fleet-default/kept", "default/ingress", allocation} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal %q does not name %q", msg, want)
		}
	}
	f.waitRange("kept-old", 30*time.Second, "one retained address counted", func(r *v1.FloatingIPRange) bool { return r.Status.Retained == 1 })

	// The Service lets the address go: the next pass releases it, and the other FloatingIP gets it.
	if err := gc.direct.CoreV1().Services("default").Delete(ctx, "ingress", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rig.Eventually(t, 30*time.Second, "a KeptAddressReleased Event", func() bool {
		return f.shard.HasEvent(t, gc.id, fip, corev1.EventTypeNormal, v1.ReasonKeptAddressReleased, old)
	})
	got := f.waitFIP("stranger", 30*time.Second, "the released address", suite.Allocated)
	if got.Status.IPAddress != old {
		t.Errorf("the other FloatingIP holds %s; want %s", got.Status.IPAddress, old)
	}
	f.waitFIPIn(gc.id, fip, 30*time.Second, "no kept address shown", func(x *v1.FloatingIP) bool { return len(x.Status.KeptAddresses) == 0 })

	// The cluster's last FloatingIP is deleted while a Service holds its address: the address is
	// kept, and its range, deleted, waits for it. The guest is still asked about it, with no
	// FloatingIP left: once the Service goes, it is released, with the Event on its range, and the
	// range's deletion completes, long before the hour's hold is over.
	serve(moved)
	if err := f.api.FloatingIP().Delete(gc.id, fip, nil); err != nil {
		t.Fatal(err)
	}
	last := v1.AllocationName(space, netip.MustParseAddr(moved))
	f.waitAllocation(last, 30*time.Second, "kept while served, with no FloatingIP left", func(a *v1.FloatingIPAllocation) bool {
		return a != nil && a.Spec.Retained != nil && a.Spec.Retained.WhileServed
	})
	if err := f.api.FloatingIPRange().Delete("kept-new", nil); err != nil {
		t.Fatal(err)
	}
	f.waitRange("kept-new", 30*time.Second, "its deletion blocked by the kept address", func(r *v1.FloatingIPRange) bool {
		return r != nil && rangeReason(v1.ReasonDeletionBlocked)(r)
	})
	if err := gc.direct.CoreV1().Services("default").Delete(ctx, "ingress", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitRange("kept-new", 30*time.Second, "gone", func(r *v1.FloatingIPRange) bool { return r == nil })
	if !f.shard.HasEvent(t, "", "kept-new", corev1.EventTypeNormal, v1.ReasonKeptAddressReleased, moved) {
		t.Errorf("no KeptAddressReleased Event naming %s on range kept-new", moved)
	}
}
