package node

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// The configuration files of one cluster's programs.

// kubeconfig is an administrator's kubeconfig of the cluster: its CA and the token of
// system:masters the API server's token file holds.
func kubeconfig(server, caFile, token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: e2e
  context: {cluster: e2e, user: admin}
current-context: e2e
`, server, caFile, token)
}

// containerdConfig runs containerd with a root, state and socket of the cluster's own, the CRI's
// sandbox image built here, the CNI configuration in cniDir, and the registry host configuration
// in certs.d (registryHosts). restrict_oom_score_adj: this
// machine leaves CAP_SYS_RESOURCE out of root's bounding set, so runc cannot raise a sandbox's
// oom_score_adj, and every sandbox would fail without it.
func containerdConfig(dir, cniDir, sandboxImage string) string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
[grpc]
  address = %q
[ttrpc]
  address = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %q
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), filepath.Join(dir, "containerd.sock"),
		filepath.Join(dir, "containerd.ttrpc.sock"), sandboxImage, cniDir, filepath.Join(dir, "certs.d"))
}

// registryHosts is containerd's registry host configuration (relative to the cluster's directory)
// that pulls every image from registry (host:port, plain http) and nowhere else: the registry's
// own name, and docker.io, ghcr.io and registry.k8s.io mirrored to it, in the hosts.toml format of
// containerd's docs/hosts.md (read by containerd since 1.5; the nodes run Debian's 1.6.20), the
// format K3s and RKE2 generate from a registries.yaml mirror. A mirror serves the upstream path under its own
// host (ghcr.io/kube-vip/kube-vip is kube-vip/kube-vip there), where crane copy and skopeo copy
// put a mirrored image. Empty registry: no configuration, so nothing can be pulled.
func registryHosts(registry string) map[string]string {
	files := map[string]string{}
	if registry == "" {
		return files
	}
	mirror := fmt.Sprintf("[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", "http://"+registry)
	for host, server := range map[string]string{registry: "http://" + registry, "docker.io": "https://registry-1.docker.io",
		"ghcr.io": "https://ghcr.io", "registry.k8s.io": "https://registry.k8s.io"} {
		files[filepath.Join("containerd", "certs.d", host, "hosts.toml")] = fmt.Sprintf("server = %q\n\n%s", server, mirror)
	}
	return files
}

// cniConfig is the pods' network: a bridge in the node's namespace, addresses from pods, traffic
// leaving the pod range masqueraded as the node, and host ports.
func cniConfig(pods netip.Prefix) string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "e2e",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, pods.String())
}

// kubeletConfig is the kubelet's: cgroupfs under a cgroup root of the cluster's own (several
// kubelets share the host's cgroups), the pods' logs in the cluster's directory, no authentication or authorisation of its own API (only the
// test reaches it), no cluster DNS, and eviction that a busy test machine does not trip.
func kubeletConfig(dir, runtime, cgroupRoot string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://%s
cgroupDriver: cgroupfs
cgroupRoot: %s
failSwapOn: false
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
resolvConf: %s
podLogsDir: %s
serializeImagePulls: false
evictionHard: {memory.available: "100Mi", nodefs.available: "1%%", imagefs.available: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`, runtime, cgroupRoot, filepath.Join(dir, "resolv.conf"), filepath.Join(dir, "pod-logs"))
}

// kubeProxyConfig: iptables mode, without touching the conntrack limits (read-only outside the
// host's namespace).
func kubeProxyConfig(kubeconfigPath, node string, pods netip.Prefix) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clusterCIDR: %s
hostnameOverride: %s
clientConnection: {kubeconfig: %s}
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
`, pods.String(), node, kubeconfigPath)
}

// writeFiles writes each file of files (path relative to dir) with mode 0600.
func writeFiles(dir string, files map[string]string) error {
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// flags renders key=value pairs as --key=value arguments.
func flags(kv ...string) []string {
	var out []string
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, "--"+kv[i]+"="+kv[i+1])
	}
	return out
}

// joinLabels renders a label or taint list as the kubelet's flags take it.
func joinLabels(m []string) string { return strings.Join(m, ",") }
