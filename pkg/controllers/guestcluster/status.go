package guestcluster

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
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
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		status := f.Status.DeepCopy()
		status.GuestState = p.state
		status.GuestInputs = p.inputs
		if p.written != "" {
			status.GuestAddresses = p.written
		}
		changed := v1.SetCondition(status, v1.GuestConfigured, p.guest.ok, p.guest.reason, p.guest.message)
		if p.kubevip != nil {
			v1.SetCondition(status, v1.KubevipInstalled, p.kubevip.ok, p.kubevip.reason, p.kubevip.message)
		}
		v1.SetReady(status)
		if changed && !p.guest.ok && p.guest.reason != v1.ReasonNotAllocated {
			c.Recorder.Event(f, v1.EventType(p.guest.reason), p.guest.reason, fmt.Sprintf("guest cluster %s: %s", p.cluster, p.guest.message))
		}
		if equality.Semantic.DeepEqual(&f.Status, status) {
			return nil
		}
		updated := f.DeepCopy()
		updated.Status = *status
		_, err := c.FloatingIPs.UpdateStatus(updated)
		if apierrors.IsConflict(err) {
			fresh, gerr := c.FloatingIPs.Get(f.Namespace, f.Name, metav1.GetOptions{})
			if gerr != nil {
				return gerr
			}
			f = fresh
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}
