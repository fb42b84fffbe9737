package integration

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rancher/wrangler/v2/pkg/condition"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/guests"
)

// servedBudgetWorld is an operator serving two guests, A (the attacked one) and B, with nothing
// installed: the served state is read back from each whatever installs it.
type servedBudgetWorld struct {
	f     *fixture
	proxy *guests.ClusterProxy
	a, b  *guestCluster
	cidr  string
}

func newServedBudgetWorld(t *testing.T, name, cidr string) *servedBudgetWorld {
	w := &servedBudgetWorld{f: newFixture(t, "kube-fip-"+name), proxy: shared.StartClusterProxy(t), cidr: cidr}
	w.a = rancherCluster(t, w.proxy, name+"-a", "c-m-"+name+"a", nil, shared.StartGuest(t, name+"-a"))
	w.b = rancherCluster(t, w.proxy, name+"-b", "c-m-"+name+"b", nil, shared.StartGuest(t, name+"-b"))
	w.f.extraNamespace(w.a.id)
	w.f.extraNamespace(w.b.id)
	return w
}

// serve starts the operator, then gives A and then B a FloatingIP, and returns the operator's
// peak resident memory above idle until B is configured and both have had two more passes, and
// A's FloatingIP then.
func (w *servedBudgetWorld) serve(t *testing.T, name string) (grew int64, a *v1.FloatingIP) {
	w.f.operatorConfig(map[string]string{"operateGuestClusterInterval": "2"})
	p, port := w.f.operator()
	w.f.createRange(name, w.cidr+"0/28")
	w.f.waitRange(name, 30*time.Second, "Ready", func(r *v1.FloatingIPRange) bool { return v1.Ready.IsTrue(r) })
	time.Sleep(2 * time.Second)
	idle, err := p.Status("VmRSS")
	if err != nil {
		t.Fatal(err)
	}
	figures := sampleOperator(p, port)
	start := time.Now()
	w.f.createFIPIn(w.a.id, w.a.name+"-kubevip", name, w.cidr+"2")
	w.f.createFIPIn(w.b.id, w.b.name+"-kubevip", name, w.cidr+"3")
	w.b.waitCIDR(t, w.cidr+"3/32", 90*time.Second)
	w.f.waitFIPIn(w.b.id, w.b.name+"-kubevip", 60*time.Second, "guest B Configured", func(x *v1.FloatingIP) bool { return v1.GuestConfigured.IsTrue(x) })
	took := time.Since(start)
	a = w.f.waitFIPIn(w.a.id, w.a.name+"-kubevip", 60*time.Second, "guest A's served state decided", func(x *v1.FloatingIP) bool {
		c, ok := v1.GetCondition(x.Status.Conditions, v1.Served)
		return ok && c.Reason != ""
	})
	waitGuestPasses(t, port, w.a, w.b)
	peak, _ := figures.peaks()
	t.Logf("idle RSS %.1f MiB; peak %.1f MiB (+%.1f) while A and B were served; B configured after %s; A: Served %s",
		mib(idle), mib(peak), mib(peak-idle), took.Round(100*time.Millisecond), conditionText(a, v1.Served))
	select {
	case <-p.Done():
		t.Fatalf("the operator exited; its output ends:\n%s", rig.LastLines(p.Logs(), 40))
	default:
	}
	return peak - idle, a
}

func conditionText(x *v1.FloatingIP, cond condition.Cond) string {
	c, ok := v1.GetCondition(x.Status.Conditions, cond)
	if !ok {
		return "not set"
	}
	return fmt.Sprintf("%s/%s %q", c.Status, c.Reason, c.Message)
}

