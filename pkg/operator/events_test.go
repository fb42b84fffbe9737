package operator

import (
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	corev1 "k8s.io/api/core/v1"
)

// TestEventsAreLogged: a Normal Event is an info line and a Warning a warning line, each naming
// the object (namespaced or not), the reason and the message.
func TestEventsAreLogged(t *testing.T) {
	log, hook := test.NewNullLogger()
	logEvent(log, &corev1.Event{Type: corev1.EventTypeNormal, Reason: "Allocated", Message: "holds 10.0.0.1 in FloatingIPRange r",
		InvolvedObject: corev1.ObjectReference{Kind: "FloatingIP", Namespace: "c-m-a", Name: "a-kubevip"}})
	logEvent(log, &corev1.Event{Type: corev1.EventTypeWarning, Reason: "RangeExhausted", Message: "no free address",
		InvolvedObject: corev1.ObjectReference{Kind: "FloatingIPRange", Name: "r"}})
	want := []struct {
		level logrus.Level
		msg   string
	}{
		{logrus.InfoLevel, "FloatingIP c-m-a/a-kubevip: holds 10.0.0.1 in FloatingIPRange r"},
		{logrus.WarnLevel, "FloatingIPRange r: no free address"},
	}
	if len(hook.Entries) != len(want) {
		t.Fatalf("%d lines logged, want %d", len(hook.Entries), len(want))
	}
	for i, w := range want {
		e := hook.Entries[i]
		if e.Level != w.level || e.Message != w.msg {
			t.Errorf("line %d: %s %q, want %s %q", i, e.Level, e.Message, w.level, w.msg)
		}
	}
	if hook.Entries[1].Data["reason"] != "RangeExhausted" {
		t.Errorf("the warning's reason field is %v", hook.Entries[1].Data["reason"])
	}
}
