package floatingip

import (
	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
	"github.com/kubefip/kube-fip-operator/pkg/status"
)

// fail shows err, which explain does not know, on f as Ready=False and Stalled (and Allocated=False when f holds no address
// yet), with a Warning Event when that is news. A conflict or a vanished object is the ordinary race of a
// controller reading its cache and is only retried; the status write is best effort, since the
// error itself is returned for a retry anyway.
func (h *handler) fail(f *v1.FloatingIP, err error) {
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return
	}
	reason := v1.ReasonAllocationFailed
	msg := "allocation failed and is retried: " + redact.Shorten(err.Error(), redact.MaxValue)
	if !conditionIs(f.Status.Conditions, v1.Ready, reason, msg) {
		h.recorder.Event(f, v1.EventType(reason), reason, msg)
	}
	if _, werr := status.MarkFloatingIPFailed(h.fips, f, reason, msg); werr != nil {
		logrus.Debugf("FloatingIP %s/%s: showing %s: %v", f.Namespace, f.Name, reason, werr)
	}
}
