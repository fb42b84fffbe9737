// Package conditions sets wrangler GenericConditions on a status the way the Rancher UI reads them,
// touching the timestamps only when something really changed, so that a reconcile that finds
// nothing new writes nothing.
package conditions

import (
	"time"

	"github.com/rancher/wrangler/v2/pkg/genericcondition"
	corev1 "k8s.io/api/core/v1"
)

// Set makes the condition typ say status/reason/message and reports whether anything changed.
func Set(conds *[]genericcondition.GenericCondition, typ string, status corev1.ConditionStatus, reason, message string) bool {
	now := time.Now().UTC().Format(time.RFC3339)
	for i := range *conds {
		c := &(*conds)[i]
		if c.Type != typ {
			continue
		}
		if c.Status == status && c.Reason == reason && c.Message == message {
			return false
		}
		if c.Status != status {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason, c.Message, c.LastUpdateTime = status, reason, message, now
		return true
	}
	*conds = append(*conds, genericcondition.GenericCondition{
		Type: typ, Status: status, Reason: reason, Message: message,
		LastTransitionTime: now, LastUpdateTime: now,
	})
	return true
}

// True sets the condition to True.
func True(conds *[]genericcondition.GenericCondition, typ, reason, message string) bool {
	return Set(conds, typ, corev1.ConditionTrue, reason, message)
}

// False sets the condition to False.
func False(conds *[]genericcondition.GenericCondition, typ, reason, message string) bool {
	return Set(conds, typ, corev1.ConditionFalse, reason, message)
}

// Get returns the condition typ, if present.
func Get(conds []genericcondition.GenericCondition, typ string) (genericcondition.GenericCondition, bool) {
	for _, c := range conds {
		if c.Type == typ {
			return c, true
		}
	}
	return genericcondition.GenericCondition{}, false
}

// IsTrue reports whether the condition typ is present and True.
func IsTrue(conds []genericcondition.GenericCondition, typ string) bool {
	c, ok := Get(conds, typ)
	return ok && c.Status == corev1.ConditionTrue
}
