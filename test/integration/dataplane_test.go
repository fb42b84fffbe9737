package integration

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/cloudprovider"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/dataplane"
)

var dataplaneOnce struct {
	sync.Once
	dp  dataplane.Dataplane
	err error
}

// realDataplane is the real kube-vip and kube-vip-cloud-provider, built once; the test is skipped, with
// the reason, where network namespaces cannot be made.
func realDataplane(t *testing.T) dataplane.Dataplane {
	t.Helper()
	if err := dataplane.CanCreateLinks(); err != nil {
		t.Skipf("the data-plane test needs root: %v", err)
	}
	if _, err := os.Stat("/etc/kubernetes/admin.conf"); err == nil {
		t.Fatal("/etc/kubernetes/admin.conf exists: kube-vip out of a cluster reads it before $HOME/.kube/config, so it would not talk to the test's guest")
	}
	dataplaneOnce.Do(func() {
		dataplaneOnce.dp, dataplaneOnce.err = dataplane.BuildDataplane()
		if dataplaneOnce.err == nil {
			fmt.Printf("dataplane: running the real data plane from %s:\n%s", dataplaneOnce.dp.Dir, dataplaneOnce.dp.Versions)
		}
	})
	if dataplaneOnce.err != nil {
		t.Fatal(dataplaneOnce.err)
	}
	return dataplaneOnce.dp
}

// servedGuest is one guest whose data plane runs: the provider against its API server, and kube-vip
// on the node's end of a link, each with the environment its workload was rendered with.
type servedGuest struct {
	t        *testing.T
	gc       *guestCluster
	link     *dataplane.Link
	kubevip  *controlplane.Process
	provider *controlplane.Process
	fwd      string
}

// runDataplane starts the real provider and kube-vip binary with the environment, arguments and
// ServiceAccount of the workloads the operator's releases created in the guest. Only what a pod is
// given is replaced: the kubeconfig (the ServiceAccount's token, as mounted in a pod), the node's
// name behind fieldRef spec.nodeName, and the network the node is attached to: the link.
func runDataplane(t *testing.T, gc *guestCluster, link *dataplane.Link, kubevipBinary, providerBinary string) *servedGuest {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s := &servedGuest{t: t, gc: gc, link: link}
	ds, err := gc.direct.AppsV1().DaemonSets("kube-system").Get(ctx, chartvalues.KubevipNameOverride, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("our kube-vip DaemonSet: %v", err)
	}
	fields := map[string]string{"spec.nodeName": "node-1", "metadata.namespace": "kube-system"}

	// kube-vip-cloud-provider, as startProvider runs it.
	s.provider = startProvider(t, gc, providerBinary)

	// kube-vip, in the node's network namespace, reaching the guest API server through a forwarder
	// on the node's loopback.
	u, err := url.Parse(gc.guest.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	if s.fwd, err = dataplane.Forward(ctx, link.Node, u.Host); err != nil {
		t.Fatal(err)
	}
	s.kubevip = s.startKubevip(kubevipBinary, ds.Spec.Template.Spec.Containers[0], ds.Spec.Template.Spec.ServiceAccountName, fields)
	return s
}

func (s *servedGuest) startKubevip(binary string, c corev1.Container, serviceAccount string, fields map[string]string) *controlplane.Process {
	t := s.t
	t.Helper()
	env, err := dataplane.ContainerEnv(c, fields)
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	if _, err := dataplane.PodKubeconfig(s.gc.guest.Config, "kube-system", serviceAccount, home, "https://"+s.fwd); err != nil {
		t.Fatal(err)
	}
	p, err := dataplane.StartIn(s.link.Node, binary, nil, home, env, append(c.Command, c.Args...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(10 * time.Second) })
	return p
}

// logs is the end of both processes' output, for a failure message.
func (s *servedGuest) logs() string {
	return fmt.Sprintf("kube-vip's output ends:\n%s\nkube-vip-cloud-provider's output ends:\n%s",
		rig.LastLines(s.kubevip.Logs(), 40), rig.LastLines(s.provider.Logs(), 25))
}

// loadBalancer creates a LoadBalancer Service in the guest and waits for the provider to give it
// an address from the pool the operator wrote: the annotation kube-vip reads.
func (s *servedGuest) loadBalancer(name string) netip.Addr {
	t := s.t
	t.Helper()
	ctx := context.Background()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "web", Port: 8080, TargetPort: intstr.FromInt32(8080)}}},
	}
	if _, err := s.gc.direct.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got netip.Addr
	if !rig.Within(60*time.Second, func() bool {
		x, err := s.gc.direct.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		a, err := netip.ParseAddr(x.Annotations[cloudprovider.LoadBalancerIPsKey])
		got = a
		return err == nil
	}) {
		t.Fatalf("kube-vip-cloud-provider gave Service default/%s no address\n%s", name, s.logs())
	}
	return got
}

