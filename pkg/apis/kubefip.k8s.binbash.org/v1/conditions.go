package v1

import (
	"time"

	"github.com/rancher/wrangler/v2/pkg/condition"
	"github.com/rancher/wrangler/v2/pkg/genericcondition"
	corev1 "k8s.io/api/core/v1"
)

// Condition types shown on FloatingIP and FloatingIPRange objects. Each is a wrangler
// condition.Cond, so that its getters read any of the objects and their statuses.
const (
	// Ready summarises the object: true when it is fully in effect.
	Ready condition.Cond = "Ready"
	// Allocated is true when a FloatingIP holds its address in its range.
	Allocated condition.Cond = "Allocated"
	// GuestConfigured is true when the guest cluster's kube-vip configuration carries the address.
	GuestConfigured condition.Cond = "GuestConfigured"
	// KubevipInstalled is true when kube-vip and kube-vip-cloud-provider are installed in the guest.
	KubevipInstalled condition.Cond = "KubevipInstalled"
	// Warning is true on a FloatingIPRange that is valid but almost certainly not what was meant
	// (the whole address space, nothing left to hand out); absent otherwise.
	Warning condition.Cond = "Warning"
)

// SetCondition makes the condition c of status (a *FloatingIP, a *FloatingIPRange or their statuses)
// say ok, reason and message, and reports whether anything changed. The timestamps move only
// then, lastTransitionTime only when the status flips, so that a pass that finds nothing new
// writes nothing.
func SetCondition(status interface{}, c condition.Cond, ok bool, reason, message string) bool {
	want := string(corev1.ConditionFalse)
	if ok {
		want = string(corev1.ConditionTrue)
	}
	was := c.GetStatus(status)
	if was == want && c.GetReason(status) == reason && c.GetMessage(status) == message {
		return false
	}
	c.SetStatus(status, want)
	c.Reason(status, reason)
	c.Message(status, message)
	now := time.Now().UTC().Format(time.RFC3339)
	c.LastUpdated(status, now)
	if was != want {
		if cond := find(status, c); cond != nil {
			cond.LastTransitionTime = now
		}
	}
	return true
}

// SetReady derives a FloatingIP's Ready from Allocated and, once guest operations report,
// GuestConfigured: a FloatingIP is ready when it holds its address and its guest cluster uses it.
// Both the allocation and the guest controller call it, so Ready never flips between their views.
func SetReady(status *FloatingIPStatus) {
	alloc, ok := GetCondition(status.Conditions, Allocated)
	if !ok {
		return
	}
	if alloc.Status != corev1.ConditionTrue {
		SetCondition(status, Ready, false, alloc.Reason, alloc.Message)
		return
	}
	guest, ok := GetCondition(status.Conditions, GuestConfigured)
	switch {
	case !ok:
		SetCondition(status, Ready, true, alloc.Reason, alloc.Message)
	case guest.Status == corev1.ConditionTrue:
		SetCondition(status, Ready, true, guest.Reason, alloc.Message+"; "+guest.Message)
	default:
		SetCondition(status, Ready, false, guest.Reason, guest.Message)
	}
}

// GetCondition returns the condition c of conds, if present.
func GetCondition(conds []genericcondition.GenericCondition, c condition.Cond) (genericcondition.GenericCondition, bool) {
	for _, cond := range conds {
		if cond.Type == string(c) {
			return cond, true
		}
	}
	return genericcondition.GenericCondition{}, false
}

func find(status interface{}, c condition.Cond) *genericcondition.GenericCondition {
	var conds []genericcondition.GenericCondition
	switch s := status.(type) {
	case *FloatingIPStatus:
		conds = s.Conditions
	case *FloatingIPRangeStatus:
		conds = s.Conditions
	case *FloatingIP:
		conds = s.Status.Conditions
	case *FloatingIPRange:
		conds = s.Status.Conditions
	}
	for i := range conds {
		if conds[i].Type == string(c) {
			return &conds[i]
		}
	}
	return nil
}
