package operator

import (
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// newBroadcaster records Events through events and logs each one once, as the broadcaster sees
// it: a handler records an Event and does not log the same text again. Event messages are written
// for people and redacted where they are made, so they are safe to log.
func newBroadcaster(events typedcorev1.EventInterface) record.EventBroadcaster {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: events})
	b.StartEventWatcher(func(e *corev1.Event) { logEvent(logrus.StandardLogger(), e) })
	return b
}

// logEvent logs e at info level, or at warning level for a Warning, naming the object it is about.
func logEvent(log logrus.FieldLogger, e *corev1.Event) {
	o := e.InvolvedObject
	name := cache.ObjectName{Namespace: o.Namespace, Name: o.Name}
	entry := log.WithField("reason", e.Reason)
	if e.Type == corev1.EventTypeWarning {
		entry.Warnf("%s %s: %s", o.Kind, name, e.Message)
		return
	}
	entry.Infof("%s %s: %s", o.Kind, name, e.Message)
}
