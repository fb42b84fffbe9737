package floatingip

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
)

// ReadyMetricHandlerName names the handler that mirrors a FloatingIP's Ready, Served and
// KubevipInstalled conditions in kubefipoperator_floatingip_ready, kubefipoperator_floatingip_served
// and kubefipoperator_floatingip_kubevip_installed; it puts no finalizer on.
const ReadyMetricHandlerName = HandlerName + "-ready-metric"

// OnFloatingIPReadyMetric sets kubefipoperator_floatingip_ready from the FloatingIP's Ready
// condition, whichever controller decided it (the allocation here, the guest operations in the
// guestcluster controller): every status write brings the FloatingIP here again. A FloatingIP
// without a Ready condition yet is not Ready. The series goes when the FloatingIP is being
// deleted or is gone.
func (h *handler) OnFloatingIPReadyMetric(key string, f *v1.FloatingIP) (*v1.FloatingIP, error) {
	if f == nil {
		namespace, name, ok := strings.Cut(key, "/")
		if !ok {
			namespace, name = "", key
		}
		h.metrics.DeleteFloatingIP(namespace, name)
		return nil, nil
	}
	if f.DeletionTimestamp != nil {
		h.metrics.DeleteFloatingIP(f.Namespace, f.Name)
		return f, nil
	}
	ready, _ := v1.GetCondition(f.Status.Conditions, v1.Ready)
	h.metrics.SetFloatingIP(f.Namespace, f.Name, guestClusterName(f), ready.Status == corev1.ConditionTrue, servedValue(f), kubevipValue(f))
	return f, nil
}

// servedValue is kubefipoperator_floatingip_served of f, from its Served condition.
func servedValue(f *v1.FloatingIP) float64 {
	served, ok := v1.GetCondition(f.Status.Conditions, v1.Served)
	switch {
	case !ok:
		return metrics.ServedUnknown
	case served.Reason == v1.ReasonServed:
		return metrics.ServedYes
	case served.Reason == v1.ReasonIdle:
		return metrics.ServedIdle
	}
	return metrics.ServedNo
}

// kubevipValue is kubefipoperator_floatingip_kubevip_installed of f, from its KubevipInstalled
// condition: a guest whose configuration does not want the operator's kube-vip (NotWanted) is no
// refusal, and is told apart from one where the install was refused or failed.
func kubevipValue(f *v1.FloatingIP) float64 {
	installed, ok := v1.GetCondition(f.Status.Conditions, v1.KubevipInstalled)
	switch {
	case !ok:
		return metrics.KubevipInstalledUnknown
	case installed.Status == corev1.ConditionTrue:
		return metrics.KubevipInstalledYes
	case installed.Reason == v1.ReasonNotWanted:
		return metrics.KubevipNotWanted
	}
	return metrics.KubevipInstalledNo
}

// guestClusterName is the guest cluster a FloatingIP is for: as recorded in its status, else as
// its annotation says.
func guestClusterName(f *v1.FloatingIP) string {
	if f.Status.ClusterName != "" {
		return f.Status.ClusterName
	}
	return f.Annotations[v1.AnnotationClusterName]
}