// served shows that kube-vip serves addr: it reports it on the Service, the address is on the
// node's interface, and a client on the link reaches a listener on the node at that address, its
// hardware address learnt over ARP being the node's.
func (s *servedGuest) served(service string, addr netip.Addr) {
	t := s.t
	t.Helper()
	ctx := context.Background()
	if !rig.Within(60*time.Second, func() bool {
		x, err := s.gc.direct.CoreV1().Services("default").Get(ctx, service, metav1.GetOptions{})
		return err == nil && len(x.Status.LoadBalancer.Ingress) > 0 && x.Status.LoadBalancer.Ingress[0].IP == addr.String()
	}) {
		t.Fatalf("kube-vip did not report %s on Service default/%s\n%s", addr, service, s.logs())
	}
	if !s.bound(addr, 30*time.Second) {
		t.Fatalf("kube-vip did not bind %s on %s\n%s", addr, s.link.NodeInterface, s.logs())
	}
	line, err := reach(s.link, addr)
	if err != nil || !strings.Contains(line, addr.String()) {
		t.Fatalf("the client read %q, %v from %s:18080\n%s", line, err, addr, s.logs())
	}
	mac, err := s.link.ClientNeighbour(addr)
	if err != nil {
		t.Fatal(err)
	}
	nodeMAC, err := s.link.NodeMAC()
	if err != nil {
		t.Fatal(err)
	}
	if mac.String() != nodeMAC.String() {
		t.Errorf("the client resolved %s to %s; the node's interface is %s", addr, mac, nodeMAC)
	}
	t.Logf("a client on the link reached %s over ARP (%s): %s", addr, mac, strings.TrimSpace(line))
}

// bound reports whether addr comes to be on the node's interface within timeout.
func (s *servedGuest) bound(addr netip.Addr, timeout time.Duration) bool {
	return rig.Within(timeout, func() bool {
		addrs, err := s.link.Addresses()
		if err != nil {
			return false
		}
		for _, a := range addrs {
			if a == addr {
				return true
			}
		}
		return false
	})
}

