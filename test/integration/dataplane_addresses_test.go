package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/cloudprovider"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/dataplane"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// dualStackServiceCIDRs is the service-cluster-ip-range of the guests below: with one range of
// each family the guest API server accepts RequireDualStack and IPv6 Services, as a dual-stack
// RKE2 cluster does.
const dualStackServiceCIDRs = "10.0.0.0/24,fd00:10:96::/112"

// addressesGuest is a dual-stack guest behind the cluster proxy, into which the operator installs
// the pinned kube-vip and kube-vip-cloud-provider charts, and the fixture that makes its
// FloatingIPs.
type addressesGuest struct {
	t  *testing.T
	f  *fixture
	gc *guestCluster
	// cmNamespace and cmName are where the installed provider reads its pools.
	cmNamespace, cmName string
}

// newAddressesGuest starts the operator for fixture namespace ns with the default kube-fip-config
// but for the chart repository (the pinned charts), a dual-stack guest named name whose Rancher
// cluster id is id, labelled kube-vip=true, and creates the guest namespaces given.
func newAddressesGuest(t *testing.T, ns, name, id string, guestNamespaces ...string) *addressesGuest {
	t.Helper()
	repo := chartrepo.ChartRepoForTest(t, chartrepo.KubevipChart(config.DefaultKubevipChartVersion),
		chartrepo.KubevipCloudProviderChart(config.DefaultKubevipCloudProviderChartVersion))
	f := newFixture(t, ns)
	proxy := f.shard.StartClusterProxy(t)
	f.operatorConfig(map[string]string{config.KeyKubevipChartRepoURL: repo.URL})
	f.operator()
	g, err := f.shard.Env.StartGuestWithServiceCIDRs(name, dualStackServiceCIDRs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.StopSoon)
	gc := rancherCluster(t, proxy, name, id, map[string]string{config.ClusterLabel: "true"}, g)
	f.extraNamespace(id)
	for _, gns := range guestNamespaces {
		if _, err := gc.direct.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return &addressesGuest{t: t, f: f, gc: gc}
}

// fip creates FloatingIP name in the cluster's namespace, naming the cluster, holding ip from
// rangeName, for the guest namespace guestNS when it is not empty.
func (a *addressesGuest) fip(name, rangeName, ip, guestNS string) {
	a.t.Helper()
	x := a.f.fip(name, rangeName, ip)
	x.Namespace = a.gc.id
	x.Annotations[v1.AnnotationClusterName] = a.gc.name
	if guestNS != "" {
		x.Annotations[v1.AnnotationGuestNamespace] = guestNS
	}
	if _, err := a.f.api.FloatingIP().Create(x); err != nil {
		a.t.Fatalf("creating FloatingIP %s/%s: %v", a.gc.id, name, err)
	}
}

// configured waits until each FloatingIP holds its address, kube-vip is installed and the guest
// configured, and then learns where the installed provider reads.
func (a *addressesGuest) configured(names ...string) {
	a.t.Helper()
	for _, name := range names {
		a.f.waitFIPIn(a.gc.id, name, 2*time.Minute, "an address, kube-vip installed and the guest configured", func(x *v1.FloatingIP) bool {
			return suite.Allocated(x) && v1.KubevipInstalled.IsTrue(x) && v1.GuestConfigured.IsTrue(x)
		})
	}
	if a.cmName == "" {
		ns, name, err := cloudprovider.ProviderConfigMap(context.Background(), a.gc.direct, "kube-system", "kube-vip-cloud-provider")
		if err != nil {
			a.t.Fatalf("the installed kube-vip-cloud-provider Deployment: %v", err)
		}
		a.cmNamespace, a.cmName = ns, name
	}
}

// configMap is the provider's ConfigMap, nil while there is none.
func (a *addressesGuest) configMap() *corev1.ConfigMap {
	a.t.Helper()
	cm, err := a.gc.direct.CoreV1().ConfigMaps(a.cmNamespace).Get(context.Background(), a.cmName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		a.t.Fatal(err)
	}
	return cm
}

// waitConfigMap waits until the provider's ConfigMap holds exactly the operator's keys want
// (cidr-* keys; a key set to "" must be absent) and the owned-keys annotation is owned ("" for
// none), reporting what it holds on timeout.
func (a *addressesGuest) waitConfigMap(what string, want map[string]string, owned string) *corev1.ConfigMap {
	a.t.Helper()
	var last *corev1.ConfigMap
	ok := rig.Within(60*time.Second, func() bool {
		last = a.configMap()
		if last == nil {
			return false
		}
		for k, v := range want {
			got, has := last.Data[k]
			if (v == "" && has) || (v != "" && got != v) {
				return false
			}
		}
		got, has := last.Annotations[kubevipconfig.OwnedKeysAnnotation]
		return got == owned && (owned != "" || !has)
	})
	if !ok {
		desc := "no ConfigMap"
		if last != nil {
			desc = fmt.Sprintf("data %v, annotations %v", last.Data, last.Annotations)
		}
		a.t.Fatalf("%s/%s: timed out waiting for %s (keys %v, owned-keys %q); it holds %s", a.cmNamespace, a.cmName, what, want, owned, desc)
	}
	return last
}

// startProvider runs the real kube-vip-cloud-provider against the guest API server as the
// operator's release renders it: its command, without the binary's path, plus what running out of
// a cluster needs (--OutSideCluster makes it read $HOME/.kube/config; no serving port on this
// machine's loopback). The provider only talks to the API server, so it needs no network
// namespace.
func startProvider(t *testing.T, gc *guestCluster, binary string) *controlplane.Process {
	t.Helper()
	dep, err := gc.direct.AppsV1().Deployments("kube-system").Get(context.Background(), "kube-vip-cloud-provider", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the kube-vip-cloud-provider Deployment: %v", err)
	}
	pc := dep.Spec.Template.Spec.Containers[0]
	env, err := dataplane.ContainerEnv(pc, map[string]string{"spec.nodeName": "node-1", "metadata.namespace": "kube-system"})
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	kubeconfig, err := dataplane.PodKubeconfig(gc.guest.Config, "kube-system", dep.Spec.Template.Spec.ServiceAccountName, home, "")
	if err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{}, pc.Command[1:]...), pc.Args...)
	args = append(args, "--kubeconfig="+kubeconfig, "--OutSideCluster", "--secure-port=0")
	p, err := dataplane.StartIn(-1, binary, nil, home, env, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(10 * time.Second) })
	return p
}

