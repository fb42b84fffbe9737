package guestcluster

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// TestFloatingIPTriggers: a FloatingIP that names a guest cluster runs its namespace's pass when it
// appears and when its address changes, not for a status write of its own; one that names no
// cluster runs nothing and is not remembered, unless it named one before.
func TestFloatingIPTriggers(t *testing.T) {
	c := &controller{queue: workqueue.NewRateLimitingQueue(workqueue.DefaultControllerRateLimiter()), seen: newSeenClusters()}
	defer c.queue.ShutDown()
	queued := func() []string {
		var out []string
		for c.queue.Len() > 0 {
			item, _ := c.queue.Get()
			out = append(out, item.(string))
			c.queue.Done(item)
		}
		return out
	}
	fip := func(name, cluster, addr string) *v1.FloatingIP {
		f := &v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Namespace: "c-m-a", Name: name, Annotations: map[string]string{}}}
		if cluster != "" {
			f.Annotations[v1.AnnotationClusterName] = cluster
		}
		f.Status.IPAddress = addr
		return f
	}

	steps := []struct {
		what string
		f    *v1.FloatingIP
		key  string
		want int
	}{
		{"a cluster's FloatingIP appears", fip("a-kubevip", "a", ""), "c-m-a/a-kubevip", 1},
		{"it gets its address", fip("a-kubevip", "a", "10.0.0.1"), "c-m-a/a-kubevip", 1},
		{"a status write of its own", fip("a-kubevip", "a", "10.0.0.1"), "c-m-a/a-kubevip", 0},
		{"a FloatingIP naming no cluster appears", fip("plain", "", ""), "c-m-a/plain", 0},
		{"it gets its address", fip("plain", "", "10.0.0.2"), "c-m-a/plain", 0},
		{"the cluster's FloatingIP stops naming it", fip("a-kubevip", "", "10.0.0.1"), "c-m-a/a-kubevip", 1},
		{"it is deleted", nil, "c-m-a/a-kubevip", 0},
	}
	for _, s := range steps {
		if _, err := c.onFloatingIP(s.key, s.f); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		if got := queued(); len(got) != s.want || (s.want == 1 && got[0] != "c-m-a") {
			t.Errorf("%s: queued %v, want %d pass(es) of c-m-a", s.what, got, s.want)
		}
	}
	if n := len(c.seen.fips); n != 0 {
		t.Errorf("%d FloatingIPs still remembered: %v", n, c.seen.fips)
	}
}
