package e2e

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/node"
)

// guestFIP waits for the guest's FloatingIP, which discovery creates, to hold its address with
// kube-vip installed and the guest configured, and returns its address.
func (s *suite) guestFIP(t *testing.T) netip.Addr { return s.guestFIPIn(t, "") }

// guestFIPIn is guestFIP for a FloatingIP of range rangeName, or of any range for "".
func (s *suite) guestFIPIn(t *testing.T, rangeName string) netip.Addr {
	t.Helper()
	var addr netip.Addr
	rig.Eventually(t, 3*time.Minute, "the guest's FloatingIP Ready, kube-vip installed", func() bool {
		list, err := s.fips.FloatingIP().List(guestID, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			return false
		}
		x := &list.Items[0]
		a, err := netip.ParseAddr(x.Status.IPAddress)
		if err != nil || x.DeletionTimestamp != nil || (rangeName != "" && x.Status.Range != rangeName) ||
			!v1.KubevipInstalled.IsTrue(x) || !v1.GuestConfigured.IsTrue(x) {
			return false
		}
		addr = a
		return true
	})
	return addr
}

// kubevipPod waits for the one Running and Ready pod of kube-vip's DaemonSet in the guest.
func (s *suite) kubevipPod(t *testing.T, not string) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	rig.Eventually(t, 2*time.Minute, "kube-vip's DaemonSet pod Running and Ready on the guest node", func() bool {
		list, err := s.guestKube.CoreV1().Pods("kube-system").List(context.Background(),
			metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + chartvalues.KubevipNameOverride})
		if err != nil {
			return false
		}
		for _, p := range list.Items {
			if string(p.UID) != not && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(p) {
				pod = p
				return true
			}
		}
		return false
	})
	return pod
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// onInterface reports whether addr is on the guest node's interface link, and the interface's
// hardware address.
func (s *suite) onInterface(t *testing.T, link string, addr netip.Addr) (bool, net.HardwareAddr) {
	t.Helper()
	var found bool
	var mac net.HardwareAddr
	rig.Must(t, node.In(s.guest.NodeNamespace, func() error {
		h, err := netlink.NewHandle()
		if err != nil {
			return err
		}
		defer h.Close()
		l, err := h.LinkByName(link)
		if err != nil {
			return err
		}
		mac = l.Attrs().HardwareAddr
		addrs, err := h.AddrList(l, netlink.FAMILY_V4)
		if err != nil {
			return err
		}
		for _, a := range addrs {
			found = found || a.IP.Equal(net.IP(addr.AsSlice()))
		}
		return nil
	}))
	return found, mac
}

// fromClient asks url from the client machine in the network namespace client, on one of the
// guest node's networks, and returns the body and the hardware address the client's neighbour
// table holds for host.
func (s *suite) fromClient(t *testing.T, client, url, vhost string, host netip.Addr) (string, net.HardwareAddr, error) {
	t.Helper()
	body, err := getAs(client, url, vhost)
	if err != nil {
		return "", nil, err
	}
	var mac net.HardwareAddr
	err = node.In(client, func() error {
		h, err := netlink.NewHandle()
		if err != nil {
			return err
		}
		defer h.Close()
		neighbours, err := h.NeighList(0, netlink.FAMILY_V4)
		if err != nil {
			return err
		}
		for _, n := range neighbours {
			if n.IP.Equal(net.IP(host.AsSlice())) {
				mac = n.HardwareAddr
			}
		}
		return nil
	})
	return body, mac, err
}

// TestKubevipServesTheFloatingIP: in the guest, the operator (a pod of the management cluster,
// reaching the guest through the cluster proxy) installed kube-vip and kube-vip-cloud-provider;
// the scheduler placed kube-vip's DaemonSet pod on the RKE2-like control-plane node by the chart's
// own node selector and tolerations; kube-vip, with the pod's host network, holds the FloatingIP
// on the node's interface; the provider gave a LoadBalancer Service the address; and a client on
// the node's network reaches the Service through it, its neighbour table holding the node's
// hardware address. Deleting kube-vip's pod: the DaemonSet brings it back, and the address is
// served again.
func TestKubevipServesTheFloatingIP(t *testing.T) {
	s := current(t)
	ctx := context.Background()
	fip := s.guestFIP(t)
	first := s.kubevipPod(t, "")
	if first.Spec.NodeName != s.guest.Name || !first.Spec.HostNetwork {
		t.Errorf("kube-vip's pod runs on %q, hostNetwork %t", first.Spec.NodeName, first.Spec.HostNetwork)
	}
	s.echoServed(t, fip, "kube-vip's first pod")

	rig.Must(t, s.guestKube.CoreV1().Pods("kube-system").Delete(ctx, first.Name, metav1.DeleteOptions{}))
	second := s.kubevipPod(t, string(first.UID))
	t.Logf("kube-vip's pod %s replaced by %s", first.Name, second.Name)
	s.servedThrough(t, fip, "kube-vip's pod the DaemonSet brought back")
}

