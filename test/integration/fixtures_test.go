package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rancher/wrangler/v2/pkg/condition"
	"github.com/rancher/wrangler/v2/pkg/genericcondition"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// fixture is one test's corner of its shard's API server: its own namespace for FloatingIPs and
// the operator, and ranges named after it. The shard is cleared when the test ends.
type fixture struct {
	t      *testing.T
	ns     string
	api    kubefipAPI
	ranges []string
	extra  []string
	// world holds the management clusters of the Harvester clusters the fixture's ranges name.
	world *rancher.World
	// shard is the control plane the test took.
	shard *suite.Suite
}

type kubefipAPI = kubefipcontrollers.Interface

// newFixture creates namespace ns on the test's shard, taking one first (shards.Take) when the
// test has none yet, so that a test that starts with it runs beside the others.
func newFixture(t *testing.T, ns string) *fixture {
	t.Helper()
	shard := shards.OfOrTake(t)
	shard.CreateNamespace(t, ns)
	return &fixture{t: t, ns: ns, api: shard.Kubefip, shard: shard}
}

// operator starts the operator for this fixture's namespace and returns it and its metrics port.
// It may install from the tests' loopback chart repositories and registries; extra flags come
// after, so a test can set its own allow-list.
func (f *fixture) operator(extra ...string) (*controlplane.Process, int) {
	f.t.Helper()
	return f.operatorFrom(f.shard.Operator, append(controlplane.LoopbackChartSourceArgs(), extra...)...)
}

// operatorFrom starts the operator build binary (another release's, say) for this fixture's
// namespace on its shard with extra flags, and returns it and its metrics port once its
// controllers run.
func (f *fixture) operatorFrom(binary string, extra ...string) (*controlplane.Process, int) {
	f.t.Helper()
	port := rig.FreePort(f.t)
	p := startOperatorWith(f.t, binary, f.shard.Env.Kubeconfig, nil, f.ns, port, extra...)
	if err := p.WaitForLog(context.Background(), "controllers running", 2*time.Minute); err != nil {
		f.t.Fatalf("%s: %v\n%s", binary, err, rig.LastLines(p.Logs(), 60))
	}
	return p, port
}

// debugOperator starts the operator with logLevel debug, at which it logs each discovery decision
// (see passesOver).
func (f *fixture) debugOperator() (*controlplane.Process, int) {
	f.t.Helper()
	f.operatorConfig(map[string]string{"logLevel": "debug"})
	return f.operator()
}

// createRange creates a range of Harvester cluster harvester-<namespace>, which Rancher knows, on
// its network vlan10, that the fixture's namespaces may take addresses of.
func (f *fixture) createRange(name, cidr string, exclude ...string) *v1.FloatingIPRange {
	f.t.Helper()
	return f.createRangeIn(v1.AddressSpace{HarvesterClusterName: "harvester-" + f.ns, HarvesterNetworkName: "vlan10"}, name, cidr, exclude...)
}

// createRangeIn is createRange in address space space: a Harvester cluster Rancher knows and its
// network, or none (the range has neither annotation).
func (f *fixture) createRangeIn(space v1.AddressSpace, name, cidr string, exclude ...string) *v1.FloatingIPRange {
	f.t.Helper()
	var annotations map[string]string
	if space != (v1.AddressSpace{}) {
		f.knownHarvester(space.HarvesterClusterName)
		annotations = map[string]string{
			v1.AnnotationHarvesterClusterName: space.HarvesterClusterName,
			v1.AnnotationHarvesterNetworkName: space.HarvesterNetworkName,
		}
	}
	r, err := f.api.FloatingIPRange().Create(&v1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		// The test's FloatingIPs live in its own namespaces (extra ones registered before the
		// range), which no Rancher guest cluster owns.
		Spec: v1.FloatingIPRangeSpec{IPRange: cidr, Exclude: exclude, AllowedNamespaces: append([]string{f.ns}, f.extra...)},
	})
	if err != nil {
		f.t.Fatalf("creating range %s: %v", name, err)
	}
	f.ranges = append(f.ranges, name)
	return r
}

func (f *fixture) createFIP(name, rangeName, ip string) *v1.FloatingIP {
	f.t.Helper()
	x, err := f.api.FloatingIP().Create(f.fip(name, rangeName, ip))
	if err != nil {
		f.t.Fatalf("creating FloatingIP %s: %v", name, err)
	}
	return x
}

