package guestcluster

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/status"
)

// record writes the pass's outcome into the FloatingIP's status, with an Event when the guest
// condition turns bad or changes its reason: Normal while the guest is on its way (v1.Progress),
// Warning when a person must act. Every message is redacted here, whatever built
// it: errors from the guest, Helm and HTTP quote URLs and values as they were given.
func (c *controller) record(p *pass) error {
	f := p.fip
	p.guest.message = p.redact(p.guest.message)
	if p.kubevip != nil {
		p.kubevip.message = p.redact(p.kubevip.message)
	}
	if p.guest.reason == v1.ReasonNotAllocated {
		if _, shown := v1.GetCondition(f.Status.Conditions, v1.GuestConfigured); !shown {
			// A new FloatingIP's own Allocated condition says why nothing is written yet; a
			// first guest status would only race the allocation's status write.
			return nil
		}
	}
	if !p.guest.ok && p.guest.reason != v1.ReasonNotAllocated &&
		v1.SetCondition(f.Status.DeepCopy(), v1.GuestConfigured, p.guest.ok, p.guest.reason, p.guest.message) {
		c.Recorder.Event(f, v1.EventType(p.guest.reason), p.guest.reason, fmt.Sprintf("guest cluster %s: %s", p.cluster, p.guest.message))
	}
	if sv := p.served; sv != nil {
		sv.message = p.redact(sv.message)
		was, _ := v1.GetCondition(f.Status.Conditions, v1.Served)
		if was.Reason != sv.reason && sv.reason != v1.ReasonServePending && (sv.reason != v1.ReasonIdle || was.Reason != "") {
			c.Recorder.Event(f, v1.EventType(sv.reason), sv.reason, fmt.Sprintf("guest cluster %s: %s", p.cluster, sv.message))
		}
	}
	kept := c.keptShown(p)
	// The guest's fields only: the allocation's are the FloatingIP controller's, and a conflict
	// with its write is settled by applying these again to the newer object.
	_, err := status.UpdateFloatingIP(c.FloatingIPs, f, func(s *v1.FloatingIPStatus) {
		s.KeptAddresses = kept
		s.GuestState = p.state
		s.GuestInputs = p.inputs
		if p.written != "" {
			s.GuestAddresses = p.written
		}
		if p.releasesChanged {
			s.KubevipReleases = p.releases
		}
		v1.SetCondition(s, v1.GuestConfigured, p.guest.ok, p.guest.reason, p.guest.message)
		if p.kubevip != nil {
			v1.SetCondition(s, v1.KubevipInstalled, p.kubevip.ok, p.kubevip.reason, p.kubevip.message)
		}
		if sv := p.served; sv != nil {
			s.ServedBy, s.ServePendingSince = sv.by, sv.pendingSince
			v1.SetCondition(s, v1.Served, sv.ok, sv.reason, sv.message)
		}
		if in := p.ingress; in != nil {
			v1.SetCondition(s, v1.IngressServed, in.ok, in.reason, p.redact(in.message))
		} else if p.state == v1.GuestStateConfigured {
			v1.RemoveCondition(s, v1.IngressServed)
		}
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
