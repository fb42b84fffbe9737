package floatingip

import (
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/conditions"
)

// SetReady derives Ready from Allocated and, once guest operations report, GuestConfigured: a
// FloatingIP is ready when it holds its address and its guest cluster uses it. Both the allocation
// and the guest controller call it, so Ready never flips between their views.
func SetReady(status *v1.FloatingIPStatus) {
	alloc, ok := conditions.Get(status.Conditions, v1.Allocated)
	if !ok {
		return
	}
	if alloc.Status != corev1.ConditionTrue {
		conditions.False(&status.Conditions, v1.Ready, alloc.Reason, alloc.Message)
		return
	}
	guest, ok := conditions.Get(status.Conditions, v1.GuestConfigured)
	switch {
	case !ok:
		conditions.True(&status.Conditions, v1.Ready, alloc.Reason, alloc.Message)
	case guest.Status == corev1.ConditionTrue:
		conditions.True(&status.Conditions, v1.Ready, guest.Reason, alloc.Message+"; "+guest.Message)
	default:
		conditions.False(&status.Conditions, v1.Ready, guest.Reason, guest.Message)
	}
}
