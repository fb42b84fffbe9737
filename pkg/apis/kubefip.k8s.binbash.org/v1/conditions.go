package v1

import (
	"slices"
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
	// Served is what the guest shows of the address, read back from it: true when a LoadBalancer
	// Service's status holds it (kube-vip bound it), or when nothing asks for it yet and the
	// operator's kube-vip is ready; false when no kube-vip pod of the operator's is ready, or a
	// Service asks for the address and none holds it.
	Served condition.Cond = "Served"
	// DNSPublished is true when external-dns has taken in the FloatingIP's DNSEndpoint as it is
	// now (its status.observedGeneration), for a FloatingIP whose range publishes names; absent
	// otherwise. It leaves Ready as it is.
	DNSPublished condition.Cond = "DNSPublished"
	// IngressServed is true when the guest's ingress controller is reached on the FloatingIP's
	// address: the operator's Service kube-system/kube-fip-ingress selects the controller's pods
	// and its status holds the address, read back from the guest. Absent unless the FloatingIP's
	// range or its cluster asks for it; it leaves Ready as it is.
	IngressServed condition.Cond = "IngressServed"
	// Warning is true on a FloatingIPRange that is valid but almost certainly not what was meant
	// (the whole address space, nothing left to hand out), and on a FloatingIP whose address is
	// of a range that names another network than its guest cluster's; absent otherwise.
	Warning condition.Cond = "Warning"
	// Reconciling is true, with Ready's reason and message, while Ready is false for a reason
	// that passes by itself (class Progress: a guest cluster still being provisioned, a range
	// not created yet); absent otherwise.
	Reconciling condition.Cond = "Reconciling"
	// Stalled is true, with Ready's reason and message, while Ready is false for a reason a
	// person must act on (class Failure: an address held elsewhere, an exhausted range, an
	// invalid range); absent otherwise.
	Stalled condition.Cond = "Stalled"
)

// Reconciling and Stalled are the "abnormal-true" pair kstatus reads (InProgress and Failed) and
// wrangler's summary knows (Reconciling True is "reconciling", transitioning; Stalled True is an
// error), so Rancher's UI and kubectl wait tell progress from failure without a reason of their
// own: Ready keeps its reasons, a documented contract. With Reconciling True the summary is
// "reconciling" and transitioning, and not an error; with Stalled True it is an error, shown as
// "unavailable" and also transitioning, since wrangler reads Ready=False so when no condition
// names the state (Rancher's UI shows the error first). Wrangler's other ways to an error with a
// state of its own do not fit: a reason "Error" loses the reason itself, and its "Failed"
// condition means a failure when False, which kubectl readers would take the wrong way round.

// SetCondition makes the condition c of status (a *FloatingIP, a *FloatingIPRange or their statuses)
// say ok, reason and message, and reports whether anything changed. The timestamps move only
// then, lastTransitionTime only when the status flips, so that a pass that finds nothing new
// writes nothing. Setting Ready also sets Reconciling and Stalled from it, so that no writer of
// Ready forgets them.
func SetCondition(status interface{}, c condition.Cond, ok bool, reason, message string) bool {
	changed := setCondition(status, c, ok, reason, message)
	if c == Ready {
		progressing := !ok && !Stalling(reason)
		stalled := !ok && Stalling(reason)
		// Both run: neither may be skipped because the other changed.
		r := keepCondition(status, Reconciling, progressing, reason, message)
		s := keepCondition(status, Stalled, stalled, reason, message)
		changed = changed || r || s
	}
	return changed
}

// RemoveCondition takes condition c off status, and reports whether it was there.
func RemoveCondition(status interface{}, c condition.Cond) bool {
	return keepCondition(status, c, false, "", "")
}

// keepCondition makes c true with reason and message when want, and removes it otherwise.
func keepCondition(status interface{}, c condition.Cond, want bool, reason, message string) bool {
	if want {
		return setCondition(status, c, true, reason, message)
	}
	conds := conditionsOf(status)
	if conds == nil {
		return false
	}
	n := len(*conds)
	*conds = slices.DeleteFunc(*conds, func(cond genericcondition.GenericCondition) bool { return cond.Type == string(c) })
	return len(*conds) != n
}

// setCondition sets c on the conditions of status directly: this runs for every condition of
// every status written, and wrangler's Cond getters and setters find the conditions by reflection
// at each call. The outcome is theirs: a new condition is appended, lastUpdateTime moves on every
// change, lastTransitionTime when the status flips (or the condition is new).
func setCondition(status interface{}, c condition.Cond, ok bool, reason, message string) bool {
	conds := conditionsOf(status)
	if conds == nil {
		return false
	}
	want := corev1.ConditionFalse
	if ok {
		want = corev1.ConditionTrue
	}
	cond := find(status, c)
	if cond == nil {
		*conds = append(*conds, genericcondition.GenericCondition{Type: string(c)})
		cond = &(*conds)[len(*conds)-1]
	}
	if cond.Status == want && cond.Reason == reason && cond.Message == message {
		return false
	}
	now := time.Now().UTC().Format(time.RFC3339)
	if cond.Status != want {
		cond.LastTransitionTime = now
	}
	cond.Status, cond.Reason, cond.Message, cond.LastUpdateTime = want, reason, message, now
	return true
}

// SetReady derives a FloatingIP's Ready from Allocated and, once guest operations report,
// GuestConfigured and Served: a FloatingIP is ready when it holds its address, its guest cluster is
// configured with it, and what the guest shows says it is served (or can be, nothing asking for it
// yet). Both the allocation and the guest controller call it, so Ready never flips between their
// views.
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
	case guest.Status != corev1.ConditionTrue:
		SetCondition(status, Ready, false, guest.Reason, guest.Message)
	default:
		served, checked := GetCondition(status.Conditions, Served)
		switch {
		case !checked:
			SetCondition(status, Ready, true, guest.Reason, alloc.Message+"; "+guest.Message)
		case served.Status == corev1.ConditionTrue:
			SetCondition(status, Ready, true, served.Reason, alloc.Message+"; "+guest.Message+"; "+served.Message)
		default:
			SetCondition(status, Ready, false, served.Reason, served.Message)
		}
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
	conds := conditionsOf(status)
	if conds == nil {
		return nil
	}
	for i := range *conds {
		if (*conds)[i].Type == string(c) {
			return &(*conds)[i]
		}
	}
	return nil
}

// conditionsOf is the conditions of status, one of the kinds SetCondition takes; nil for another.
func conditionsOf(status interface{}) *[]genericcondition.GenericCondition {
	switch s := status.(type) {
	case *FloatingIPStatus:
		return &s.Conditions
	case *FloatingIPRangeStatus:
		return &s.Conditions
	case *FloatingIP:
		return &s.Status.Conditions
	case *FloatingIPRange:
		return &s.Status.Conditions
	}
	return nil
}