// vmNetwork is one of the guest node's VM networks: the node's link there, and the network
// namespace of a client on it.
type vmNetwork struct{ link, client string }

// firstNetwork is the guest node's network, where its API server is.
func (s *suite) firstNetwork() vmNetwork {
	return vmNetwork{node.NodeInterface, s.guest.ClientNamespace}
}

// servedThrough waits until fip is on the guest node's interface and the client reaches the echo
// Service through it over ARP.
func (s *suite) servedThrough(t *testing.T, fip netip.Addr, who string) {
	s.servedOn(t, s.firstNetwork(), fip, who)
}

// servedOn waits until fip is on the guest node's link to network n and n's client reaches the
// echo Service through it over ARP, answered by that link.
func (s *suite) servedOn(t *testing.T, n vmNetwork, fip netip.Addr, who string) {
	t.Helper()
	s.servedAs(t, n, fip, "", who)
}

// servedAs is servedOn with the client's requests for the name vhost (their Host header), when
// not empty.
func (s *suite) servedAs(t *testing.T, n vmNetwork, fip netip.Addr, vhost, who string) {
	t.Helper()
	var body string
	var seen net.HardwareAddr
	var lastErr error
	if !rig.Within(90*time.Second, func() bool {
		if on, _ := s.onInterface(t, n.link, fip); !on {
			lastErr = fmt.Errorf("%s is not on the node's %s", fip, n.link)
			return false
		}
		body, seen, lastErr = s.fromClient(t, n.client, "http://"+fip.String()+"/", vhost, fip)
		return lastErr == nil && strings.HasPrefix(body, "hello from echo-")
	}) {
		t.Fatalf("%s: %s not served to the client within 90s: %v (answer %q)", who, fip, lastErr, body)
	}
	_, mac := s.onInterface(t, n.link, fip)
	if seen.String() != mac.String() {
		t.Errorf("%s: the client's neighbour entry for %s is %s; the node's %s is %s", who, fip, seen, n.link, mac)
	}
	t.Logf("%s: %s answered %q; %s is at %s (the node's %s)", who, fip, strings.TrimSpace(body), fip, seen, n.link)
}

// echoServed runs the echo backend behind the Service echo, waits for the Service to be given fip,
// and for fip to be served through it (servedThrough).
func (s *suite) echoServed(t *testing.T, fip netip.Addr, who string) {
	s.echoServedOn(t, s.firstNetwork(), fip, who)
}

// echoServedOn is echoServed on the guest node's network n.
func (s *suite) echoServedOn(t *testing.T, n vmNetwork, fip netip.Addr, who string) {
	t.Helper()
	s.echoService(t)
	var svc *corev1.Service
	if !rig.Within(2*time.Minute, func() bool {
		var err error
		svc, err = s.guestKube.CoreV1().Services("default").Get(context.Background(), "echo", metav1.GetOptions{})
		return err == nil && len(svc.Status.LoadBalancer.Ingress) > 0 && svc.Status.LoadBalancer.Ingress[0].IP == fip.String()
	}) {
		t.Fatalf("%s: the LoadBalancer Service echo is not given %s within 2m0s: %+v, annotations %v", who, fip, svc.Status.LoadBalancer, svc.Annotations)
	}
	s.servedOn(t, n, fip, who)
}

// echoService runs the echo backend in the guest behind a LoadBalancer Service named echo.
func (s *suite) echoService(t *testing.T) {
	t.Helper()
	s.echoBackend(t)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: echoLabels,
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := s.guestKube.CoreV1().Services("default").Create(context.Background(), svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// echoLabels are the labels of the echo backend's pods.
var echoLabels = map[string]string{"app": "echo"}

// echoBackend runs the echo backend in the guest's default namespace: the Deployment echo, one pod
// answering on port 8080.
func (s *suite) echoBackend(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	labels := echoLabels
	one := int32(1)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Tolerations: []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
				Containers: []corev1.Container{{Name: "echo", Image: node.EchoImage, ImagePullPolicy: corev1.PullIfNotPresent,
					Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}}}}}
	if _, err := s.guestKube.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}