func (f *fixture) fip(name, rangeName, ip string) *v1.FloatingIP {
	return &v1.FloatingIP{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Annotations: map[string]string{
			v1.AnnotationClusterName:     name,
			v1.AnnotationFloatingIPRange: rangeName,
			v1.AnnotationUpdateConfigMap: "true",
		}},
		Spec: v1.FloatingIPSpec{IPAddress: ip},
	}
}

func (f *fixture) getFIP(name string) *v1.FloatingIP {
	f.t.Helper()
	x, err := f.api.FloatingIP().Get(f.ns, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("getting FloatingIP %s: %v", name, err)
	}
	return x
}

func (f *fixture) getRange(name string) *v1.FloatingIPRange {
	f.t.Helper()
	r, err := f.api.FloatingIPRange().Get(name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("getting range %s: %v", name, err)
	}
	return r
}

func (f *fixture) editRange(name string, edit func(*v1.FloatingIPRange)) {
	f.t.Helper()
	for i := 0; ; i++ {
		r := f.getRange(name)
		edit(r)
		_, err := f.api.FloatingIPRange().Update(r)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) || i > 10 {
			f.t.Fatalf("editing range %s: %v", name, err)
		}
	}
}

// waitFIP waits until the FloatingIP satisfies cond, reporting its last state on timeout.
func (f *fixture) waitFIP(name string, timeout time.Duration, what string, cond func(*v1.FloatingIP) bool) *v1.FloatingIP {
	f.t.Helper()
	var last *v1.FloatingIP
	if !rig.Within(timeout, func() bool {
		x, err := f.api.FloatingIP().Get(f.ns, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		last = x
		return cond(x)
	}) {
		f.t.Fatalf("FloatingIP %s/%s: timed out waiting for %s; last: spec=%+v status=%s", f.ns, name, what, specOf(last), suite.StatusText(last))
	}
	return last
}

func (f *fixture) waitRange(name string, timeout time.Duration, what string, cond func(*v1.FloatingIPRange) bool) *v1.FloatingIPRange {
	f.t.Helper()
	var last *v1.FloatingIPRange
	gone := false
	if !rig.Within(timeout, func() bool {
		r, err := f.api.FloatingIPRange().Get(name, metav1.GetOptions{})
		if err == nil {
			last = r
			return cond(r)
		}
		gone = apierrors.IsNotFound(err) && cond(nil)
		return gone
	}) {
		desc := "gone"
		if last != nil {
			desc = fmt.Sprintf("%+v", last.Status)
		}
		f.t.Fatalf("range %s: timed out waiting for %s; last status: %s", name, what, desc)
	}
	if gone {
		return nil
	}
	return last
}

// waitAllocation waits until the FloatingIPAllocation name satisfies cond (called with nil while
// there is none), reporting its last state on timeout.
func (f *fixture) waitAllocation(name string, timeout time.Duration, what string, cond func(*v1.FloatingIPAllocation) bool) *v1.FloatingIPAllocation {
	f.t.Helper()
	var last *v1.FloatingIPAllocation
	var lastErr error
	if !rig.Within(timeout, func() bool {
		a, err := f.api.FloatingIPAllocation().Get(name, metav1.GetOptions{})
		switch {
		case err == nil:
			last, lastErr = a, nil
		case apierrors.IsNotFound(err):
			last, lastErr = nil, nil
		default:
			lastErr = err
			return false
		}
		return cond(last)
	}) {
		f.t.Fatalf("FloatingIPAllocation %s: timed out after %s waiting for %s; last: %s", name, timeout, what, allocationText(last, lastErr))
	}
	return last
}

func specOf(x *v1.FloatingIP) interface{} {
	if x == nil {
		return nil
	}
	return x.Spec
}

func reasonIs(reason string) func(*v1.FloatingIP) bool {
	return func(x *v1.FloatingIP) bool {
		c, ok := v1.GetCondition(x.Status.Conditions, v1.Ready)
		return ok && c.Status == corev1.ConditionFalse && c.Reason == reason
	}
}

func rangeReason(reason string) func(*v1.FloatingIPRange) bool {
	return func(r *v1.FloatingIPRange) bool {
		c, ok := v1.GetCondition(r.Status.Conditions, v1.Ready)
		return r != nil && ok && c.Reason == reason
	}
}

func message(conds []genericcondition.GenericCondition, typ condition.Cond) string {
	c, _ := v1.GetCondition(conds, typ)
	return c.Message
}

// held returns the addresses FloatingIPs hold in range rangeName, read from the
// FloatingIPAllocation objects: address → holder, as the range's status recorded them before those
// objects existed. Addresses retained for deleted clusters are not held: see retainedIn.
func (f *fixture) held(rangeName string) map[string]v1.Allocation {
	f.t.Helper()
	return suite.HeldIn(f.t, f.api, rangeName)
}

// checkRecord asserts the invariants between a range's allocations and the FloatingIPs: every
// address held once, by the FloatingIP (the same object, by UID) that shows it, no FloatingIP
// holding two, the range's counts exact (once its batched status write came) and its legacy
// record empty.
func (f *fixture) checkRecord(rangeName string, wantUsed int) {
	f.t.Helper()
	var held map[string]v1.Allocation
	var r *v1.FloatingIPRange
	consistent := rig.Within(10*time.Second, func() bool {
		held = f.held(rangeName)
		r = f.getRange(rangeName)
		return len(held) == wantUsed && r.Status.Used == int64(wantUsed)
	})
	if !consistent {
		f.t.Errorf("range %s: %d allocations (status used %d), want %d", rangeName, len(held), r.Status.Used, wantUsed)
	}
	if len(r.Status.Allocations) != 0 {
		f.t.Errorf("range %s keeps a legacy record: %v", rangeName, r.Status.Allocations)
	}
	list, err := f.api.FloatingIP().List(f.ns, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	byAddr := map[string][]v1.FloatingIP{}
	owners := map[string][]string{}
	for _, x := range list.Items {
		if x.Status.Range == rangeName && x.Status.IPAddress != "" {
			byAddr[x.Status.IPAddress] = append(byAddr[x.Status.IPAddress], x)
		}
	}
	for addr, a := range held {
		owners[string(a.UID)] = append(owners[string(a.UID)], addr)
	}
	for uid, addrs := range owners {
		if len(addrs) > 1 {
			f.t.Errorf("one FloatingIP (uid %s) holds %v", uid, addrs)
		}
	}
	for addr, holders := range byAddr {
		if len(holders) > 1 {
			f.t.Errorf("address %s is shown as held by %d FloatingIPs", addr, len(holders))
		}
		a, ok := held[addr]
		switch {
		case !ok:
			f.t.Errorf("FloatingIP %s shows %s, which range %s does not hold", holders[0].Name, addr, rangeName)
		case a.Name != holders[0].Name || a.UID != holders[0].UID:
			f.t.Errorf("range %s holds %s for %s/%s (%s), but %s (%s) shows it", rangeName, addr, a.Namespace, a.Name, a.UID, holders[0].Name, holders[0].UID)
		}
	}
}

// recordedByHand creates range name and a FloatingIP "holder" in it, and writes the holder into
// the range's record under key, as a person or a restore tool might, before any operator runs.
func (f *fixture) recordedByHand(name, cidr, key string) *v1.FloatingIP {
	f.t.Helper()
	f.createRange(name, cidr)
	holder := f.createFIP("holder", name, "")
	r := f.getRange(name)
	r.Status.Allocations = map[string]v1.Allocation{
		key: {Namespace: f.ns, Name: holder.Name, UID: holder.UID},
	}
	if _, err := f.api.FloatingIPRange().UpdateStatus(r); err != nil {
		f.t.Fatal(err)
	}
	return holder
}

func listAll() metav1.ListOptions { return metav1.ListOptions{} }

// extraNamespace adds a namespace whose FloatingIPs may take addresses of the fixture's ranges
// created after it.
func (f *fixture) extraNamespace(ns string) {
	f.extra = append(f.extra, ns)
}

func (f *fixture) createFIPIn(ns, name, rangeName, ip string) *v1.FloatingIP {
	f.t.Helper()
	x := f.fip(name, rangeName, ip)
	x.Namespace = ns
	x.Annotations[v1.AnnotationClusterName] = strings.TrimSuffix(name, "-kubevip")
	created, err := f.api.FloatingIP().Create(x)
	if err != nil {
		f.t.Fatalf("creating FloatingIP %s/%s: %v", ns, name, err)
	}
	return created
}

func (f *fixture) waitFIPIn(ns, name string, timeout time.Duration, what string, cond func(*v1.FloatingIP) bool) *v1.FloatingIP {
	f.t.Helper()
	g := &fixture{t: f.t, ns: ns, api: f.api}
	return g.waitFIP(name, timeout, what, cond)
}

func (f *fixture) getFIPIn(ns, name string) *v1.FloatingIP {
	f.t.Helper()
	x, err := f.api.FloatingIP().Get(ns, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return x
}

// editFIPIn edits FloatingIP ns/name as a person would, again on a fresh copy when the operator
// wrote it in between.
func (f *fixture) editFIPIn(ns, name string, edit func(*v1.FloatingIP)) {
	f.t.Helper()
	for i := 0; ; i++ {
		x := f.getFIPIn(ns, name)
		edit(x)
		_, err := f.api.FloatingIP().Update(x)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) || i > 10 {
			f.t.Fatalf("editing FloatingIP %s/%s: %v", ns, name, err)
		}
	}
}

// createMany creates FloatingIPs name-000..name-(n-1) from 8 goroutines at once.
func (f *fixture) createMany(prefix, rangeName string, from, n int) {
	f.t.Helper()
	var wg sync.WaitGroup
	work := make(chan int)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if _, err := f.api.FloatingIP().Create(f.fip(fmt.Sprintf("%s-%03d", prefix, i), rangeName, "")); err != nil {
					f.t.Errorf("creating %s-%03d: %v", prefix, i, err)
				}
			}
		}()
	}
	for i := from; i < from+n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
}

