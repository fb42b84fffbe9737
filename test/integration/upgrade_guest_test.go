package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/guests"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// ugRange is the range the guest upgrade test's FloatingIPs hold their addresses in.
const ugRange = "upgrade-guest"

// ugGuest is one guest cluster of the guest upgrade test, on the upgrade test's own control plane,
// and the one FloatingIP naming it.
type ugGuest struct {
	*guestCluster
	// fip and addr are the cluster's FloatingIP, <name>-kubevip, and the address it asks for.
	fip, addr string
}

// ugConfigMap is what the test compares of the guest's kube-system/kubevip: everything a person
// or a provider reads, serialized one way (encoding/json sorts map keys) before and after.
type ugConfigMap struct {
	Data        map[string]string `json:"data"`
	BinaryData  map[string][]byte `json:"binaryData"`
	Annotations map[string]string `json:"annotations"`
	Labels      map[string]string `json:"labels"`
}

// ugRecorded is a guest's ConfigMap as it was read once: its serialization and resourceVersion.
type ugRecorded struct {
	text, rv string
	cm       *corev1.ConfigMap
}

func ugSerialize(t *testing.T, cm *corev1.ConfigMap) string {
	t.Helper()
	b, err := json.Marshal(ugConfigMap{Data: cm.Data, BinaryData: cm.BinaryData, Annotations: cm.Annotations, Labels: cm.Labels})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ugWriters names who wrote the ConfigMap and when, from its managedFields, for a report of a
// write that should not have happened.
func ugWriters(cm *corev1.ConfigMap) string {
	var parts []string
	for _, m := range cm.ManagedFields {
		when := ""
		if m.Time != nil {
			when = m.Time.UTC().Format(time.RFC3339)
		}
		parts = append(parts, fmt.Sprintf("%s %s at %s", m.Manager, m.Operation, when))
	}
	return strings.Join(parts, "; ")
}

// TestUpgradeKeepsTheGuestConfigMapByteForByte: a guest cluster with a single FloatingIP sees no
// change at all when the operator is upgraded from the previous release, which wrote one address
// per guest, to the release that writes every FloatingIP's address of a cluster:
//
//   - On an API server of its own with the previous release's CRDs and Rancher's, two guest
//     clusters (real API servers behind the test cluster proxy, kubevipGuestInstall disabled, so
//     that only kube-system/kubevip is written), each named by one FloatingIP with
//     updateConfigMap true. Guest A has no ConfigMap: the previous release creates it. Guest B's
//     is a person's, with a range-team-a key, a label, an annotation and binaryData: the previous
//     release patches cidr-global into it.
//   - Once the previous release has written both and shows the FloatingIPs Configured, and has
//     made two more passes, each ConfigMap is recorded (data, binaryData, annotations, labels and
//     resourceVersion) and a watch of it starts from that resourceVersion.
//   - The previous release is stopped, the CRDs upgraded and the new operator started with
//     operateGuestClusterInterval 1. After at least three passes of the new operator that reached
//     each guest: the ConfigMaps are byte for byte as recorded, no owned-keys annotation appeared,
//     the resourceVersion is the same, the watch saw no event, the new operator counted no
//     ConfigMap write, and no new Configured Event was emitted. Each FloatingIP kept its UID and
//     address, is Configured and shows its address in status.guestAddresses.
//   - Still on the new release, a second FloatingIP for guest A puts both addresses into one
//     numerically sorted cidr-global (not in creation order nor as strings); deleting it returns
//     the ConfigMap to exactly the recorded content. Guest B is not touched throughout.
func TestUpgradeKeepsTheGuestConfigMapByteForByte(t *testing.T) {
	shard := shards.Take(t)
	began := time.Now()
	u, oldBinary, newCRDs := newPreviousReleaseWorld(t)
	proxy := u.shard.StartClusterProxy(t)
	// Guest A's FloatingIP holds .12 and the second one added after the upgrade .9: sorted
	// numerically they are 9, 12, in creation order and as strings 12, 9.
	a := u.ugRancherGuest(proxy, "upgg-a", "c-m-upgga001", "10.173.0.12")
	b := u.ugRancherGuest(proxy, "upgg-b", "c-m-upggb001", "10.173.0.5")
	guests := []*ugGuest{a, b}

	// Guest B's ConfigMap is a person's before any operator runs.
	persons := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: kubevipconfig.KubevipConfigMap, Namespace: kubevipconfig.KubevipConfigMapNamespace,
			Labels:      map[string]string{"team": "a"},
			Annotations: map[string]string{"example.com/owner": "team-a"}},
		Data:       map[string]string{"range-team-a": "10.173.1.0-10.173.1.9"},
		BinaryData: map[string][]byte{"notes.bin": {0, 1, 2, 0xfe, 0xff}},
	}
	if _, err := b.direct.CoreV1().ConfigMaps(persons.Namespace).Create(context.Background(), persons, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	u.operatorConfig(map[string]string{"operateGuestClusterInterval": "1", "kubevipGuestInstall": "disabled"})

	// The previous release writes both guests.
	old, oldPort := u.operatorFrom(oldBinary)
	u.createRangeIn(v1.AddressSpace{HarvesterClusterName: "harvester-upgg", HarvesterNetworkName: "vlan10"}, ugRange, "10.173.0.0/28")
	uids := map[string]types.UID{}
	for _, g := range guests {
		uids[g.name] = u.createFIPIn(g.id, g.fip, ugRange, g.addr).UID
	}
	for _, g := range guests {
		g.waitCIDR(t, kubevipconfig.CIDR(netip.MustParseAddr(g.addr)), time.Minute)
		u.waitFIPIn(g.id, g.fip, time.Minute, "Configured by the previous release", func(x *v1.FloatingIP) bool {
			return suite.Allocated(x) && x.Status.IPAddress == g.addr && guestReason("Configured")(x)
		})
	}
	// Two more passes over each guest, so that the previous release is done with every one.
	ugWaitPasses(t, oldPort, 2, guests...)
	recorded := map[string]ugRecorded{}
	watches := map[string]*recorder{}
	for _, g := range guests {
		cm := g.configMap(t)
		recorded[g.name] = ugRecorded{text: ugSerialize(t, cm), rv: cm.ResourceVersion, cm: cm}
		t.Logf("guest %s: the previous release left kube-system/kubevip at resourceVersion %s: %s", g.name, cm.ResourceVersion, recorded[g.name].text)
		watches[g.name] = g.watchConfigMap(t, cm.ResourceVersion)
	}
	if got := recorded[b.name].cm; got.Data["range-team-a"] != "10.173.1.0-10.173.1.9" || got.Data[kubevipconfig.GlobalCIDRKey] != "10.173.0.5/32" {
		t.Fatalf("the previous release did not patch cidr-global into the person's ConfigMap as expected: %s", recorded[b.name].text)
	}
	// configured sums the counts of the Configured Events of g's FloatingIP: one for each write of
	// the guest's ConfigMap the operators reported.
	configured := func(g *ugGuest) (n int32) {
		for _, e := range u.shard.Events(t, g.id, g.fip) {
			if e.Reason == "Configured" {
				n += max(e.Count, 1)
			}
		}
		return n
	}
	configuredBefore := map[string]int32{}
	for _, g := range guests {
		configuredBefore[g.name] = configured(g)
	}
	t.Logf("the previous release configured both guests %s after the start", time.Since(began).Round(time.Millisecond))
	if err := old.Stop(20 * time.Second); err != nil {
		t.Fatalf("stopping the previous release: %v", err)
	}

	u.upgradeCRDs(newCRDs)

	upgradeStart := time.Now()
	_, port := u.operatorFrom(shard.Operator)
	for _, g := range guests {
		u.waitFIPIn(g.id, g.fip, time.Minute, "Configured by the new release, guestAddresses "+g.addr, func(x *v1.FloatingIP) bool {
			return suite.Allocated(x) && guestReason("Configured")(x) && x.Status.GuestAddresses == g.addr
		})
	}
	// At least three passes of the new operator reached each guest (the first and two more, all
	// of them after the status above was written), counted by the operator itself.
	ugWaitPasses(t, port, 3, guests...)
	t.Logf("the new operator made its passes %s after its start", time.Since(upgradeStart).Round(time.Millisecond))

	for _, g := range guests {
		before := recorded[g.name]
		cm := g.configMap(t)
		if text := ugSerialize(t, cm); text != before.text {
			t.Errorf("guest %s: the upgrade changed kube-system/kubevip:\nbefore: %s\nafter:  %s\nwritten by: %s", g.name, before.text, text, ugWriters(cm))
		}
		if _, ok := cm.Annotations[kubevipconfig.OwnedKeysAnnotation]; ok {
			t.Errorf("guest %s: the upgrade added annotation %s=%q", g.name, kubevipconfig.OwnedKeysAnnotation, cm.Annotations[kubevipconfig.OwnedKeysAnnotation])
		}
		if cm.ResourceVersion != before.rv {
			t.Errorf("guest %s: kube-system/kubevip was written after the upgrade (resourceVersion %s, was %s); written by: %s",
				g.name, cm.ResourceVersion, before.rv, ugWriters(cm))
		}
		if n := metricSum(t, port, "kubefipoperator_guestcluster_events", `guestclustername="`+g.name+`"`,
			`event="`+ugEventConfigMap+`"`, `status="success"`); n != 0 {
			t.Errorf("guest %s: the new operator counted %v ConfigMap writes", g.name, n)
		}
		if n := configured(g); n != configuredBefore[g.name] {
			t.Errorf("guest %s: %d Configured Events after the upgrade, %d before: the new operator reported a write", g.name, n, configuredBefore[g.name])
		}
		if events := ugCaughtUp(t, watches[g.name], g.configMap(t).ResourceVersion); len(events) != 0 {
			for _, e := range events {
				cm := e.obj.(*corev1.ConfigMap)
				t.Errorf("guest %s: watch event %s at resourceVersion %d during the upgrade: %s; written by: %s", g.name, e.typ, e.rv, ugSerialize(t, cm), ugWriters(cm))
			}
		}
		x := u.waitFIPIn(g.id, g.fip, 10*time.Second, "its address, Configured", func(x *v1.FloatingIP) bool {
			return suite.Allocated(x) && x.Status.IPAddress == g.addr && x.Spec.IPAddress == g.addr && guestReason("Configured")(x)
		})
		if x.UID != uids[g.name] {
			t.Errorf("FloatingIP %s/%s was replaced (UID %s, was %s)", g.id, g.fip, x.UID, uids[g.name])
		}
		if x.Status.GuestState != "Configured" || x.Status.GuestAddresses != g.addr {
			t.Errorf("FloatingIP %s/%s: guestState %q, guestAddresses %q; want Configured and %s", g.id, g.fip, x.Status.GuestState, x.Status.GuestAddresses, g.addr)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// A second FloatingIP for guest A, on the new release: both addresses in one sorted
	// cidr-global, and back to the recorded ConfigMap when it goes.
	seenA := len(ugCaughtUp(t, watches[a.name], a.configMap(t).ResourceVersion))
	const second, secondAddr = "upgg-a-second", "10.173.0.9"
	const both = "10.173.0.9/32,10.173.0.12/32"
	x := u.fip(second, ugRange, secondAddr)
	x.Namespace, x.Annotations[v1.AnnotationClusterName] = a.id, a.name
	_, err := u.api.FloatingIP().Create(x)
	rig.Must(t, err)
	a.waitCIDR(t, both, time.Minute)
	for _, name := range []string{a.fip, second} {
		u.waitFIPIn(a.id, name, 30*time.Second, "Configured with both addresses", func(x *v1.FloatingIP) bool {
			c, _ := v1.GetCondition(x.Status.Conditions, v1.GuestConfigured)
			return c.Reason == "Configured" && strings.Contains(c.Message, both) && x.Status.GuestAddresses == secondAddr+","+a.addr
		})
	}
	if cm := a.configMap(t); cm.Annotations[kubevipconfig.OwnedKeysAnnotation] != "" {
		t.Errorf("guest %s: two global addresses brought annotation %s=%q", a.name, kubevipconfig.OwnedKeysAnnotation, cm.Annotations[kubevipconfig.OwnedKeysAnnotation])
	}
	if err := u.api.FloatingIP().Delete(a.id, second, &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	a.waitCIDR(t, kubevipconfig.CIDR(netip.MustParseAddr(a.addr)), time.Minute)
	if !rig.Within(30*time.Second, func() bool {
		_, err := u.api.FloatingIP().Get(a.id, second, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}) {
		t.Errorf("FloatingIP %s/%s is still there 30s after its deletion", a.id, second)
	}
	u.waitFIPIn(a.id, a.fip, 30*time.Second, "guestAddresses "+a.addr+" again", func(x *v1.FloatingIP) bool {
		return guestReason("Configured")(x) && x.Status.GuestAddresses == a.addr
	})
	cm := a.configMap(t)
	if text := ugSerialize(t, cm); text != recorded[a.name].text {
		t.Errorf("guest %s: after the second FloatingIP went, kube-system/kubevip is\n%s\nnot as recorded\n%s", a.name, text, recorded[a.name].text)
	}
	var values []string
	for _, e := range ugCaughtUp(t, watches[a.name], cm.ResourceVersion)[seenA:] {
		v := e.obj.(*corev1.ConfigMap).Data[kubevipconfig.GlobalCIDRKey]
		if e.typ != watch.Modified {
			v = string(e.typ) + " " + v
		}
		if len(values) == 0 || values[len(values)-1] != v {
			values = append(values, v)
		}
	}
	if want := []string{both, kubevipconfig.CIDR(netip.MustParseAddr(a.addr))}; !slices.Equal(values, want) {
		t.Errorf("guest %s: cidr-global went %q while the second FloatingIP came and went; want %q", a.name, values, want)
	}

	// Guest B saw nothing of this, nor of the upgrade.
	if cm := b.configMap(t); ugSerialize(t, cm) != recorded[b.name].text || cm.ResourceVersion != recorded[b.name].rv {
		t.Errorf("guest %s: kube-system/kubevip changed: %s at %s; written by: %s", b.name, ugSerialize(t, cm), cm.ResourceVersion, ugWriters(cm))
	}
	if events := ugCaughtUp(t, watches[b.name], b.configMap(t).ResourceVersion); len(events) != 0 {
		t.Errorf("guest %s: %d watch events on kube-system/kubevip, want none", b.name, len(events))
	}
	t.Logf("the guest upgrade test took %s", time.Since(began).Round(time.Millisecond))
}

// ugEventConfigMap is the event label of the operator's ConfigMap writes in
// kubefipoperator_guestcluster_events.
const ugEventConfigMap = "configmap_management"

// ugRancherGuest starts guest API server name of the upgrade test's control plane and creates on
// that control plane, as rancherCluster does on a shard, the Rancher objects of guest cluster
// name, id, reachable through proxy, whose FloatingIP asks for addr.
func (u *upgradeWorld) ugRancherGuest(proxy *guests.ClusterProxy, name, id, addr string) *ugGuest {
	u.t.Helper()
	gc := rancherClusterOn(u.t, u.shard, proxy, name, id, nil, u.shard.StartGuest(u.t, name))
	u.extraNamespace(id)
	return &ugGuest{guestCluster: gc, fip: name + "-kubevip", addr: addr}
}

// ugWaitPasses waits until n more passes of the operator on port have reached each guest (its
// probe succeeded, and the ConfigMap step followed in the same pass).
func ugWaitPasses(t *testing.T, port, n int, guests ...*ugGuest) {
	t.Helper()
	reached := func(g *ugGuest) float64 {
		return metricSum(t, port, "kubefipoperator_guestcluster_events", `guestclustername="`+g.name+`"`, `event="api_connection"`, `status="success"`)
	}
	want := make([]float64, len(guests))
	for i, g := range guests {
		want[i] = reached(g) + float64(n)
	}
	rig.Eventually(t, time.Minute, fmt.Sprintf("%d more passes of the operator reaching each of %d guests", n, len(guests)), func() bool {
		for i, g := range guests {
			if reached(g) < want[i] {
				return false
			}
		}
		return true
	})
}

func (g *ugGuest) configMap(t *testing.T) *corev1.ConfigMap {
	t.Helper()
	cm, err := g.direct.CoreV1().ConfigMaps(kubevipconfig.KubevipConfigMapNamespace).Get(context.Background(), kubevipconfig.KubevipConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("guest %s: %v", g.name, err)
	}
	return cm
}

// watchConfigMap follows the guest's kube-system/kubevip from resourceVersion rv.
func (g *ugGuest) watchConfigMap(t *testing.T, rv string) *recorder {
	t.Helper()
	cms := g.direct.CoreV1().ConfigMaps(kubevipconfig.KubevipConfigMapNamespace)
	return newRecorder(t, rv, func(rv string) (watch.Interface, error) {
		return cms.Watch(context.Background(), metav1.ListOptions{FieldSelector: "metadata.name=" + kubevipconfig.KubevipConfigMap, ResourceVersion: rv})
	})
}

// ugCaughtUp waits until the watch has seen the ConfigMap at resourceVersion rv, read from the
// API server (at once when rv is where the watch started: nothing happened), and returns its
// events so far.
func ugCaughtUp(t *testing.T, w *recorder, rv string) []event {
	t.Helper()
	want, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	var events []event
	if !rig.Within(30*time.Second, func() bool {
		var err error
		events, err = w.snapshot()
		if err != nil {
			t.Fatalf("the ConfigMap watch broke: %v", err)
		}
		if rv == w.from {
			return true
		}
		return len(events) > 0 && events[len(events)-1].rv >= want
	}) {
		t.Fatalf("the ConfigMap watch did not reach resourceVersion %s in 30s", rv)
	}
	inOrder(t, events)
	return events
}
