package floatingip

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"strings"

	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	provcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/provisioning.cattle.io/v1"
	"github.com/kubefip/kube-fip-operator/pkg/harvester"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
)

// maxMoves bounds how many ranges one pass moves a FloatingIP through: each move is a write, and
// a range that filled between the choice and the claim sends the FloatingIP on to the next one.
const maxMoves = 3

// claimant is f as a claimant, with its provisioning cluster's labels, which ranges'
// clusterSelectors judge.
func (h *handler) claimant(f *v1.FloatingIP) allocation.Claimant {
	c := allocation.ClaimantOf(f)
	if c.Cluster.Name != "" && h.prov != nil {
		if pc, err := h.prov.Get(c.Cluster.Namespace, c.Cluster.Name); err == nil {
			c.Labels = pc.Labels
		}
	}
	return c
}

// guest reports whether f is a guest cluster's FloatingIP: in the namespace of a management
// cluster. Only those move between ranges; a FloatingIP a range admits by its allowedNamespaces
// stays with the range it names.
func (h *handler) guest(f *v1.FloatingIP) bool {
	if !strings.HasPrefix(f.Namespace, GuestNamespacePrefix) {
		return false
	}
	_, err := h.clusters.Get(f.Namespace)
	return err == nil
}

// want is where f's address may come from: the ranges of rangeName's address space (its Harvester
// cluster's VM network) of its address family. ok is false when rangeName is not known or names
// no Harvester cluster and network: such ranges, the original operator's, are pools of their own.
func (h *handler) want(rangeName string, c allocation.Claimant) (allocation.Want, bool) {
	r, err := h.ranges.Get(rangeName)
	if err != nil {
		return allocation.Want{}, false
	}
	space := v1.SpaceOf(r)
	if space.HarvesterClusterName == "" || space.HarvesterNetworkName == "" {
		return allocation.Want{}, false
	}
	return allocation.Want{Spaces: []v1.AddressSpace{space}, Family: harvester.FamilyOfCIDR(r.Spec.IPRange), Claimant: c}, true
}

// nextRange decides whether a guest cluster's FloatingIP that rangeName refused with err goes on to
// another range of its network, and to which:
//   - a static address outside rangeName: the first range in selection order that holds it and
//     selects the cluster;
//   - no static address (or discovery's proposal), nothing held, and rangeName full, at the
//     cluster's limit, not selecting the cluster or not Ready: the first range in selection order
//     with room for the cluster.
//
// It says why, for the Event of a move or, when there is no range to move to (ok false), for the
// refusal: the ranges passed over.
func (h *handler) nextRange(f *v1.FloatingIP, rangeName string, c allocation.Claimant, want netip.Addr, err error) (next, why string, ok bool) {
	if !h.guest(f) {
		return "", "", false
	}
	w, ok := h.want(rangeName, c)
	if !ok {
		return "", "", false
	}
	if want.IsValid() && !proposed(f, want) {
		if !errors.Is(err, ipam.ErrOutOfRange) && !errors.Is(err, ipam.ErrFamilyMismatch) {
			return "", "", false
		}
		w.Family = 0
		next, ok := h.alloc.Containing(w, want)
		return next, fmt.Sprintf("which holds its spec.ipaddress %s", want), ok && next != rangeName
	}
	if !movable(err) || h.holds(f) {
		return "", "", false
	}
	choice := h.alloc.Choose(w)
	if choice.Range == "" || choice.Range == rangeName {
		return "", choice.Why(), false
	}
	return choice.Range, "the next in selection order with room for the cluster: " + choice.Why(), true
}

// movable tells the refusals another range may cure.
func movable(err error) bool {
	var limit *allocation.LimitError
	var notSelected *allocation.NotSelectedError
	var notReady *allocation.NotReadyError
	return errors.Is(err, ipam.ErrExhausted) || errors.As(err, &limit) || errors.As(err, &notSelected) || errors.As(err, &notReady)
}

// holds reports whether f holds an address in the range its status names.
func (h *handler) holds(f *v1.FloatingIP) bool {
	return f.Status.Range != "" && len(h.alloc.HeldBy(f.Status.Range, string(f.UID))) > 0
}

// move points f's fiprange annotation at range to, and says why in a Normal Event. The update,
// guarded by f's resourceVersion, is what decides between two replicas that each chose a range:
// the loser meets a conflict and its next pass starts from the winner's choice.
func (h *handler) move(f *v1.FloatingIP, to, why string) (*v1.FloatingIP, error) {
	from := f.Annotations[v1.AnnotationFloatingIPRange]
	f = f.DeepCopy()
	f.Annotations[v1.AnnotationFloatingIPRange] = to
	f.Annotations[v1.AnnotationRangeSelection] = why
	updated, err := h.fips.Update(f)
	if err != nil {
		return nil, err
	}
	h.recorder.Event(updated, v1.EventType(v1.ReasonRangeChanged), v1.ReasonRangeChanged,
		fmt.Sprintf("moves from FloatingIPRange %s to %s, %s", from, to, why))
	return updated, nil
}

// watchProvisioningClusters judges again the waiting FloatingIPs of a guest namespace when a
// provisioning cluster comes to name it, or when the labels of the one that does change: a range's
// clusterSelector may admit them now. Informer events only, the old object against the new: a
// status heartbeat of the cluster judges nothing again, and neither does a run of the cluster's
// handlers that another controller asked for. Guest cluster discovery wakes a cluster whenever one
// of its FloatingIPs is handled; judging the waiting FloatingIPs again on every such run woke each
// of them again in turn, and a FloatingIP waiting for a range went round that circle without end.
func (h *handler) watchProvisioningClusters(clusters provcontrollers.ClusterController) error {
	_, err := clusters.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: h.judgeWaiting,
		UpdateFunc: func(old, obj interface{}) {
			if selectionInputsChanged(old, obj) {
				h.judgeWaiting(obj)
			}
		},
	})
	return err
}

// selectionInputsChanged says whether a provisioning cluster's update can change how ranges judge
// its FloatingIPs: its labels, or the guest namespace it names.
func selectionInputsChanged(old, obj interface{}) bool {
	a, okA := old.(*provv1.Cluster)
	b, okB := obj.(*provv1.Cluster)
	if !okA || !okB {
		return okB
	}
	return !maps.Equal(a.Labels, b.Labels) || a.Status.ClusterName != b.Status.ClusterName
}

// judgeWaiting queues the FloatingIPs of the cluster's guest namespace that hold no address.
func (h *handler) judgeWaiting(obj interface{}) {
	c, ok := obj.(*provv1.Cluster)
	if !ok || !strings.HasPrefix(c.Status.ClusterName, GuestNamespacePrefix) {
		return
	}
	fips, err := h.fips.Cache().List(c.Status.ClusterName, labels.Everything())
	if err != nil {
		return
	}
	for _, f := range fips {
		if cond, ok := v1.GetCondition(f.Status.Conditions, v1.Allocated); ok && cond.Status != corev1.ConditionTrue {
			h.fips.Enqueue(f.Namespace, f.Name)
		}
	}
}
