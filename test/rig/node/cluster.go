package node

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Options describe one cluster.
type Options struct {
	// Name names the node (and the cluster's directory).
	Name string
	// Index chooses the cluster's addresses (see the package comment); clusters side by side need
	// different ones, from 1 to 100.
	Index int
	// Labels are set on the node once it registered, as RKE2 sets its node-role labels (the kubelet
	// may not set those itself); Taints the kubelet registers it with ("key=value:Effect").
	Labels map[string]string
	Taints []string
	// Registry is the registry (host:port, plain http) every image the node runs is pulled from,
	// as an air-gapped node pulls: its own name and, as mirrors, docker.io, ghcr.io and
	// registry.k8s.io, in containerd's registry host configuration (registryHosts).
	Registry string
}

// Cluster is one running single-node cluster.
type Cluster struct {
	Name string
	// Config is an administrator's connection (system:masters) to the API server.
	Config *rest.Config
	// Kubeconfig is the path of the administrator's kubeconfig.
	Kubeconfig string
	// HostAddr is the host's address on the cluster's network, where the API server listens;
	// NodeAddr the node's; ClientAddr another machine's on the same network.
	HostAddr, NodeAddr, ClientAddr netip.Addr
	// Pods and Services are the cluster's address ranges.
	Pods, Services netip.Prefix
	// NodeNamespace and ClientNamespace are the network namespaces of the node and the client.
	NodeNamespace, ClientNamespace string
	// Started says how long the cluster took from nothing to its node Ready.
	Started time.Duration

	dir        string
	pki        *pki
	net        *network
	containerd string
	procs      []*process
	cgroupRoot string
}

// Start brings up the cluster and waits until its node is Ready. Stop it when done.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if err := canRun(); err != nil {
		return nil, err
	}
	began := time.Now()
	a, err := findAssets()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kfo-"+o.Name+"-")
	if err != nil {
		return nil, err
	}
	host, node, client, pods, services := addressesOf(o.Index)
	c := &Cluster{Name: o.Name, HostAddr: host, NodeAddr: node, ClientAddr: client, Pods: pods, Services: services, dir: dir,
		cgroupRoot: fmt.Sprintf("/kfo%d", o.Index)}
	if c.net, err = newNetwork(o.Index); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	c.NodeNamespace, c.ClientNamespace = c.net.node, c.net.client
	if err := c.start(ctx, a, o); err != nil {
		c.Stop()
		return nil, err
	}
	c.Started = time.Since(began)
	return c, nil
}

