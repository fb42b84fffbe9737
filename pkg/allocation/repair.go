package allocation

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
)

// RepairReport says what a repair pass changed.
type RepairReport struct {
	// Released are allocations whose FloatingIP no longer exists ("range/address ns/name").
	Released []string
	// Adopted are FloatingIPs holding an address their range did not record, now recorded.
	Adopted []string
}

// Repair makes the ranges' records agree with the FloatingIPs that exist. It reads both from the
// API server — the ranges first, so that any FloatingIP a recorded claim belongs to is in the list
// read after — and releases the allocations of FloatingIPs that are gone (deleted while no operator
// ran its finalizer), then records the addresses of FloatingIPs whose range does not know them
// (objects of the original operator, or a write lost between two steps), oldest object first, so
// that of two objects naming the same address the older keeps it and the later is flagged
// IPConflict by its controller. Every change goes through Claim and Release, guarded like any
// other write.
func (m *Manager) Repair(ctx context.Context, fips kubefipcontrollers.FloatingIPClient) (RepairReport, error) {
	var report RepairReport
	ranges, err := m.client.List(metav1.ListOptions{})
	if err != nil {
		return report, fmt.Errorf("listing FloatingIPRanges: %w", err)
	}
	list, err := fips.List("", metav1.ListOptions{})
	if err != nil {
		return report, fmt.Errorf("listing FloatingIPs: %w", err)
	}
	exists := map[string]bool{}
	for _, f := range list.Items {
		exists[string(f.UID)] = true
	}

	for _, r := range ranges.Items {
		gone := map[string]v1.Allocation{}
		for _, key := range sortedKeys(r.Status.Allocations) {
			if a := r.Status.Allocations[key]; !exists[string(a.UID)] {
				gone[string(a.UID)] = a
			}
		}
		for _, uid := range sortedKeys(gone) {
			a := gone[uid]
			// Every key of the owner goes, in whatever spelling, readable or not: nothing of a
			// FloatingIP that no longer exists stays behind.
			_, keys, err := m.release(ctx, r.Name, uid, nil)
			if err != nil {
				return report, err
			}
			for _, key := range keys {
				report.Released = append(report.Released, fmt.Sprintf("%s/%s %s/%s", r.Name, ipam.Clip(key), a.Namespace, a.Name))
			}
		}
	}

	items := list.Items
	sort.SliceStable(items, func(i, j int) bool {
		a, b := &items[i], &items[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	for i := range items {
		f := &items[i]
		rangeName := f.Annotations[v1.AnnotationFloatingIPRange]
		address := f.Spec.IPAddress
		if address == "" {
			address = f.Status.IPAddress
		}
		if f.DeletionTimestamp != nil || rangeName == "" || address == "" {
			continue
		}
		want, err := netip.ParseAddr(address)
		if err != nil || len(m.HeldBy(rangeName, string(f.UID))) > 0 {
			continue
		}
		// A refusal (taken, out of range, no such range) is the FloatingIP controller's to report.
		if addr, _, err := m.Claim(ctx, rangeName, ownerOfFloatingIP(f), want.Unmap()); err == nil {
			report.Adopted = append(report.Adopted, fmt.Sprintf("%s/%s %s/%s", rangeName, addr, f.Namespace, f.Name))
		}
	}
	return report, nil
}

// Log writes what the report says.
func (r RepairReport) Log() {
	for _, x := range r.Released {
		logrus.Infof("repair: released %s, whose FloatingIP no longer exists", x)
	}
	for _, x := range r.Adopted {
		logrus.Infof("repair: recorded %s, held by a FloatingIP its range did not record", x)
	}
}

// Table renders every range's record from the cache, one allocation a line, for traceIpamData.
func (m *Manager) Table() string {
	ranges, err := m.cache.List(labels.Everything())
	if err != nil {
		return ""
	}
	sort.Slice(ranges, func(i, j int) bool { return ranges[i].Name < ranges[j].Name })
	var b strings.Builder
	for _, r := range ranges {
		fmt.Fprintf(&b, "range %s %s: %d allocated\n", r.Name, r.Spec.IPRange, len(r.Status.Allocations))
		for _, key := range sortedKeys(r.Status.Allocations) {
			a := r.Status.Allocations[key]
			fmt.Fprintf(&b, "  %s %s/%s uid=%s\n", key, a.Namespace, a.Name, a.UID)
		}
	}
	return b.String()
}

func sortedKeys[T any](m map[string]T) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
