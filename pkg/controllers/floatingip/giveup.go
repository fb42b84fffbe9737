package floatingip

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// giveUp lets go of f's addresses in range name (all of them when addrs is empty). An address the
// running guest cluster of f may still serve — a Service there asking for it through kube-vip's
// annotation, or holding it in its status — is not released but kept for the cluster while
// served (allocation.Manager.Keep): released at once, a second guest would get it while kube-vip
// still announces it here. The guest pass releases it once it reads that no Service asks for or
// holds it, and servedAddressHold releases it if the guest cannot be read until then. The rest is
// released.
func (h *handler) giveUp(f *v1.FloatingIP, name string, addrs ...netip.Addr) error {
	if cluster, ok := h.guestClusterOf(f); ok {
		var keep []netip.Addr
		var why []string
		for _, a := range h.alloc.HeldBy(name, string(f.UID)) {
			if len(addrs) > 0 && !slices.Contains(addrs, a) {
				continue
			}
			if reason, serves := mayServe(f, a); serves {
				keep, why = append(keep, a), append(why, reason)
			}
		}
		if len(keep) > 0 {
			hold := h.store.Get().ServedAddressHold
			until := time.Now().Add(hold)
			kept, err := h.alloc.Keep(h.ctx, name, string(f.UID), cluster, until, keep...)
			for _, a := range kept {
				msg := fmt.Sprintf("%s in FloatingIPRange %s stays out of the pool for guest cluster %s/%s, as %s: it is released once no Service of the guest asks for or holds it, or at %s if the guest cannot be read until then",
					a, name, cluster.Namespace, cluster.Name, why[slices.Index(keep, a)], until.UTC().Format(time.RFC3339))
				h.recorder.Event(f, v1.EventType(v1.ReasonAddressKept), v1.ReasonAddressKept, msg)
			}
			if err != nil {
				return err
			}
		}
	}
	_, err := h.release(f, name, addrs...)
	return err
}

// guestClusterOf is the provisioning cluster whose guest f's addresses are written to, when its
// addresses may be kept for it: f names a guest cluster, the cluster is there, and
// servedAddressHold is not 0. A cluster that is gone has no guest to serve them; the FloatingIP's
// removal retains them for its return instead (addressRetention).
func (h *handler) guestClusterOf(f *v1.FloatingIP) (v1.ClusterReference, bool) {
	cluster, ok := v1.ProvisioningClusterOf(f)
	if !ok {
		name := f.Annotations[v1.AnnotationClusterName]
		if name == "" || h.fleet == "" {
			return v1.ClusterReference{}, false
		}
		cluster = v1.ClusterReference{Namespace: h.fleet, Name: name}
	}
	if h.store.Get().ServedAddressHold <= 0 || h.clusterGone(cluster, f.Namespace) {
		return v1.ClusterReference{}, false
	}
	return cluster, true
}

// mayServe says whether f's guest may serve addr, which f gives up, and why, as f's status shows
// the last guest pass: not when the pass never wrote addr to the guest (it is not among the
// guest's addresses), nor when the pass read the guest and no Service asked for it (Served Idle,
// the guest configured, addr the address judged); else it may.
func mayServe(f *v1.FloatingIP, addr netip.Addr) (why string, serves bool) {
	if !slices.Contains(guestAddresses(f.Status.GuestAddresses), addr) {
		return "", false
	}
	judged := f.Status.IPAddress == addr.String()
	served, _ := v1.GetCondition(f.Status.Conditions, v1.Served)
	if judged && served.Reason == v1.ReasonIdle && v1.GuestConfigured.IsTrue(f) {
		return "", false
	}
	if judged && f.Status.ServedBy != "" {
		return "its Services " + f.Status.ServedBy + " held it at the last look", true
	}
	return "the guest was given it and its Services may ask for or hold it", true
}

// guestAddresses reads status.guestAddresses ("10.0.0.5,fd00::5 (ns)"): what the last guest pass
// wrote to the guest.
func guestAddresses(text string) []netip.Addr {
	var out []netip.Addr
	for _, part := range strings.Split(text, ",") {
		field, _, _ := strings.Cut(strings.TrimSpace(part), " ")
		if a, err := netip.ParseAddr(field); err == nil {
			out = append(out, a.Unmap())
		}
	}
	return out
}