var (
	singleStack  = corev1.IPFamilyPolicySingleStack
	requireDual  = corev1.IPFamilyPolicyRequireDualStack
	ipv4Only     = []corev1.IPFamily{corev1.IPv4Protocol}
	ipv6Only     = []corev1.IPFamily{corev1.IPv6Protocol}
	ipv4ThenIPv6 = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
)

// loadBalancerIn creates a LoadBalancer Service namespace/name of the families given (the API
// server's default when policy is nil) and waits for kube-vip-cloud-provider to give it its
// addresses: the kube-vip.io/loadbalancerIPs annotation, which kube-vip serves.
func (a *addressesGuest) loadBalancerIn(provider *controlplane.Process, namespace, name string, policy *corev1.IPFamilyPolicy, families []corev1.IPFamily) []netip.Addr {
	a.t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, IPFamilyPolicy: policy, IPFamilies: families,
			Ports: []corev1.ServicePort{{Name: "web", Port: 8080, TargetPort: intstr.FromInt32(8080)}}},
	}
	created, err := a.gc.direct.CoreV1().Services(namespace).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		a.t.Fatalf("creating Service %s/%s: %v", namespace, name, err)
	}
	if policy != nil && !slices.Equal(created.Spec.IPFamilies, families) {
		a.t.Fatalf("the guest API server gave Service %s/%s families %v, want %v", namespace, name, created.Spec.IPFamilies, families)
	}
	return a.addresses(provider, namespace, name)
}

