package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/guests"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// guestCluster is a Rancher guest cluster as the operator sees it: a namespace c-m-xxxx, a
// management cluster of that name, a provisioning cluster in fleet-default pointing at it, the
// kubeconfig Secret Rancher writes, and a real API server behind the test cluster proxy.
type guestCluster struct {
	name   string
	id     string
	token  string
	guest  *controlplane.Guest
	direct kubernetes.Interface
	world  *rancher.World
	// system is the guest's kube-system as its API server has it: another name where the server
	// answers for several clusters (share).
	system string
}

// rancherCluster creates the Rancher objects of a guest cluster reachable through proxy. With a nil
// guest API server the proxy still knows the cluster (for the disconnected and provisioning modes).
func rancherCluster(t *testing.T, proxy *guests.ClusterProxy, name, id string, labels map[string]string, g *controlplane.Guest) *guestCluster {
	t.Helper()
	return rancherClusterOn(t, shards.Of(t), proxy, name, id, labels, g)
}

// rancherClusterOn is rancherCluster on the control plane of shard, one the test took or started.
func rancherClusterOn(t *testing.T, shard *suite.Suite, proxy *guests.ClusterProxy, name, id string, labels map[string]string, g *controlplane.Guest) *guestCluster {
	t.Helper()
	shard.CreateNamespace(t, id)
	gc := &guestCluster{name: name, id: id, token: "token-" + name + "-1", guest: g, world: shard.Rancher(t), system: "kube-system"}
	if g != nil {
		gc.direct = kubernetes.NewForConfigOrDie(g.Config)
		if err := proxy.Register(id, g, gc.token); err != nil {
			t.Fatal(err)
		}
	}
	kc, err := proxy.Kubeconfig(id, gc.token)
	if err != nil {
		t.Fatal(err)
	}
	rig.Must(t, gc.world.AddCluster(rancher.Guest{Name: name, ID: id, Labels: labels, Kubeconfig: kc}))
	return gc
}

// share makes the cluster reach guest API server g, which answers for other clusters too, with a
// kube-system of its own there (guests.ClusterProxy.RegisterSharing): for clusters the operator
// writes nothing into but their kube-system/kubevip.
func (gc *guestCluster) share(t *testing.T, proxy *guests.ClusterProxy, g *controlplane.Guest) {
	t.Helper()
	gc.guest, gc.direct, gc.system = g, kubernetes.NewForConfigOrDie(g.Config), "ks-"+gc.id
	rig.Must(t, proxy.RegisterSharing(gc.id, g, gc.token, gc.system))
}

// rotate gives the cluster a new token, as Rancher does: the proxy rejects the old one from now on
// and the Secret carries the new kubeconfig.
func (gc *guestCluster) rotate(t *testing.T, proxy *guests.ClusterProxy) {
	t.Helper()
	gc.token += "r"
	proxy.SetToken(gc.id, gc.token)
	kc, err := proxy.Kubeconfig(gc.id, gc.token)
	if err != nil {
		t.Fatal(err)
	}
	rig.Must(t, gc.world.SetKubeconfig(gc.name+"-kubeconfig", kc))
}

// kubevipCIDR returns cidr-global of the guest's kube-system/kubevip, "" when there is none.
func (gc *guestCluster) kubevipCIDR(t *testing.T) string {
	t.Helper()
	cm, err := gc.direct.CoreV1().ConfigMaps(gc.system).Get(context.Background(), "kubevip", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data["cidr-global"]
}

// hasCIDR waits up to timeout for the guest's cidr-global to be want.
func (gc *guestCluster) hasCIDR(t *testing.T, want string, timeout time.Duration) bool {
	t.Helper()
	return rig.Within(timeout, func() bool { return gc.kubevipCIDR(t) == want })
}

func (gc *guestCluster) waitCIDR(t *testing.T, want string, timeout time.Duration) {
	t.Helper()
	rig.Eventually(t, timeout, fmt.Sprintf("guest %s kube-system/kubevip cidr-global=%s", gc.name, want), func() bool {
		return gc.kubevipCIDR(t) == want
	})
}

// waitGuestAddress waits until the guest's kube-system/kubevip cidr-global is the address its
// FloatingIP fipName holds.
func (f *fixture) waitGuestAddress(gc *guestCluster, fipName string, timeout time.Duration) {
	f.t.Helper()
	x := f.waitFIPIn(gc.id, fipName, timeout, "an address", suite.Allocated)
	gc.waitCIDR(f.t, kubevipconfig.CIDR(netip.MustParseAddr(x.Status.IPAddress)), timeout)
}

// knownHarvester makes display the name of a Harvester cluster in Rancher, as importing it does: a
// management cluster of that display name (one per name, whoever asks), deleted when the test
// ends. A range of a Harvester cluster Rancher does not know is not Ready.
func (f *fixture) knownHarvester(display string) {
	f.t.Helper()
	if f.world == nil {
		f.world = f.shard.Rancher(f.t)
	}
	sum := sha256.Sum256([]byte(display))
	rig.Must(f.t, f.world.AddManagementCluster("c-m-hv"+hex.EncodeToString(sum[:])[:12], display))
}

// createRangeFor creates a range of the fixture for a Harvester cluster Rancher knows and a
// network.
func (f *fixture) createRangeFor(name, cidr, harvesterName, network string) {
	f.t.Helper()
	f.knownHarvester(harvesterName)
	_, err := f.api.FloatingIPRange().Create(&v1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			v1.AnnotationHarvesterClusterName: harvesterName,
			v1.AnnotationHarvesterNetworkName: network,
		}},
		Spec: v1.FloatingIPRangeSpec{IPRange: cidr},
	})
	if err != nil {
		f.t.Fatalf("creating range %s: %v", name, err)
	}
	f.ranges = append(f.ranges, name)
}

// guestPasses is how many passes the operator serving metrics on port has finished over guest
// cluster name, whatever state they left it in.
func guestPasses(t *testing.T, port int, name string) float64 {
	t.Helper()
	return guestPassesIn(t, port, name, "")
}

// guestPassesIn is how many passes over guest cluster name left it in state (any state when "").
func guestPassesIn(t *testing.T, port int, name, state string) float64 {
	t.Helper()
	match := []string{`guestclustername="` + name + `"`}
	if state != "" {
		match = append(match, `state="`+state+`"`)
	}
	return metricSum(t, port, "kubefipoperator_guestcluster_passes_total", match...)
}

// metricSum sums the samples of metric name served on port whose labels contain every one of
// match (a metric without labels: its one sample).
func metricSum(t *testing.T, port int, name string, match ...string) float64 {
	t.Helper()
	_, body := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	sum := 0.0
	for _, line := range strings.Split(body, "\n") {
		i := strings.LastIndexByte(line, ' ')
		if !(strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ")) || i < 0 || slices.ContainsFunc(match, func(m string) bool { return !strings.Contains(line[:i], m) }) {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

// waitGuestPasses waits until two more passes over each of the guest clusters have finished. The
// second began after the first ended, so at least one whole pass ran after the call: a known later
// event, after which what such a pass must not do is shown not to have happened.
func waitGuestPasses(t *testing.T, port int, clusters ...*guestCluster) {
	t.Helper()
	want := make([]float64, len(clusters))
	for i, gc := range clusters {
		want[i] = guestPasses(t, port, gc.name) + 2
	}
	rig.Eventually(t, time.Minute, fmt.Sprintf("two more passes over each of %d guest clusters", len(clusters)), func() bool {
		for i, gc := range clusters {
			if guestPasses(t, port, gc.name) < want[i] {
				return false
			}
		}
		return true
	})
}