// start runs the programs in order, each once the one before answers.
func (c *Cluster) start(ctx context.Context, a assets, o Options) error {
	kubernetesSvc := c.Services.Addr().Next()
	p, err := writePKI(c.dir, []net.IP{net.IP(c.HostAddr.AsSlice()), net.IP(kubernetesSvc.AsSlice())})
	if err != nil {
		return err
	}
	c.pki = p
	token := randomToken()
	server := fmt.Sprintf("https://%s:6443", c.HostAddr)
	c.Kubeconfig = filepath.Join(c.dir, "admin.kubeconfig")
	etcdPort, peerPort := freePort(), freePort()
	files := registryHosts(o.Registry)
	for name, content := range map[string]string{
		"tokens.csv":             token + ",admin,admin,system:masters\n",
		"admin.kubeconfig":       kubeconfig(server, p.CA, token),
		"resolv.conf":            "nameserver 127.0.0.1\n",
		"cni/10-e2e.conflist":    cniConfig(c.Pods),
		"containerd/config.toml": containerdConfig(filepath.Join(c.dir, "containerd"), filepath.Join(c.dir, "cni"), PauseImage),
		"kubelet.yaml":           kubeletConfig(c.dir, filepath.Join(c.dir, "containerd", "containerd.sock"), c.cgroupRoot),
		"kube-proxy.yaml":        kubeProxyConfig(filepath.Join(c.dir, "admin.kubeconfig"), o.Name, c.Pods),
	} {
		files[name] = content
	}
	if err := writeFiles(c.dir, files); err != nil {
		return err
	}
	run := func(ns, name, binary string, args ...string) error {
		proc, err := start(c.dir, ns, name, binary, args...)
		if err != nil {
			return err
		}
		c.procs = append(c.procs, proc)
		return nil
	}
	if err := run("", "etcd", a.etcd, "--data-dir="+filepath.Join(c.dir, "etcd"),
		fmt.Sprintf("--listen-client-urls=http://127.0.0.1:%d", etcdPort), fmt.Sprintf("--advertise-client-urls=http://127.0.0.1:%d", etcdPort),
		fmt.Sprintf("--listen-peer-urls=http://127.0.0.1:%d", peerPort), fmt.Sprintf("--initial-advertise-peer-urls=http://127.0.0.1:%d", peerPort),
		fmt.Sprintf("--initial-cluster=default=http://127.0.0.1:%d", peerPort), "--unsafe-no-fsync=true"); err != nil {
		return err
	}
	if err := run("", "kube-apiserver", a.apiserver, flags(
		"etcd-servers", fmt.Sprintf("http://127.0.0.1:%d", etcdPort),
		"bind-address", c.HostAddr.String(), "advertise-address", c.HostAddr.String(), "secure-port", "6443",
		"tls-cert-file", p.ServingCert, "tls-private-key-file", p.ServingKey, "client-ca-file", p.CA,
		"token-auth-file", filepath.Join(c.dir, "tokens.csv"), "authorization-mode", "RBAC",
		"service-account-issuer", "https://kubernetes.default.svc", "service-account-key-file", p.SAPub,
		"service-account-signing-key-file", p.SAKey, "service-cluster-ip-range", c.Services.String(),
		"allow-privileged", "true", "kubelet-preferred-address-types", "InternalIP",
		"enable-priority-and-fairness", "false", "profiling", "false")...); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	c.Config = cfg
	client := kubernetes.NewForConfigOrDie(cfg)
	if err := c.waitFor(ctx, time.Minute, "the API server to answer", func() (bool, error) {
		_, err := client.Discovery().ServerVersion()
		return err == nil, nil
	}); err != nil {
		return err
	}
	if err := run("", "kube-controller-manager", a.controllerManager, flags(
		"kubeconfig", c.Kubeconfig, "bind-address", c.HostAddr.String(), "leader-elect", "false",
		"service-account-private-key-file", p.SAKey, "root-ca-file", p.CA, "use-service-account-credentials", "false",
		"controllers", "*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller,-persistentvolume-binder,-attachdetach")...); err != nil {
		return err
	}
	if err := run("", "kube-scheduler", a.scheduler, flags("kubeconfig", c.Kubeconfig, "bind-address", c.HostAddr.String(), "leader-elect", "false")...); err != nil {
		return err
	}
	if err := makeCgroupRoot(c.cgroupRoot); err != nil {
		return err
	}
	containerdDir := filepath.Join(c.dir, "containerd")
	c.containerd = filepath.Join(containerdDir, "containerd.sock")
	if err := run(c.net.node, "containerd", a.containerd, "--config", filepath.Join(containerdDir, "config.toml")); err != nil {
		return err
	}
	if err := c.waitFor(ctx, 30*time.Second, "containerd's socket", func() (bool, error) {
		_, err := os.Stat(c.containerd)
		return err == nil, nil
	}); err != nil {
		return err
	}
	kubeletArgs := flags("config", filepath.Join(c.dir, "kubelet.yaml"), "kubeconfig", c.Kubeconfig,
		"root-dir", filepath.Join(c.dir, "kubelet"), "hostname-override", o.Name, "node-ip", c.NodeAddr.String())
	if len(o.Taints) > 0 {
		kubeletArgs = append(kubeletArgs, "--register-with-taints="+joinLabels(o.Taints))
	}
	if err := run(c.net.node, "kubelet", a.kubelet, kubeletArgs...); err != nil {
		return err
	}
	if err := run(c.net.node, "kube-proxy", a.proxy, "--config", filepath.Join(c.dir, "kube-proxy.yaml")); err != nil {
		return err
	}
	if err := c.waitFor(ctx, 2*time.Minute, "node "+o.Name+" to register", func() (bool, error) {
		_, err := client.CoreV1().Nodes().Get(ctx, o.Name, metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		return err
	}
	if len(o.Labels) > 0 {
		patch, err := json.Marshal(map[string]interface{}{"metadata": map[string]interface{}{"labels": o.Labels}})
		if err != nil {
			return err
		}
		if _, err := client.CoreV1().Nodes().Patch(ctx, o.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("labelling node %s: %w", o.Name, err)
		}
	}
	return c.waitFor(ctx, 2*time.Minute, "node "+o.Name+" to be Ready", func() (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, o.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
}

// waitFor polls cond until it holds, the timeout passes, or a program of the cluster exits.
func (c *Cluster) waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		for _, p := range c.procs {
			if done, err := p.exited(); done && !p.stopped {
				return fmt.Errorf("waiting for %s: %s %w (%v); its log ends:\n%s", what, p.name, errExited, err, p.tail(30))
			}
		}
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s; the logs are in %s", timeout, what, c.dir)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// ServingCert is a TLS certificate for the host's address on the cluster's network, signed by the
// cluster's CA (CAPEM): for a server of the test's that the cluster's pods reach.
func (c *Cluster) ServingCert() (tls.Certificate, error) {
	return c.pki.issue(net.IP(c.HostAddr.AsSlice()))
}

// CAPEM is the cluster's CA certificate.
func (c *Cluster) CAPEM() []byte { return c.pki.caPEM }

// ForgetImages removes every image whose name starts with prefix from the node's containerd, as
// the kubelet's image garbage collection does, so that the next pod that needs one pulls it again;
// running containers keep running. It returns the names removed.
func (c *Cluster) ForgetImages(ctx context.Context, prefix string) ([]string, error) {
	out, err := exec.CommandContext(ctx, "ctr", "--address", c.containerd, "-n", "k8s.io", "images", "ls", "-q").Output()
	if err != nil {
		return nil, fmt.Errorf("listing the node's images: %w", err)
	}
	var names []string
	for _, n := range strings.Fields(string(out)) {
		if strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	if out, err := exec.CommandContext(ctx, "ctr", append([]string{"--address", c.containerd, "-n", "k8s.io", "images", "rm"}, names...)...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("removing %v: %w: %s", names, err, out)
	}
	return names, nil
}

// AddSegment joins the running node to a second VM network through a new link named link, with
// a client there (see the package comment); it goes with the cluster.
func (c *Cluster) AddSegment(link string) (Segment, error) { return c.net.addSegment(link) }

// Logs is the end of the named program's log ("kubelet", "containerd", ...).
func (c *Cluster) Logs(name string, lines int) string {
	for _, p := range c.procs {
		if p.name == name {
			return p.tail(lines)
		}
	}
	return ""
}

// Stop stops the programs in reverse order, removes the pods' containers and the namespaces, and
// keeps the directory (logs) only when keep is set in KUBE_FIP_KEEP.
func (c *Cluster) Stop() {
	c.drain()
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].stop(10 * time.Second)
	}
	killShims(c.containerd)
	unmountUnder(c.dir)
	if c.net != nil {
		c.net.close()
	}
	removeCgroupRoot(c.cgroupRoot)
	if os.Getenv("KUBE_FIP_KEEP") == "" {
		_ = os.RemoveAll(c.dir)
	}
}

// drain stops the controllers, which would make pods again, and deletes every pod gracefully,
// waiting until the kubelet has stopped them (their sandboxes, network namespaces and all) and
// removed them, for 30 s at most.
func (c *Cluster) drain() {
	if c.Config == nil {
		return
	}
	for _, p := range c.procs {
		if p.name == "kube-controller-manager" || p.name == "kube-scheduler" {
			p.stop(5 * time.Second)
		}
	}
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	grace := int64(1)
	pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, p := range pods.Items {
		_ = client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	}
	_ = c.waitFor(ctx, 30*time.Second, "every pod to be removed", func() (bool, error) {
		left, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		return err == nil && len(left.Items) == 0, nil
	})
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// PauseImage is the sandbox image the clusters' containerd is told to use; it is built here.
const PauseImage = "registry.k8s.io/pause:3.9"