// waitAllAllocated waits until every FloatingIP of the fixture holds an address, and returns them
// by name.
func (f *fixture) waitAllAllocated(want int, timeout time.Duration) map[string]string {
	f.t.Helper()
	var held map[string]string
	var exist int
	if !rig.Within(timeout, func() bool {
		list, err := f.api.FloatingIP().List(f.ns, metav1.ListOptions{})
		if err != nil {
			f.t.Fatal(err)
		}
		held, exist = map[string]string{}, len(list.Items)
		for _, x := range list.Items {
			if suite.Allocated(&x) && x.DeletionTimestamp == nil {
				held[x.Name] = x.Status.IPAddress
			}
		}
		return len(held) == want && exist == want
	}) {
		f.t.Fatalf("after %s: %d of %d FloatingIPs hold an address (%d exist)", timeout, len(held), want, exist)
	}
	return held
}

// operatorConfig writes the fixture's kube-fip-config.
func (f *fixture) operatorConfig(data map[string]string) {
	f.t.Helper()
	f.shard.WriteOperatorConfig(f.t, f.ns, data)
}

// setRetention sets addressRetention in the fixture's kube-fip-config and waits until the running
// operator has it in force: its Reloaded Event on the ConfigMap names the value as Go prints it.
func (f *fixture) setRetention(value, printed string) {
	f.t.Helper()
	f.operatorConfig(map[string]string{"addressRetention": value})
	rig.Eventually(f.t, 30*time.Second, "the operator to reload addressRetention="+printed, func() bool {
		return f.shard.HasEvent(f.t, f.ns, "kube-fip-config", corev1.EventTypeNormal, "Reloaded", "addressRetention="+printed+" ")
	})
}

// eventSoon tells whether an Event of type typ and reason, its message containing contains, about
// the object name in namespace ns comes within 10s: the operator records an Event after the
// status write it goes with, and sends it on its own time.
func eventSoon(t *testing.T, shard *suite.Suite, ns, name, typ, reason, contains string) bool {
	t.Helper()
	return rig.Within(10*time.Second, func() bool { return shard.HasEvent(t, ns, name, typ, reason, contains) })
}

// errorLinesAbout returns the operator's error-level log lines that mention any of words.
func errorLinesAbout(logs string, words ...string) []string {
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		if !strings.Contains(line, "level=error") {
			continue
		}
		for _, w := range words {
			if strings.Contains(line, w) {
				out = append(out, line)
				break
			}
		}
	}
	return out
}
