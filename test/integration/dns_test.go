package integration

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/dnsname"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/externaldns"
)

// dnsReason is a FloatingIP's DNSPublished reason, "" when it has none.
func dnsReason(x *v1.FloatingIP) string {
	c, _ := v1.GetCondition(x.Status.Conditions, v1.DNSPublished)
	return c.Reason
}

// TestDNSNamesFollowTheAddress: with external-dns's own DNSEndpoint CRD (of the release
// pkg/dnsname mirrors) installed, a FloatingIP of a range that asks for names gets a DNSEndpoint
// in its namespace, owned by it, with an A record for its cluster's name and one for the wildcard
// under it, at the range's TTL; DNSPublished waits for external-dns and turns True once the
// DNSEndpoint's status.observedGeneration reaches its generation, as external-dns's crd source
// writes it. The records follow a change of address. Another guest cluster whose range would give
// it the same name is refused it (DNSNameTaken), and the first cluster's records stay; once the
// first range stops asking for names, its DNSEndpoint and condition go, and the other cluster gets
// the name.
func TestDNSNamesFollowTheAddress(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "kube-fip-dns")
	if err := externaldns.InstallCRD(f.shard.Env.Config); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(f.shard.Env.Config)
	rig.Must(t, err)
	endpoints := dyn.Resource(dnsname.Resource)
	const other = "c-m-dnsother1"
	f.shard.CreateNamespace(t, other)
	f.extraNamespace(other)
	f.operator("--dns-endpoints")
	f.createRange("dns-a", "10.196.0.0/28")
	f.editRange("dns-a", func(r *v1.FloatingIPRange) {
		r.Spec.DNS = &v1.RangeDNS{Zone: "guests.example.test", Wildcard: true, TTL: 30}
	})
	f.createRange("dns-b", "10.197.0.0/28")
	f.editRange("dns-b", func(r *v1.FloatingIPRange) {
		r.Spec.DNS = &v1.RangeDNS{Zone: "guests.example.test", Name: "demo"}
	})

	// endpointOf waits until the DNSEndpoint ns/name is as cond says (nil: absent).
	endpointOf := func(ns, name, what string, cond func(*unstructured.Unstructured, dnsname.Observed) bool) *unstructured.Unstructured {
		t.Helper()
		var last *unstructured.Unstructured
		rig.Eventually(t, 30*time.Second, "DNSEndpoint "+ns+"/"+name+": "+what, func() bool {
			u, err := endpoints.Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				last = nil
				return cond(nil, dnsname.Observed{})
			}
			seen, err := dnsname.Read(u)
			last = u
			return err == nil && cond(u, seen)
		})
		return last
	}
	records := func(addr string) []dnsname.Endpoint {
		return []dnsname.Endpoint{
			{DNSName: "demo.guests.example.test", Targets: []string{addr}, RecordType: "A", RecordTTL: 30},
			{DNSName: "*.demo.guests.example.test", Targets: []string{addr}, RecordType: "A", RecordTTL: 30},
		}
	}

	// The cluster demo's FloatingIP gets its records, waiting for external-dns.
	f.createFIP("demo", "dns-a", "10.196.0.5")
	u := endpointOf(f.ns, "demo", "demo's records", func(u *unstructured.Unstructured, seen dnsname.Observed) bool {
		return u != nil && dnsname.Same(seen.Endpoints, records("10.196.0.5"))
	})
	fip := f.getFIP("demo")
	if refs := u.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != fip.UID || u.GetLabels()[dnsname.LabelFloatingIP] != "demo" {
		t.Errorf("DNSEndpoint's owners %v, labels %v; want FloatingIP demo", refs, u.GetLabels())
	}
	f.waitFIP("demo", 30*time.Second, "DNSPending with its names", func(x *v1.FloatingIP) bool {
		return dnsReason(x) == v1.ReasonDNSPending && slices.Equal(x.Status.DNSNames, []string{"demo.guests.example.test", "*.demo.guests.example.test"})
	})

	// external-dns's crd source read it: it writes status.observedGeneration (source/crd.go of
	// the release pkg/dnsname mirrors).
	observe := func(u *unstructured.Unstructured) {
		t.Helper()
		u = u.DeepCopy()
		rig.Must(t, unstructured.SetNestedField(u.Object, u.GetGeneration(), "status", "observedGeneration"))
		_, err := endpoints.Namespace(u.GetNamespace()).UpdateStatus(ctx, u, metav1.UpdateOptions{})
		rig.Must(t, err)
	}
	observe(u)
	x := f.waitFIP("demo", 30*time.Second, "Published", func(x *v1.FloatingIP) bool { return dnsReason(x) == v1.ReasonDNSPublished })
	if c, _ := v1.GetCondition(x.Status.Conditions, v1.DNSPublished); !strings.Contains(c.Message, "10.196.0.5") {
		t.Errorf("DNSPublished says %q; want the address", c.Message)
	}

	// The address changes: the records follow, and wait for external-dns again.
	f.editFIPIn(f.ns, "demo", func(x *v1.FloatingIP) { x.Spec.IPAddress = "10.196.0.6" })
	endpointOf(f.ns, "demo", "the new address", func(u *unstructured.Unstructured, seen dnsname.Observed) bool {
		return u != nil && dnsname.Same(seen.Endpoints, records("10.196.0.6"))
	})
	f.waitFIP("demo", 30*time.Second, "DNSPending after the change", func(x *v1.FloatingIP) bool { return dnsReason(x) == v1.ReasonDNSPending })

	// Another guest cluster's range would give it the same name: refused, nothing overwritten.
	f.createFIPIn(other, "other-kubevip", "dns-b", "")
	refused := f.waitFIPIn(other, "other-kubevip", 30*time.Second, "DNSNameTaken", func(x *v1.FloatingIP) bool {
		return dnsReason(x) == v1.ReasonDNSNameTaken
	})
	if msg := message(refused.Status.Conditions, v1.DNSPublished); !strings.Contains(msg, f.ns+"/demo") {
		t.Errorf("the refusal %q does not name the holder %s/demo", msg, f.ns)
	}
	endpointOf(other, "other-kubevip", "none", func(u *unstructured.Unstructured, _ dnsname.Observed) bool { return u == nil })
	endpointOf(f.ns, "demo", "demo's records kept", func(u *unstructured.Unstructured, seen dnsname.Observed) bool {
		return u != nil && dnsname.Same(seen.Endpoints, records("10.196.0.6"))
	})

	// The first range stops asking for names: demo's DNSEndpoint and condition go, and the other
	// cluster gets the name.
	f.editRange("dns-a", func(r *v1.FloatingIPRange) { r.Spec.DNS = nil })
	endpointOf(f.ns, "demo", "gone", func(u *unstructured.Unstructured, _ dnsname.Observed) bool { return u == nil })
	f.waitFIP("demo", 30*time.Second, "no DNSPublished, no names", func(x *v1.FloatingIP) bool {
		return dnsReason(x) == "" && len(x.Status.DNSNames) == 0
	})
	endpointOf(other, "other-kubevip", "the name", func(u *unstructured.Unstructured, seen dnsname.Observed) bool {
		return u != nil && len(seen.Endpoints) == 1 && seen.Endpoints[0].DNSName == "demo.guests.example.test"
	})
}
