package floatingiprange

import (
	"math/big"
	"slices"
	"strings"

	"github.com/rancher/wrangler/v2/pkg/genericcondition"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/problem"
)

// verdict is what a pass of the range handler shows in a range's status: the fields it owns.
type verdict struct {
	sum allocation.Summary
	// problem is why the range is not Ready: the allocation's problem (sum.Problem), or one of
	// the range's Harvester cluster; nil when it is Ready.
	problem    *problem.Problem
	generation int64
	// selector is the range's clusterSelector as text.
	selector string
}

// apply writes the verdict into s and reports whether Ready and the Warning condition
// changed.
func (v verdict) apply(s *v1.FloatingIPRangeStatus) (ready, warning bool) {
	setCounts(s, v.sum)
	s.ObservedGeneration = v.generation
	s.ClusterSelector = v.selector
	if p := v.problem; p != nil {
		ready = v1.SetCondition(s, v1.Ready, false, p.Reason, p.Message)
	} else {
		ready = v1.SetCondition(s, v1.Ready, true, v1.ReasonReady, "")
	}
	return ready, setWarning(s, v.sum.Warnings)
}

// setCounts writes the range's counts into its status s: the exact decimal strings, and the integer
// fields the list views sort by.
func setCounts(s *v1.FloatingIPRangeStatus, sum allocation.Summary) {
	s.Capacity = sum.Capacity.String()
	s.Used = int64(sum.Used)
	s.Retained = int64(sum.Retained)
	s.Available = sum.Available.String()
	s.CapacityCount = int64Of(sum.Capacity)
	s.AvailableCount = int64Of(sum.Available)
	s.UsedPercent = usedPercent(int64(sum.Used)+int64(sum.Retained), sum.Capacity)
}

// int64Of returns n when it fits in an int64, and nil otherwise.
func int64Of(n *big.Int) *int64 {
	if n == nil || !n.IsInt64() {
		return nil
	}
	v := n.Int64()
	return &v
}

// usedPercent is taken / capacity in whole percent, rounded down and at most 100; 0 when the
// capacity is 0.
func usedPercent(taken int64, capacity *big.Int) int64 {
	if capacity == nil || capacity.Sign() <= 0 || taken <= 0 {
		return 0
	}
	p := new(big.Int).Mul(big.NewInt(taken), big.NewInt(100))
	p.Quo(p, capacity)
	if p.Cmp(big.NewInt(100)) >= 0 {
		return 100
	}
	return p.Int64()
}

// countsOnly tells whether the new status differs from the old in its counts alone.
func countsOnly(old, updated *v1.FloatingIPRangeStatus) bool {
	a, b := *old, *updated
	a.Used, a.Retained, a.Available, a.Capacity = b.Used, b.Retained, b.Available, b.Capacity
	a.CapacityCount, a.AvailableCount, a.UsedPercent = b.CapacityCount, b.AvailableCount, b.UsedPercent
	return equality.Semantic.DeepEqual(&a, &b)
}

// setWarning shows the range's warnings in its Warning condition, and drops the condition when
// there is nothing to say. It reports whether the condition changed to say something new.
func setWarning(s *v1.FloatingIPRangeStatus, warnings []problem.Problem) bool {
	if len(warnings) == 0 {
		s.Conditions = slices.DeleteFunc(s.Conditions, func(c genericcondition.GenericCondition) bool { return c.Type == string(v1.Warning) })
		return false
	}
	reason, msg := warningOf(warnings)
	return v1.SetCondition(s, v1.Warning, true, reason, msg)
}

// warningOf is the Warning condition's reason and message for warnings: the first one's reason,
// and every message.
func warningOf(warnings []problem.Problem) (reason, msg string) {
	msgs := make([]string, 0, len(warnings))
	for _, w := range warnings {
		msgs = append(msgs, w.Message)
	}
	return warnings[0].Reason, strings.Join(msgs, "; ")
}
