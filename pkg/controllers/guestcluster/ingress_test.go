package guestcluster

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
)

// TestIngressPassStep: the guest's ingress controller is put on the FloatingIP's address when its
// range asks (spec.ingress) or the cluster's label says true, and never when the label says
// false; the FloatingIP shows IngressServed from what the guest shows of the Service, and nothing
// when nothing asks, the pass then taking the operator's Service out.
func TestIngressPassStep(t *testing.T) {
	addr := netip.MustParseAddr(testAddr)
	ingressHolds := func(holds bool) func(string) (kubevipconfig.Serving, error) {
		return func(string) (kubevipconfig.Serving, error) {
			svc := kubevipconfig.ServiceState{Namespace: kubevipconfig.IngressNamespace, Name: kubevipconfig.IngressServiceName, Asks: []netip.Addr{addr}}
			if holds {
				svc.Holds = svc.Asks
			}
			return kubevipconfig.Serving{Services: []kubevipconfig.ServiceState{svc}}, nil
		}
	}
	for _, tc := range []struct {
		name    string
		ranged  bool
		label   string
		serving func(string) (kubevipconfig.Serving, error)
		ingress func([]netip.Addr) (kubevipconfig.IngressResult, string, error)
		reason  string // "": no IngressServed condition, and the Service taken out
	}{
		{"nothing asks, the Service is there", false, "", ingressHolds(false), nil, ""},
		{"the range asks: written, not held yet", true, "", nil, nil, v1.ReasonIngressPending},
		{"the range asks: held", true, "", ingressHolds(true), nil, v1.ReasonIngressServed},
		{"the range asks, the Service asks but holds nothing", true, "", ingressHolds(false), nil, v1.ReasonIngressPending},
		{"the label asks", false, "true", ingressHolds(true), nil, v1.ReasonIngressServed},
		{"the label says no, whatever the range", true, "false", ingressHolds(true), nil, ""},
		{"a label that is no boolean leaves it to the range", true, "maybe", nil, nil, v1.ReasonIngressPending},
		{"no controller", true, "", nil, func([]netip.Addr) (kubevipconfig.IngressResult, string, error) {
			return "", "no pod of rke2-ingress-nginx or rke2-traefik runs in kube-system", nil
		}, v1.ReasonIngressNoController},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			w.ranges = []*v1.FloatingIPRange{{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: v1.FloatingIPRangeSpec{IPRange: "10.0.0.0/24", Ingress: tc.ranged}}}
			if tc.label != "" {
				p, err := w.prov.Cache().Get(testFleet, testCluster)
				if err != nil {
					t.Fatal(err)
				}
				p = p.DeepCopy()
				p.Labels = map[string]string{v1.LabelIngress: tc.label}
				if _, err := w.prov.Update(p); err != nil {
					t.Fatal(err)
				}
			}
			if tc.serving != nil {
				serving := tc.serving
				tc.serving = func(name string) (kubevipconfig.Serving, error) {
					s, err := serving(name)
					s.Ingress = true // as ServingOf says of a guest whose watch holds the Service
					return s, err
				}
			}
			w.guest.serving, w.guest.ingress = tc.serving, tc.ingress
			f, _ := w.pass(t, testCluster+"-kubevip")
			if f == nil {
				t.Fatal("no status written")
			}
			c, shown := v1.GetCondition(f.Status.Conditions, v1.IngressServed)
			if tc.reason == "" {
				if shown || len(w.guest.ingressed) > 0 || w.guest.unIngressed != 1 {
					t.Errorf("IngressServed %+v, asked for %v, removals %d; want none, none, one", c, w.guest.ingressed, w.guest.unIngressed)
				}
				return
			}
			if c.Reason != tc.reason || (c.Status == "True") != (tc.reason == v1.ReasonIngressServed) || !strings.Contains(c.Message, testAddr) {
				t.Errorf("IngressServed %s %s %q; want %s naming %s", c.Status, c.Reason, c.Message, tc.reason, testAddr)
			}
			if len(w.guest.ingressed) != 1 || !slices.Equal(w.guest.ingressed[0], []netip.Addr{addr}) || w.guest.unIngressed != 0 {
				t.Errorf("asked for %v, removals %d; want [%s] once, none", w.guest.ingressed, w.guest.unIngressed, addr)
			}
		})
	}
}

// A guest that asks for no ingress Service is asked to take one out only where what the pass
// observed shows one, or cannot tell: otherwise the pass costs no request for it.
func TestIngressTakenOutOnlyWhereItMayBe(t *testing.T) {
	for _, tc := range []struct {
		name    string
		serving kubevipconfig.Serving
		err     error
		removes bool
	}{
		{"the look shows none", kubevipconfig.Serving{}, nil, false},
		{"the look shows one", kubevipconfig.Serving{Ingress: true}, nil, true},
		{"the look was cut short", kubevipconfig.Serving{Limited: "more than 1000 kube-vip Services"}, nil, true},
		{"no look", kubevipconfig.Serving{}, errors.New("the guest's watch has not listed"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			w.guest.serving = func(string) (kubevipconfig.Serving, error) { return tc.serving, tc.err }
			w.pass(t, testCluster+"-kubevip")
			if got := w.guest.unIngressed == 1; got != tc.removes || w.guest.unIngressed > 1 {
				t.Errorf("RemoveIngress called %d times; want it called: %t", w.guest.unIngressed, tc.removes)
			}
		})
	}
}