// TestGuestServedReadOfLargeServicesIsBudgeted: whoever may create Services in one namespace of
// guest A creates 200 LoadBalancer Services for kube-vip-cloud-provider, each asking, in its
// kube-vip.io/loadbalancerIPs annotation, for 150,000 bytes of distinct addresses (about 10,000).
// The operator reads them back within one guest's budget (it held every address of every
// Service before: +169 to +184 MiB), A's FloatingIP says which limit stopped the read, and B is
// configured meanwhile.
func TestGuestServedReadOfLargeServicesIsBudgeted(t *testing.T) {
	w := newServedBudgetWorld(t, "hsvc", "10.217.0.")
	ctx := context.Background()
	var addrs strings.Builder
	next := netip.MustParseAddr("172.16.0.1")
	for i := 0; i < 200; i++ {
		addrs.Reset()
		for addrs.Len() < 150000-16 {
			if addrs.Len() > 0 {
				addrs.WriteByte(',')
			}
			addrs.WriteString(next.String())
			next = next.Next()
		}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("tenant-%03d", i), Namespace: "default", Labels: map[string]string{"implementation": "kube-vip"},
				Annotations: map[string]string{kubevipconfig.LoadBalancerIPsAnnotation: addrs.String()}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		}
		if _, err := w.a.direct.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	grew, a := w.serve(t, "hsvc")
	looks, pages := w.proxy.ServiceLists(w.a.id)
	t.Logf("guest A was asked for its Services %d times in %d pages", looks, pages)
	if c, _ := v1.GetCondition(a.Status.Conditions, v1.Served); c.Reason != v1.ReasonServedReadLimited ||
		!strings.Contains(c.Message, "name more than 16 addresses each") || !strings.Contains(c.Message, "default/tenant-000") {
		t.Errorf("guest A's Served: %s; want ServedReadLimited naming the Services that name too many addresses", conditionText(a, v1.Served))
	}
	if pages > looks*kubevipconfig.MaxServicePages {
		t.Errorf("%d pages in %d looks; want at most %d a look", pages, looks, kubevipconfig.MaxServicePages)
	}
	if grew > guestMemoryBudget {
		t.Errorf("the operator's resident memory grew by %.1f MiB; want at most the %d MiB of one guest's budget", mib(grew), guestMemoryBudget>>20)
	}
}

// TestGuestServedReadOfHostilePagesIsBudgeted: guest A's API server answers the list of Services
// with pages of one huge Service each (an annotation of about 350,000 addresses, each page within
// what one answer may hold; pages of 369,000 took the operator to 2,093 MiB after 109 pages
// before), and
// then with empty pages without end (the read before stopped only at the pass's 5-minute end,
// after some 440 pages). Each costs at most one guest's budget and MaxServicePages pages a look,
// A's FloatingIP says so, and B is configured meanwhile.
func TestGuestServedReadOfHostilePagesIsBudgeted(t *testing.T) {
	w := newServedBudgetWorld(t, "hpage", "10.218.0.")
	w.proxy.SetServicePages(w.a.id, guests.HugeServicePages)
	grew, a := w.serve(t, "hpage")
	looks, pages := w.proxy.ServiceLists(w.a.id)
	t.Logf("pages of one huge Service: guest A was asked for its Services %d times in %d pages", looks, pages)
	if c, _ := v1.GetCondition(a.Status.Conditions, v1.Served); c.Reason != v1.ReasonServedReadLimited || !strings.Contains(c.Message, "default/huge-") {
		t.Errorf("guest A's Served: %s; want ServedReadLimited naming the huge Services", conditionText(a, v1.Served))
	}
	if pages > looks*kubevipconfig.MaxServicePages {
		t.Errorf("%d pages in %d looks; want at most %d a look", pages, looks, kubevipconfig.MaxServicePages)
	}
	if grew > guestMemoryBudget {
		t.Errorf("pages of one huge Service: the operator's resident memory grew by %.1f MiB; want at most %d MiB", mib(grew), guestMemoryBudget>>20)
	}

	w.proxy.SetServicePages(w.a.id, guests.EndlessEmptyPages)
	pageLimit := fmt.Sprintf("answered %d pages", kubevipconfig.MaxServicePages)
	x := w.f.waitFIPIn(w.a.id, w.a.name+"-kubevip", 60*time.Second, "ServedReadLimited naming the page limit", func(x *v1.FloatingIP) bool {
		c, _ := v1.GetCondition(x.Status.Conditions, v1.Served)
		return c.Reason == v1.ReasonServedReadLimited && strings.Contains(c.Message, pageLimit)
	})
	t.Logf("endless empty pages: guest A's Served: %s", conditionText(x, v1.Served))
	looksBefore, pagesBefore := w.proxy.ServiceLists(w.a.id)
	time.Sleep(6 * time.Second)
	looks, pages = w.proxy.ServiceLists(w.a.id)
	t.Logf("endless empty pages: %d looks in 6 s, %d pages", looks-looksBefore, pages-pagesBefore)
	// A look under way when the count was taken may finish its pages after it.
	if grown := pages - pagesBefore; grown > (looks-looksBefore+1)*kubevipconfig.MaxServicePages {
		t.Errorf("%d pages in %d looks; want at most %d a look", grown, looks-looksBefore, kubevipconfig.MaxServicePages)
	}
	if !v1.GuestConfigured.IsTrue(w.f.getFIPIn(w.b.id, w.b.name+"-kubevip")) {
		t.Error("guest B is not Configured")
	}
}