// TestDataPlaneServesTheFloatingIP: with the default kube-fip-config, from a repository that holds
// older charts beside the pinned ones (which are the newest upstream releases), the operator installs the pinned kube-vip chart 0.9.9 with
// image v1.0.0 and the kube-vip-cloud-provider chart 0.2.10 into a guest, with and without the
// Harvester cloud provider's DaemonSet. The real kube-vip-cloud-provider then gives a LoadBalancer
// Service the FloatingIP, the real kube-vip binds it on the node's interface, and a client in
// another network namespace reaches a listener at that address over ARP.
//
// The original operator's default values name image v0.6.4, which the Go module proxy does not
// serve; v0.7.2 is of the same generation (vip_subnet appended to the address as it is). Forced
// onto chart 0.9.9, whose vip_subnet "32" that generation misreads, the operator translates the
// value and says so in an Event, and the real kube-vip v0.7.2 serves the address. Run with the
// value as the chart renders it, the same kube-vip fails to parse the address and serves nothing:
// the test sees a value kube-vip cannot parse.
func TestDataPlaneServesTheFloatingIP(t *testing.T) {
	dp := realDataplane(t)
	repo := chartrepo.ChartRepoForTest(t,
		chartrepo.KubevipChart("0.9.7"), chartrepo.KubevipChart(config.DefaultKubevipChartVersion),
		chartrepo.KubevipCloudProviderChart("0.2.4"), chartrepo.KubevipCloudProviderChart(config.DefaultKubevipCloudProviderChartVersion))
	f := newFixture(t, "kube-fip-dataplane")
	proxy := f.shard.StartClusterProxy(t)
	// The default kube-fip-config but for the repository: kube-vip goes into clusters labelled
	// kube-vip=true.
	base := map[string]string{config.KeyKubevipChartRepoURL: repo.URL}
	f.operatorConfig(base)
	f.operator(controlplane.StandInDigestsArg(chartrepo.KubevipChart("0.9.7"), chartrepo.KubevipCloudProviderChart("0.2.4")))

	const original = "config:\n  vip_interface: enp1s0\nimage:\n  repository: plndr/kube-vip\n  tag: v0.7.2\nenv:\n  prometheus_server: ':8080'\nnodeSelector:\n  node-role.kubernetes.io/master: 'true'\n"
	cases := []struct {
		name      string
		harvester bool
		values    string
		kubevip   string
		translate bool
	}{
		{"defaults-beside-harvester", true, "", dp.Kubevip(), false},
		{"defaults-without-harvester", false, "", dp.Kubevip(), false},
		{"original-values-before-v0.9", true, original, dp.KubevipBefore09(), true},
	}
	for i, c := range cases {
		octet := 20 + i
		t.Run(c.name, func(t *testing.T) {
			cfg := map[string]string{}
			for k, v := range base {
				cfg[k] = v
			}
			if c.values != "" {
				cfg[config.KeyKubevipChartValues] = c.values
			}
			f.operatorConfig(cfg)
			name := fmt.Sprintf("dataplane%d", i)
			g := f.shard.StartGuest(t, name)
			if c.harvester {
				if err := g.InstallHarvesterCloudProvider(); err != nil {
					t.Fatal(err)
				}
			}
			id := fmt.Sprintf("c-m-dplane%02d", i)
			gc := rancherCluster(t, proxy, name, id, map[string]string{config.ClusterLabel: "true"}, g)
			f.extraNamespace(id)
			rangeName := fmt.Sprintf("dataplane-%d", i)
			f.createRange(rangeName, fmt.Sprintf("198.18.%d.0/28", octet))
			f.createFIPIn(id, name+"-kubevip", rangeName, "")
			x := f.waitFIPIn(id, name+"-kubevip", 90*time.Second, "kube-vip installed and the guest configured", func(x *v1.FloatingIP) bool {
				return v1.KubevipInstalled.IsTrue(x) && v1.GuestConfigured.IsTrue(x)
			})
			fip := netip.MustParseAddr(x.Status.IPAddress)
			msg := message(x.Status.Conditions, v1.KubevipInstalled)
			if !strings.Contains(msg, "chart kube-vip "+config.DefaultKubevipChartVersion) || !strings.Contains(msg, "chart kube-vip-cloud-provider "+config.DefaultKubevipCloudProviderChartVersion) {
				t.Errorf("KubevipInstalled does not name the pinned charts: %q", msg)
			}
			if c.harvester {
				if _, err := gc.direct.AppsV1().DaemonSets("kube-system").Get(context.Background(), "kube-vip", metav1.GetOptions{}); err != nil {
					t.Errorf("the Harvester cloud provider's DaemonSet: %v", err)
				}
			}
			translated := f.shard.HasEvent(t, id, name+"-kubevip", corev1.EventTypeNormal, v1.ReasonKubevipTranslated, "vip_subnet")
			if translated != c.translate {
				var seen []string
				for _, e := range f.shard.Events(t, id, name+"-kubevip") {
					seen = append(seen, e.Reason+": "+e.Message)
				}
				t.Errorf("an Event %s about vip_subnet: %v; want %v; the Events: %q", v1.ReasonKubevipTranslated, translated, c.translate, seen)
			}

			link, err := dataplane.NewLink("enp1s0", netip.MustParsePrefix(fmt.Sprintf("198.18.%d.0/24", octet)),
				netip.MustParseAddr(fmt.Sprintf("198.18.%d.100", octet)), netip.MustParseAddr(fmt.Sprintf("198.18.%d.200", octet)))
			if err != nil {
				t.Fatal(err)
			}
			s := runDataplane(t, gc, link, c.kubevip, dp.Provider())
			t.Cleanup(link.Close)
			addr := s.loadBalancer("web")
			if addr != fip {
				t.Fatalf("the provider gave the Service %s; the FloatingIP is %s", addr, fip)
			}
			s.served("web", addr)

			if !c.translate {
				return
			}
			// The same kube-vip given vip_subnet as chart 0.9.9 renders it, untranslated.
			_ = s.kubevip.Stop(10 * time.Second)
			if err := link.RemoveAddress(addr); err != nil {
				t.Fatal(err)
			}
			ds, err := gc.direct.AppsV1().DaemonSets("kube-system").Get(context.Background(), chartvalues.KubevipNameOverride, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			kv := ds.Spec.Template.Spec.Containers[0]
			kv.Env = append(kv.Env, corev1.EnvVar{Name: "vip_subnet", Value: "32"})
			s.kubevip = s.startKubevip(c.kubevip, kv, ds.Spec.Template.Spec.ServiceAccountName, map[string]string{"spec.nodeName": "node-1"})
			if err := s.kubevip.WaitForLog(context.Background(), "could not parse address", 60*time.Second); err != nil {
				t.Fatalf("kube-vip v0.7.2 with vip_subnet \"32\": %v\n%s", err, s.logs())
			}
			if s.bound(addr, 3*time.Second) {
				t.Errorf("kube-vip v0.7.2 bound %s from vip_subnet \"32\"", addr)
			}
		})
	}
}
