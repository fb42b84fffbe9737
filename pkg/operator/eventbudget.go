package operator

import (
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	"github.com/kubefip/kube-fip-operator/pkg/metrics"
)

// The budget of Normal Events of one reason: a burst of normalEventBurst, then one every
// normalEventEvery. A cluster created, allocated or connected on its own, or a batch of up to 25
// (what a person or a Terraform plan creates at once), gets its Events; a backlog of thousands (an
// installation into a Rancher that runs them, a restart) makes some dozens of Events of each reason
// rather than thousands, which client-go's broadcaster would drop at random once its queue of 1,000
// is full anyway, after the API server has stored the first of them. A new cluster costs four
// requests of the API server, three of them writes; thousands of Events would add one write each.
const (
	normalEventBurst = 25
	normalEventEvery = 10 * time.Second
)

// budgetRecorder records every Warning Event — a person must act on each — and the Normal Events
// of each reason within the budget; the others are counted in kubefipoperator_events_left_out_total
// and logged at debug level. What a Normal Event says, the object's conditions say too.
type budgetRecorder struct {
	record.EventRecorder
	left  *metrics.Metrics
	now   func() time.Time
	mu    sync.Mutex
	limit map[string]*rate.Limiter
}

func newBudgetRecorder(r record.EventRecorder, m *metrics.Metrics, now func() time.Time) *budgetRecorder {
	return &budgetRecorder{EventRecorder: r, left: m, now: now, limit: map[string]*rate.Limiter{}}
}

// allowed takes one Event of reason from its budget, if the budget has one.
func (b *budgetRecorder) allowed(eventtype, reason string) bool {
	if eventtype != corev1.EventTypeNormal {
		return true
	}
	b.mu.Lock()
	l, ok := b.limit[reason]
	if !ok {
		// Reasons are the operator's own constants: the map stays as small as their list.
		l = rate.NewLimiter(rate.Every(normalEventEvery), normalEventBurst)
		b.limit[reason] = l
	}
	b.mu.Unlock()
	if l.AllowN(b.now(), 1) {
		return true
	}
	b.left.EventsLeftOut.WithLabelValues(reason).Inc()
	logrus.Debugf("a %s Event was left out: the budget of its reason is used up for now", reason)
	return false
}

func (b *budgetRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	if b.allowed(eventtype, reason) {
		b.EventRecorder.Event(object, eventtype, reason, message)
	}
}

func (b *budgetRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	if b.allowed(eventtype, reason) {
		b.EventRecorder.Eventf(object, eventtype, reason, messageFmt, args...)
	}
}

func (b *budgetRecorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...interface{}) {
	if b.allowed(eventtype, reason) {
		b.EventRecorder.AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
	}
}
