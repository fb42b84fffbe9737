package floatingip

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
)

// explain turns a failed claim into a condition reason and a message a person can act on. An empty
// reason means a passing failure (the API server, a conflict): the error is returned to retry with
// backoff. The FloatingIPs refused for a reason are woken by their range's changes, so they need
// no timer.
func explain(err error, rangeName string, want netip.Addr) (reason, msg string, retry error) {
	var taken *ipam.TakenError
	var notReady *allocation.NotReadyError
	var retained *allocation.RetainedError
	var limit *allocation.LimitError
	var notSelected *allocation.NotSelectedError
	switch {
	case errors.As(err, &limit):
		return v1.ReasonClusterLimitReached, fmt.Sprintf("the guest cluster's FloatingIPs in namespace %s hold %d addresses of FloatingIPRange %s, its spec.maxAddressesPerCluster; one is allocated here once one of them is released",
			limit.Namespace, limit.Limit, rangeName), nil
	case errors.As(err, &notSelected):
		return v1.ReasonClusterNotSelected, notSelected.Error() + "; the address is allocated once the cluster's labels or the selector change", nil
	case errors.As(err, &retained) && retained.WhileServed:
		by := "the Services of that guest may serve it (not read since it was given up)"
		if retained.ServedBy != "" {
			by = "its Services " + retained.ServedBy + " serve it"
		}
		return v1.ReasonIPRetained, fmt.Sprintf("%s is kept in FloatingIPRange %s for guest cluster %s/%s while %s, until %s if that guest cannot be read meanwhile; it is allocated here once released: delete those Services in that guest (or change their %s annotation), or delete FloatingIPAllocation %s to free it at once",
			want, rangeName, retained.Cluster.Namespace, retained.Cluster.Name, by, retained.Until.UTC().Format(time.RFC3339), kubevipconfig.LoadBalancerIPsAnnotation, retained.Allocation), nil
	case errors.As(err, &retained):
		return v1.ReasonIPRetained, fmt.Sprintf("%s is retained in FloatingIPRange %s for guest cluster %s/%s, deleted, until %s; it is allocated here once released, or at once if FloatingIPAllocation %s is deleted",
			want, rangeName, retained.Cluster.Namespace, retained.Cluster.Name, retained.Until.UTC().Format(time.RFC3339), retained.Allocation), nil
	case errors.Is(err, allocation.ErrRangeNotFound):
		return v1.ReasonRangeNotFound, fmt.Sprintf("FloatingIPRange %s does not exist; the address is allocated as soon as it does", rangeName), nil
	case errors.As(err, &notReady):
		return v1.ReasonRangeNotReady, fmt.Sprintf("FloatingIPRange %s cannot hand out addresses now (%s): %s", rangeName, notReady.Problem.Reason, notReady.Problem.Message), nil
	case errors.As(err, &taken):
		return v1.ReasonIPConflict, fmt.Sprintf("%s is held by FloatingIP %s/%s in FloatingIPRange %s; it is allocated here once released there",
			want, taken.Holder.Namespace, taken.Holder.Name, rangeName), nil
	case errors.Is(err, ipam.ErrExhausted):
		return v1.ReasonRangeExhausted, fmt.Sprintf("FloatingIPRange %s has no free address; one is allocated here as soon as another is released", rangeName), nil
	case errors.Is(err, ipam.ErrWithheld):
		return v1.ReasonClaimedOnNetwork, fmt.Sprintf("%s is handed out or used by the Harvester cluster on the network of FloatingIPRange %s; the range's Warning condition names what claims it", want, rangeName), nil
	case errors.Is(err, ipam.ErrExcluded):
		return v1.ReasonExcluded, fmt.Sprintf("%s is excluded from FloatingIPRange %s (spec.exclude)", want, rangeName), nil
	case errors.Is(err, ipam.ErrReserved):
		return v1.ReasonReserved, fmt.Sprintf("%s is the network, broadcast or subnet-router address of FloatingIPRange %s and is never handed out", want, rangeName), nil
	case errors.Is(err, ipam.ErrOutOfRange), errors.Is(err, ipam.ErrFamilyMismatch):
		return v1.ReasonOutOfRange, fmt.Sprintf("%s is not inside FloatingIPRange %s", want, rangeName), nil
	}
	return "", "", err
}