// addresses waits until Service namespace/name carries the provider's addresses and returns them.
func (a *addressesGuest) addresses(provider *controlplane.Process, namespace, name string) []netip.Addr {
	a.t.Helper()
	var got []netip.Addr
	if !rig.Within(60*time.Second, func() bool {
		x, err := a.gc.direct.CoreV1().Services(namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil || x.Annotations[cloudprovider.LoadBalancerIPsKey] == "" {
			return false
		}
		got = nil
		for _, s := range strings.Split(x.Annotations[cloudprovider.LoadBalancerIPsKey], ",") {
			addr, err := netip.ParseAddr(s)
			if err != nil {
				a.t.Fatalf("Service %s/%s: the provider wrote %q", namespace, name, x.Annotations[cloudprovider.LoadBalancerIPsKey])
			}
			got = append(got, addr)
		}
		return true
	}) {
		a.t.Fatalf("kube-vip-cloud-provider gave Service %s/%s no address\nits output ends:\n%s", namespace, name, rig.LastLines(provider.Logs(), 30))
	}
	return got
}

// deleteService deletes namespace/name and waits until it is gone, so that the provider, which
// counts the addresses of existing Services as in use, may hand its addresses out again.
func (a *addressesGuest) deleteService(namespace, name string) {
	a.t.Helper()
	if err := a.gc.direct.CoreV1().Services(namespace).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		a.t.Fatal(err)
	}
	rig.Eventually(a.t, 30*time.Second, "Service "+namespace+"/"+name+" gone", func() bool {
		_, err := a.gc.direct.CoreV1().Services(namespace).Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// deleteFIP deletes one of the cluster's FloatingIPs and waits until it is gone.
func (a *addressesGuest) deleteFIP(name string) {
	a.t.Helper()
	if err := a.f.api.FloatingIP().Delete(a.gc.id, name, nil); err != nil {
		a.t.Fatal(err)
	}
	rig.Eventually(a.t, 30*time.Second, "FloatingIP "+a.gc.id+"/"+name+" gone", func() bool {
		_, err := a.f.api.FloatingIP().Get(a.gc.id, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// watchConfigMap records every version of the provider's ConfigMap after resourceVersion.
func (a *addressesGuest) watchConfigMap(resourceVersion string) (stop func() []*corev1.ConfigMap) {
	a.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := a.gc.direct.CoreV1().ConfigMaps(a.cmNamespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + a.cmName, ResourceVersion: resourceVersion})
	if err != nil {
		cancel()
		a.t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []*corev1.ConfigMap
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok && ev.Type != watch.Bookmark {
				mu.Lock()
				seen = append(seen, cm)
				mu.Unlock()
			}
		}
	}()
	var once sync.Once
	stop = func() []*corev1.ConfigMap {
		once.Do(func() { w.Stop(); cancel(); <-done })
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
	a.t.Cleanup(func() { stop() })
	return stop
}

func addrsText(addrs []netip.Addr) string {
	parts := make([]string, len(addrs))
	for i, a := range addrs {
		parts[i] = a.String()
	}
	return strings.Join(parts, ",")
}

// TestGuestSeveralAddressesWithTheRealProvider: a dual-stack guest gets, through the operator,
// two global IPv4 FloatingIPs, an IPv6 one and one for guest namespace ingress-nginx; the real
// kube-vip-cloud-provider (v0.0.12, as the operator's pinned release renders it) then hands them
// out as the issue says. Two LoadBalancer Services in default get the two IPv4 addresses, one
// each; a Service in ingress-nginx gets the namespace's address while one in another namespace
// gets a global one; a RequireDualStack Service gets an IPv4 address and the IPv6 one. A key a
// person added to the provider's ConfigMap is in every version of it the operator wrote after.
// Deleting a global FloatingIP takes its address out of cidr-global, and the provider hands it out
// no more; deleting the ingress FloatingIP removes cidr-ingress-nginx and the owned-keys
// annotation, and the provider falls back to the global pool for ingress-nginx.
//
// What the provider decided is read from the Services' kube-vip.io/loadbalancerIPs annotation:
// v0.0.12 writes only that (and spec.loadBalancerIP) and returns the Service's status as it is
// (pkg/provider/loadBalancer.go, syncLoadBalancer); status.loadBalancer.ingress is kube-vip's to
// write, once it serves the address (TestDataPlaneServesSeveralAddresses).
func TestGuestSeveralAddressesWithTheRealProvider(t *testing.T) {
	shards.Take(t)
	dp, err := dataplane.BuildDataplane()
	if err != nil {
		t.Fatal(err)
	}
	a := newAddressesGuest(t, "kube-fip-addrs", "addrs", "c-m-addrs001", "ingress-nginx", "shop")
	a.f.createRange("addrs-v4", "198.18.40.0/28")
	a.f.createRange("addrs-v6", "2001:2:0:40::/124")
	var (
		low, high = netip.MustParseAddr("198.18.40.5"), netip.MustParseAddr("198.18.40.9")
		six       = netip.MustParseAddr("2001:2:0:40::5")
		ingress   = netip.MustParseAddr("198.18.40.12")
	)
	const person = "range-team-a"
	const personValue = "198.18.41.1-198.18.41.9"

	// The first address, then a person's key, then the rest: every write that adds an address
	// meets the person's key.
	a.fip("addrs-kubevip", "addrs-v4", low.String(), "")
	a.configured("addrs-kubevip")
	a.waitConfigMap("the first address", map[string]string{kubevipconfig.GlobalCIDRKey: "198.18.40.5/32"}, "")
	patch, _ := json.Marshal(map[string]interface{}{"data": map[string]string{person: personValue}})
	mine, err := a.gc.direct.CoreV1().ConfigMaps(a.cmNamespace).Patch(context.Background(), a.cmName, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	versions := a.watchConfigMap(mine.ResourceVersion)

	a.fip("addrs-second", "addrs-v4", high.String(), "")
	a.fip("addrs-kubevip-ipv6", "addrs-v6", six.String(), "")
	a.fip("addrs-ingress", "addrs-v4", ingress.String(), "ingress-nginx")
	a.configured("addrs-second", "addrs-kubevip-ipv6", "addrs-ingress")
	a.waitConfigMap("all four addresses", map[string]string{
		kubevipconfig.GlobalCIDRKey:            "198.18.40.5/32,198.18.40.9/32,2001:2:0:40::5/128",
		kubevipconfig.CIDRKey("ingress-nginx"): "198.18.40.12/32",
	}, "cidr-ingress-nginx")

	provider := startProvider(t, a.gc, dp.Provider())

	// Two Services in default: one IPv4 address each, the two global ones.
	webA := a.loadBalancerIn(provider, "default", "web-a", nil, nil)
	webB := a.loadBalancerIn(provider, "default", "web-b", nil, nil)
	if len(webA) != 1 || len(webB) != 1 || webA[0] == webB[0] ||
		!slices.Contains([]netip.Addr{low, high}, webA[0]) || !slices.Contains([]netip.Addr{low, high}, webB[0]) {
		t.Fatalf("default/web-a got %s and default/web-b %s; want %s and %s, one each", addrsText(webA), addrsText(webB), low, high)
	}
	t.Logf("default/web-a got %s, default/web-b %s", webA[0], webB[0])

	// ingress-nginx has a pool of its own: its address, and no global one.
	ing := a.loadBalancerIn(provider, "ingress-nginx", "controller", nil, nil)
	if addrsText(ing) != ingress.String() {
		t.Fatalf("ingress-nginx/controller got %s; want the namespace's %s", addrsText(ing), ingress)
	}
	// shop has none: a global address, the one web-b frees.
	a.deleteService("default", "web-b")
	shop := a.loadBalancerIn(provider, "shop", "web", nil, nil)
	if addrsText(shop) != webB[0].String() {
		t.Fatalf("shop/web got %s; want the free global address %s (never ingress-nginx's %s)", addrsText(shop), webB[0], ingress)
	}

	// RequireDualStack: one free IPv4 address and the IPv6 one.
	a.deleteService("shop", "web")
	dual := a.loadBalancerIn(provider, "default", "dual", &requireDual, ipv4ThenIPv6)
	if addrsText(dual) != webB[0].String()+","+six.String() {
		t.Fatalf("the RequireDualStack Service default/dual got %s; want %s,%s", addrsText(dual), webB[0], six)
	}

	// The lowest global address goes: it leaves cidr-global, and a new Service, for which the
	// provider takes the lowest free address, gets the other one.
	a.deleteFIP("addrs-kubevip")
	a.waitConfigMap("the deleted FloatingIP's address gone", map[string]string{
		kubevipconfig.GlobalCIDRKey:            "198.18.40.9/32,2001:2:0:40::5/128",
		kubevipconfig.CIDRKey("ingress-nginx"): "198.18.40.12/32",
	}, "cidr-ingress-nginx")
	a.deleteService("default", "web-a")
	a.deleteService("default", "dual")
	after := a.loadBalancerIn(provider, "default", "after", &singleStack, ipv4Only)
	if addrsText(after) != high.String() {
		t.Fatalf("default/after got %s once %s's FloatingIP was deleted; want %s", addrsText(after), low, high)
	}

	// The ingress address goes: its key and the owned-keys annotation go with it, and ingress-nginx
	// takes from the global pool.
	a.deleteFIP("addrs-ingress")
	a.waitConfigMap("cidr-ingress-nginx and owned-keys gone", map[string]string{
		kubevipconfig.GlobalCIDRKey:            "198.18.40.9/32,2001:2:0:40::5/128",
		kubevipconfig.CIDRKey("ingress-nginx"): "",
	}, "")
	a.deleteService("default", "after")
	a.deleteService("ingress-nginx", "controller")
	ing = a.loadBalancerIn(provider, "ingress-nginx", "controller-2", nil, nil)
	if addrsText(ing) != high.String() {
		t.Fatalf("ingress-nginx/controller-2 got %s without a pool of its own; want the global %s", addrsText(ing), high)
	}

	// The person's key is in every version since it was added.
	seen := versions()
	writes := 0
	for _, cm := range seen {
		if cm.Data[person] != personValue {
			t.Errorf("ConfigMap version %s holds %s=%q (data %v); the person's key was lost", cm.ResourceVersion, person, cm.Data[person], cm.Data)
		}
		writes++
	}
	if writes < 3 {
		t.Errorf("the watch saw %d versions of the ConfigMap after the person's key; want at least the three writes (all four, one global gone, ingress gone)", writes)
	}
	t.Logf("%s stayed through %d versions of %s/%s", person, writes, a.cmNamespace, a.cmName)
}

// addIPv6 gives the link's two ends an IPv6 address each in prefix (RFC 5180's benchmarking
// range 2001:2::/48, beside RFC 2544's 198.18.0.0/15), without duplicate address detection, so
// that the client has an on-link route to the guest's IPv6 address.
func addIPv6(link *dataplane.Link, prefix netip.Prefix, node, client netip.Addr) error {
	for _, end := range []struct {
		ns   netns.NsHandle
		name string
		addr netip.Addr
	}{{link.Node, link.NodeInterface, node}, {link.Client, "eth0", client}} {
		h, err := netlink.NewHandleAt(end.ns)
		if err != nil {
			return err
		}
		l, err := h.LinkByName(end.name)
		if err == nil {
			err = h.AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: end.addr.AsSlice(), Mask: net.CIDRMask(prefix.Bits(), 128)}, Flags: unix.IFA_F_NODAD})
		}
		h.Close()
		if err != nil {
			return fmt.Errorf("adding %s to %s: %w", end.addr, end.name, err)
		}
	}
	return nil
}

// dadDone6 waits until every IPv6 address on the interface name in ns, the link-local one too,
// has passed duplicate address detection (is no longer tentative), and if want is valid until it
// is one of them: a link just made has tentative addresses for a second or two, to which nothing
// can bind, where a node's interface has long had them.
func dadDone6(ns netns.NsHandle, name string, want netip.Addr, timeout time.Duration) error {
	var last string
	ok := rig.Within(timeout, func() bool {
		h, err := netlink.NewHandleAt(ns)
		if err != nil {
			last = err.Error()
			return false
		}
		defer h.Close()
		l, err := h.LinkByName(name)
		if err != nil {
			last = err.Error()
			return false
		}
		addrs, err := h.AddrList(l, netlink.FAMILY_V6)
		if err != nil {
			last = err.Error()
			return false
		}
		found, linkLocal := !want.IsValid(), false
		var parts []string
		for _, a := range addrs {
			parts = append(parts, fmt.Sprintf("%s flags %#x", a.IPNet, a.Flags))
			if a.Flags&(unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED) != 0 {
				last = strings.Join(parts, "; ")
				return false
			}
			ip, _ := netip.AddrFromSlice(a.IP)
			found = found || ip == want
			linkLocal = linkLocal || ip.IsLinkLocalUnicast()
		}
		last = strings.Join(parts, "; ")
		return found && linkLocal
	})
	if !ok {
		return fmt.Errorf("the IPv6 addresses of %s did not pass duplicate address detection within %s: %s", name, timeout, last)
	}
	return nil
}

// reach connects from the client to addr:18080, where a listener on the node answers, and returns
// the line read.
func reach(link *dataplane.Link, addr netip.Addr) (string, error) {
	ln, err := dataplane.ListenIn(link.Node, net.JoinHostPort(addr.String(), "18080"))
	if err != nil {
		return "", err
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = fmt.Fprintf(c, "served by node-1 at %s\n", c.LocalAddr())
			_ = c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := dataplane.DialIn(ctx, link.Client, net.JoinHostPort(addr.String(), "18080"))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return bufio.NewReader(conn).ReadString('\n')
}

// TestDataPlaneServesSeveralAddresses: a dual-stack guest with two IPv4 FloatingIPs and an IPv6
// one, the pinned kube-vip (v1.0.0) on the node's end of a link and the real provider. Two
// LoadBalancer Services get the two IPv4 addresses, and kube-vip serves both: each is on the
// node's interface, reported on its Service, and a client on the link reaches a listener at it,
// resolved over ARP to the node. An IPv6 Service gets the IPv6 address, and kube-vip serves it
// too: it reports it on the Service, puts it on the node's interface with its NDP responder
// running, and the client reaches it over neighbour discovery, resolved to the node.
//
// kube-vip v1.0.0 opens its NDP responder once per IPv6 address, on the interface's link-local
// address, and does not try again when that fails (pkg/cluster/service.go, layer2Update): started
// on an interface that came up a moment ago, whose link-local address is still tentative, it logs
// "failed to create new NDP Responder ... bind: cannot assign requested address" and sends no
// advertisements for that address. A node's interface has long had its link-local address, so the
// test waits for the link's to pass it before starting kube-vip.
func TestDataPlaneServesSeveralAddresses(t *testing.T) {
	shards.Take(t)
	dp := realDataplane(t)
	a := newAddressesGuest(t, "kube-fip-dpaddrs", "dpaddrs", "c-m-dpaddr01")
	a.f.createRange("dpaddrs-v4", "198.18.41.0/28")
	a.f.createRange("dpaddrs-v6", "2001:2:0:41::/124")
	low, high := netip.MustParseAddr("198.18.41.5"), netip.MustParseAddr("198.18.41.9")
	six := netip.MustParseAddr("2001:2:0:41::5")
	a.fip("dpaddrs-kubevip", "dpaddrs-v4", low.String(), "")
	a.fip("dpaddrs-second", "dpaddrs-v4", high.String(), "")
	a.fip("dpaddrs-kubevip-ipv6", "dpaddrs-v6", six.String(), "")
	a.configured("dpaddrs-kubevip", "dpaddrs-second", "dpaddrs-kubevip-ipv6")
	a.waitConfigMap("the three addresses", map[string]string{kubevipconfig.GlobalCIDRKey: "198.18.41.5/32,198.18.41.9/32,2001:2:0:41::5/128"}, "")

	link, err := dataplane.NewLink("enp1s0", netip.MustParsePrefix("198.18.41.0/24"),
		netip.MustParseAddr("198.18.41.100"), netip.MustParseAddr("198.18.41.200"))
	if err != nil {
		t.Fatal(err)
	}
	if err := addIPv6(link, netip.MustParsePrefix("2001:2:0:41::/64"), netip.MustParseAddr("2001:2:0:41::100"), netip.MustParseAddr("2001:2:0:41::200")); err != nil {
		link.Close()
		t.Fatal(err)
	}
	// The node's interface has its link-local address, as a node's has long had, before kube-vip
	// starts: kube-vip's NDP responder listens on it.
	for _, end := range []struct {
		ns   netns.NsHandle
		name string
	}{{link.Node, link.NodeInterface}, {link.Client, "eth0"}} {
		if err := dadDone6(end.ns, end.name, netip.Addr{}, 10*time.Second); err != nil {
			link.Close()
			t.Fatal(err)
		}
	}
	s := runDataplane(t, a.gc, link, dp.Kubevip(), dp.Provider())
	t.Cleanup(link.Close)

	webA := s.loadBalancer("web-a")
	webB := s.loadBalancer("web-b")
	if webA == webB || !slices.Contains([]netip.Addr{low, high}, webA) || !slices.Contains([]netip.Addr{low, high}, webB) {
		t.Fatalf("web-a got %s and web-b %s; want %s and %s, one each", webA, webB, low, high)
	}
	s.served("web-a", webA)
	s.served("web-b", webB)

	// The IPv6 address, to an IPv6 Service.
	got := a.loadBalancerIn(s.provider, "default", "web-v6", &singleStack, ipv6Only)
	if addrsText(got) != six.String() {
		t.Fatalf("the IPv6 Service got %s; want %s", addrsText(got), six)
	}
	if !rig.Within(60*time.Second, func() bool {
		x, err := a.gc.direct.CoreV1().Services("default").Get(context.Background(), "web-v6", metav1.GetOptions{})
		return err == nil && len(x.Status.LoadBalancer.Ingress) > 0 && x.Status.LoadBalancer.Ingress[0].IP == six.String()
	}) {
		t.Fatalf("kube-vip did not report %s on Service default/web-v6\n%s", six, s.logs())
	}
	if !s.bound(six, 30*time.Second) {
		t.Fatalf("kube-vip did not bind %s on %s\n%s", six, link.NodeInterface, s.logs())
	}
	if err := dadDone6(link.Node, link.NodeInterface, six, 10*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, s.logs())
	}
	if strings.Contains(s.kubevip.Logs(), "failed to create new NDP Responder") {
		t.Errorf("kube-vip could not start its NDP responder\n%s", s.logs())
	}
	line, err := reach(link, six)
	if err != nil || !strings.Contains(line, six.String()) {
		t.Fatalf("the client read %q, %v from [%s]:18080\n%s", line, err, six, s.logs())
	}
	mac, err := link.ClientNeighbour(six)
	if err != nil {
		t.Fatal(err)
	}
	nodeMAC, err := link.NodeMAC()
	if err != nil {
		t.Fatal(err)
	}
	if mac.String() != nodeMAC.String() {
		t.Errorf("the client resolved %s to %s; the node's interface is %s", six, mac, nodeMAC)
	}
	t.Logf("a client on the link reached %s over neighbour discovery (%s): %s", six, mac, strings.TrimSpace(line))
}
