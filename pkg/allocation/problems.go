package allocation

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/harvester"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
	"github.com/kubefip/kube-fip-operator/pkg/problem"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// ErrRangeNotFound means the FloatingIPRange does not exist.
var ErrRangeNotFound = errors.New("FloatingIPRange not found")

// NotReadyError is returned for a claim on a range with a Problem.
type NotReadyError struct {
	Range   string
	Problem problem.Problem
}

func (e *NotReadyError) Error() string {
	return fmt.Sprintf("FloatingIPRange %s cannot hand out addresses (%s): %s", e.Range, e.Problem.Reason, e.Problem.Message)
}

// LimitError means a new address of Range would give the FloatingIPs of Namespace more than the range's
// spec.maxAddressesPerCluster.
type LimitError struct {
	Range     string
	Namespace string
	Limit     int32
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("the FloatingIPs of guest cluster namespace %s hold %d of FloatingIPRange %s's addresses, its maxAddressesPerCluster",
		e.Namespace, e.Limit, e.Range)
}

// NotSelectedError means Range's spec.clusterSelector does not admit the claimant's guest cluster, or
// the claimant belongs to no provisioning cluster (Cluster empty) that it could admit.
type NotSelectedError struct {
	Range   string
	Cluster v1.ClusterReference
}

func (e *NotSelectedError) Error() string {
	if e.Cluster.Name == "" {
		return fmt.Sprintf("FloatingIPRange %s has a clusterSelector, and the FloatingIP belongs to no Rancher provisioning cluster (no %s annotation) it could select",
			e.Range, v1.AnnotationProvisioningCluster)
	}
	return fmt.Sprintf("the clusterSelector of FloatingIPRange %s does not select guest cluster %s/%s", e.Range, e.Cluster.Namespace, e.Cluster.Name)
}

// RetainedError reports a request for an address retained for a guest cluster: a deleted one, or
// one whose Services may still serve it (WhileServed).
type RetainedError struct {
	Addr    netip.Addr
	Cluster v1.ClusterReference
	Until   time.Time
	// Allocation is the FloatingIPAllocation whose deletion releases the address at once.
	Allocation string
	// WhileServed: kept while the cluster's Services serve it; ServedBy names those that did at
	// the last read of the guest.
	WhileServed bool
	ServedBy    string
}

func (e *RetainedError) Error() string {
	if e.WhileServed {
		return fmt.Sprintf("%s is kept for guest cluster %s/%s while %s, until %s", e.Addr, e.Cluster.Namespace, e.Cluster.Name, e.servedBy(), e.Until.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("%s is retained for guest cluster %s/%s until %s", e.Addr, e.Cluster.Namespace, e.Cluster.Name, e.Until.UTC().Format(time.RFC3339))
}

// servedBy says what keeps an address kept while served.
func (e *RetainedError) servedBy() string {
	if e.ServedBy == "" {
		return "its Services may serve it (the guest has not been read since)"
	}
	return "its Services " + e.ServedBy + " serve it"
}

// Orphan is an allocation of a range that its spec does not cover (after a shrink or a new
// exclude), or a legacy record entry naming no address. It is kept, never dropped, and flagged.
type Orphan struct {
	Addr       string
	Allocation v1.Allocation
	Why        string
}

// overlap returns the problem of r overlapping an older range among those whose pools share an
// address with r's (rangeIndex.overlapping), or nil: the oldest of them is named. It is decided on
// every use rather than kept, since it changes when another range changes.
func overlap(r *v1.FloatingIPRange, overlapping []*v1.FloatingIPRange) *problem.Problem {
	var oldest *v1.FloatingIPRange
	for _, o := range overlapping {
		if o.Name == r.Name || o.DeletionTimestamp != nil || !younger(r, o) {
			continue
		}
		if oldest == nil || younger(oldest, o) {
			oldest = o
		}
	}
	if oldest == nil {
		return nil
	}
	return problem.New(v1.ReasonOverlap,
		"%s overlaps FloatingIPRange %s (%s), which is older: change one of them so that no address is in both", r.Spec.IPRange, oldest.Name, oldest.Spec.IPRange)
}

// younger reports whether a was created after b (by name when at the same second), so that of two
// overlapping ranges the newer one is the one flagged.
func younger(a, b *v1.FloatingIPRange) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	return a.Name > b.Name
}

// HoldersNamed is how many addresses a message names before it says how many more there are.
const HoldersNamed = 10

// DescribeHolders names the first HoldersNamed addresses of holders with their holders (and why,
// for an orphan), and how many more there are: "10.0.0.1 (ns/a), 10.0.0.2 (ns/b: excluded), and 3
// more".
func DescribeHolders(holders []Orphan) string {
	parts := make([]string, 0, min(len(holders), HoldersNamed)+1)
	for _, o := range holders[:min(len(holders), HoldersNamed)] {
		holder := redact.Shorten(o.Allocation.Namespace, redact.MaxValue) + "/" + redact.Shorten(o.Allocation.Name, redact.MaxValue)
		if o.Why != "" {
			holder += ": " + o.Why
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", o.Addr, holder))
	}
	if more := len(holders) - len(parts); more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", more))
	}
	return strings.Join(parts, ", ")
}

// warnings returns what is accepted in a range's spec but deserves a person's look.
func warnings(r *v1.FloatingIPRange, pool *ipam.Pool) []problem.Problem {
	if pool == nil {
		return nil
	}
	var out []problem.Problem
	if pfx := pool.Prefix(); pfx.Bits() == 0 {
		out = append(out, problem.Problem{Reason: v1.ReasonWholeAddressSpace, Message: fmt.Sprintf(
			"spec.iprange %s is the whole %s address space: any address, public ones included, may be handed out; a range is normally the subnet of one VM network",
			pfx, harvester.FamilyOfAddr(pfx.Addr()))})
	}
	if pool.Capacity().Sign() == 0 {
		out = append(out, problem.Problem{Reason: v1.ReasonNoCapacity, Message: fmt.Sprintf(
			"spec.iprange %s with its %d excludes leaves no address to hand out; FloatingIPs of this range stay pending", pool.Prefix(), len(r.Spec.Exclude))})
	}
	return out
}
