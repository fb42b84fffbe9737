package guestwatch

import (
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
)

// watchOf is a clusterWatch with no stream, whose queued passes are counted.
func watchOf(debounce time.Duration, relevant ...netip.Addr) (*clusterWatch, *atomic.Int32) {
	var n atomic.Int32
	w := &clusterWatch{key: "c-m-1", opts: Options{Debounce: debounce, Changed: func(string) { n.Add(1) }},
		services: map[string]kubevipconfig.ServiceState{}, daemonSets: map[string]kubevipconfig.DaemonSetStatus{}, relevant: relevant}
	return w, &n
}

func service(name, asks, holds string) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{kubevipconfig.LoadBalancerIPsAnnotation: asks}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	if holds != "" {
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: holds}}
	}
	return s
}

// TestServiceEventsQueueWhatConcernsTheAddresses: an event queues a pass when the Service asks for
// or holds one of the addresses before or after it (so one that stops asking does too), or when
// its addresses stop being read; one of a Service that never names them queues none.
func TestServiceEventsQueueWhatConcernsTheAddresses(t *testing.T) {
	t.Parallel()
	ours := netip.MustParseAddr("10.0.0.5")
	for _, tc := range []struct {
		name   string
		events func(w *clusterWatch)
		want   int32
	}{
		{"another address's Service", func(w *clusterWatch) {
			w.applyService("ADDED", service("a", "10.9.9.9", ""))
			w.applyService("MODIFIED", service("a", "10.9.9.9", "10.9.9.9"))
			w.applyService("DELETED", service("a", "10.9.9.9", "10.9.9.9"))
		}, 0},
		{"a Service asking", func(w *clusterWatch) { w.applyService("ADDED", service("a", "10.0.0.5", "")) }, 1},
		{"a Service that stops asking", func(w *clusterWatch) {
			w.services["default/a"] = kubevipconfig.ServiceState{Namespace: "default", Name: "a", Asks: []netip.Addr{ours}}
			w.applyService("MODIFIED", service("a", "10.9.9.9", ""))
		}, 1},
		{"a Service holding it going", func(w *clusterWatch) {
			w.services["default/a"] = kubevipconfig.ServiceState{Namespace: "default", Name: "a", Holds: []netip.Addr{ours}}
			w.applyService("DELETED", service("a", "10.0.0.5", "10.0.0.5"))
		}, 1},
		{"a Service naming too many addresses", func(w *clusterWatch) {
			var many []string
			for i := range kubevipconfig.MaxServiceAddresses + 1 {
				many = append(many, fmt.Sprintf("10.1.0.%d", i))
			}
			w.applyService("ADDED", service("a", strings.Join(many, ","), ""))
		}, 1},
		{"a Service of another type", func(w *clusterWatch) {
			s := service("a", "10.0.0.5", "")
			s.Spec.Type = corev1.ServiceTypeClusterIP
			w.applyService("ADDED", s)
		}, 0},
	} {
		w, n := watchOf(time.Millisecond, ours)
		tc.events(w)
		time.Sleep(200 * time.Millisecond)
		if got := n.Load(); got != tc.want {
			t.Errorf("%s: %d passes queued; want %d", tc.name, got, tc.want)
		}
	}
}

// TestWatchKeepsAtMostMaxServices: past MaxServices Services the watch keeps no more, and says so.
func TestWatchKeepsAtMostMaxServices(t *testing.T) {
	t.Parallel()
	w, _ := watchOf(time.Hour)
	for i := range kubevipconfig.MaxServices + 5 {
		w.applyService("ADDED", service(fmt.Sprintf("s%03d", i), "10.9.9.9", ""))
	}
	if len(w.services) != kubevipconfig.MaxServices || !strings.Contains(w.limited, "more than 200") {
		t.Errorf("%d Services kept, limited %q; want %d and the limit said", len(w.services), w.limited, kubevipconfig.MaxServices)
	}
}

// TestChangesAreDebounced: a change queues a pass at once; a burst of changes after it, one more
// pass when Debounce has passed since; a stopped watch queues none.
func TestChangesAreDebounced(t *testing.T) {
	t.Parallel()
	w, n := watchOf(time.Second)
	w.changed()
	time.Sleep(200 * time.Millisecond)
	for range 20 {
		w.changed()
	}
	time.Sleep(200 * time.Millisecond)
	if got := n.Load(); got != 1 {
		t.Errorf("right after a burst: %d passes queued; want 1", got)
	}
	time.Sleep(1200 * time.Millisecond)
	if got := n.Load(); got != 2 {
		t.Errorf("after Debounce: %d passes queued; want 2", got)
	}
	w.cancel = func() {}
	w.changed()
	w.stop()
	time.Sleep(1200 * time.Millisecond)
	if got := n.Load(); got != 2 {
		t.Errorf("after stop: %d passes queued; want still 2", got)
	}
}
