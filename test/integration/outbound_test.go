package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/yaml"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartsource"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/forwardproxy"
	"github.com/kubefip/kube-fip-operator/test/rig/registry"
)

// chartNoProxy is the chart's noProxy, Rancher's default: the loopback API servers of the rig are
// reached without the proxy, as a cluster's own addresses are.
const chartNoProxy = "127.0.0.0/8,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,.svc,.cluster.local"

// operatorWithEnv is f.operator with environment variables of its own.
func (f *fixture) operatorWithEnv(env []string, extra ...string) *controlplane.Process {
	f.t.Helper()
	p := startOperatorWith(f.t, f.shard.Operator, f.shard.Env.Kubeconfig, env, f.ns, rig.FreePort(f.t), append(controlplane.LoopbackChartSourceArgs(), extra...)...)
	if err := p.WaitForLog(context.Background(), "controllers running", 2*time.Minute); err != nil {
		f.t.Fatalf("%v\n%s", err, rig.LastLines(p.Logs(), 60))
	}
	return p
}

// valuesWith is the chart values text with edit applied, YAML.
func valuesWith(t *testing.T, text string, edit func(map[string]interface{})) string {
	t.Helper()
	values := map[string]interface{}{}
	rig.Must(t, yaml.Unmarshal([]byte(text), &values))
	edit(values)
	out, err := yaml.Marshal(values)
	rig.Must(t, err)
	return string(out)
}

// TestPrivateCAAndProxy: the guest image registry and the chart repository serve TLS under a CA
// the test makes, on a name of this machine, and take connections from a real forward proxy
// (tinyproxy) alone. Each run of the operator sees the same kube-fip-config, digests required:
//   - through the proxy without the CA, the digest check fails with ImageNotResolved naming the
//     unknown authority and additionalTrustedCAs, and the proxy's log shows the operator's tunnel
//     to the registry; without digests required, the chart fetch fails the same way (HelmFailed);
//   - with the CA through a proxy that refuses those ports, ImageNotResolved names the proxy's
//     refusal;
//   - with the CA and no proxy, the servers close the direct connections: nothing is resolved;
//   - with the CA and the proxy, the digests are checked at the registry and the charts fetched,
//     every connection the servers took came from the proxy, and kube-vip is installed.
func TestPrivateCAAndProxy(t *testing.T) {
	host, addr := forwardproxy.LoopbackName(t)
	ca := forwardproxy.NewCA(t)
	serving := ca.ServerConfig(t, host)

	regL := forwardproxy.Listen(t, addr, serving)
	reg := registry.Start(regL)
	t.Cleanup(func() { _ = reg.Close() })
	regHost := fmt.Sprintf("%s:%d", host, regL.Port())
	push := func(repo, tag string) string {
		img, err := random.Image(256, 1)
		rig.Must(t, err)
		ref, err := name.NewTag(regHost + "/" + repo + ":" + tag)
		rig.Must(t, err)
		rig.Must(t, remote.Write(ref, img, remote.WithTransport(&http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}})))
		d, err := img.Digest()
		rig.Must(t, err)
		return d.String()
	}
	kvPath, cpPath := registry.MirrorPath(config.DefaultKubevipImageRepository), registry.MirrorPath(config.DefaultKubevipCloudProviderImageRepository)
	kv, cp := push(kvPath, "v1.0.0"), push(cpPath, "v0.0.12")

	repoL := forwardproxy.Listen(t, addr, serving)
	repoURL := fmt.Sprintf("https://%s:%d", host, repoL.Port())
	repoHost := strings.TrimPrefix(repoURL, "https://")
	repo, err := chartrepo.ServeChartRepo(repoL, repoURL, defaultCharts()...)
	rig.Must(t, err)
	t.Cleanup(func() { _ = repo.Close() })
	regL.Lock()
	repoL.Lock()

	proxy := forwardproxy.Start(t, regL.Port(), repoL.Port())
	refusing := forwardproxy.Start(t)

	f := newFixture(t, "kube-fip-outbound")
	clusterProxy := f.shard.StartClusterProxy(t)
	f.createRange("outbound", "10.190.0.0/28")
	gc := policyGuest(t, f, clusterProxy, "outbound", "outbound", "10.190.0.2")
	f.operatorConfig(map[string]string{"operateGuestClusterInterval": "2", "kubevipGuestInstall": "enabled", "kubevipChartRepoUrl": repoURL,
		"kubevipChartValues": kubevipValuesWith(t, func(v map[string]interface{}) {
			v["image"] = map[string]interface{}{"repository": config.DefaultKubevipImageRepository, "tag": "v1.0.0@" + kv}
		}),
		"kubevipCloudProviderChartValues": valuesWith(t, config.DefaultKubevipCloudProviderChartValues, func(v map[string]interface{}) {
			v["image"] = map[string]interface{}{"repository": config.DefaultKubevipCloudProviderImageRepository, "tag": "v0.0.12@" + cp}
		}),
	})
	sources := "--allowed-chart-sources=" + strings.Join(append(chartsource.DefaultChartSources(), repoURL), ",")
	digests := []string{"--guest-image-registry=" + regHost, "--require-image-digests"}
	trusted := "--additional-trusted-cas=" + ca.File
	through := func(p *forwardproxy.Proxy) []string {
		return []string{"HTTPS_PROXY=" + p.URL, "NO_PROXY=" + chartNoProxy}
	}

	// kubevip waits for the KubevipInstalled reason, its message holding every one of words, and
	// none of them when a word starts with "!".
	kubevip := func(what, reason string, words ...string) *v1.FloatingIP {
		t.Helper()
		return f.waitFIPIn(gc.id, "outbound", 90*time.Second, what, func(x *v1.FloatingIP) bool {
			c, ok := v1.GetCondition(x.Status.Conditions, v1.KubevipInstalled)
			if !ok || c.Reason != reason {
				return false
			}
			for _, w := range words {
				if not, ok := strings.CutPrefix(w, "!"); ok == strings.Contains(c.Message, not) {
					return false
				}
			}
			return true
		})
	}
	run := func(name string, env []string, args []string, check func()) {
		t.Helper()
		t.Logf("%s", name)
		p := f.operatorWithEnv(env, append([]string{sources}, args...)...)
		check()
		rig.Must(t, p.Stop(20*time.Second))
	}

	run("through the proxy, without the CA", through(proxy), digests, func() {
		x := kubevip("ImageNotResolved naming the unknown authority", v1.ReasonImageNotResolved,
			regHost, "x509: certificate signed by unknown authority", "additionalTrustedCAs")
		t.Logf("without the CA: %s", message(x.Status.Conditions, v1.KubevipInstalled))
		if !slices.Contains(proxy.Connects(t), regHost) {
			t.Errorf("the proxy's log has no tunnel to the registry %s:\n%s", regHost, proxy.Log(t))
		}
	})
	run("through the proxy, without the CA, digests not required", through(proxy), nil, func() {
		x := kubevip("HelmFailed naming the unknown authority", v1.ReasonHelmFailed,
			repoURL, "x509: certificate signed by unknown authority", "additionalTrustedCAs")
		t.Logf("the chart fetch without the CA: %s", message(x.Status.Conditions, v1.KubevipInstalled))
		if !slices.Contains(proxy.Connects(t), repoHost) {
			t.Errorf("the proxy's log has no tunnel to the chart repository %s:\n%s", repoHost, proxy.Log(t))
		}
	})
	run("with the CA, through a proxy that refuses the ports", through(refusing), append(digests, trusted), func() {
		x := kubevip("ImageNotResolved naming the proxy's refusal", v1.ReasonImageNotResolved,
			"the proxy "+refusing.URL+" refused the connection to "+regHost+" (403")
		t.Logf("a proxy refusing: %s", message(x.Status.Conditions, v1.KubevipInstalled))
		if !slices.Contains(refusing.Connects(t), regHost) {
			t.Errorf("the refusing proxy's log has no CONNECT to %s:\n%s", regHost, refusing.Log(t))
		}
	})
	direct := len(regL.Clients())
	run("with the CA, without the proxy", nil, append(digests, trusted), func() {
		x := kubevip("ImageNotResolved, the registry reached directly", v1.ReasonImageNotResolved, regHost, "!proxy", "!x509", "!terminated")
		t.Logf("without the proxy: %s", message(x.Status.Conditions, v1.KubevipInstalled))
		rig.Eventually(t, 30*time.Second, "a direct connection to the registry, closed", func() bool {
			return slices.Contains(regL.Clients()[direct:], addr)
		})
	})

	regFrom, repoFrom := len(regL.Clients()), len(repoL.Clients())
	logFrom := len(reg.Log())
	run("with the CA, through the proxy", through(proxy), append(digests, trusted), func() {
		f.waitFIPIn(gc.id, "outbound", 90*time.Second, "KubevipInstalled=True", func(x *v1.FloatingIP) bool { return v1.KubevipInstalled.IsTrue(x) })
		viaProxy := netip.MustParseAddr(forwardproxy.OutgoingAddr)
		for what, clients := range map[string][]netip.Addr{"registry": regL.Clients()[regFrom:], "chart repository": repoL.Clients()[repoFrom:]} {
			if len(clients) == 0 {
				t.Errorf("the %s took no connection", what)
			}
			for _, c := range clients {
				if c != viaProxy {
					t.Errorf("the %s took a connection from %s; want the proxy's alone (%s)", what, c, viaProxy)
				}
			}
		}
		var checked []string
		for _, a := range reg.Log()[logFrom:] {
			if a.Method == http.MethodHead && strings.Contains(a.Path, "/manifests/") && a.Status == http.StatusOK {
				checked = append(checked, a.Path)
			}
		}
		for _, want := range []string{"/v2/" + kvPath + "/manifests/v1.0.0", "/v2/" + cpPath + "/manifests/v0.0.12"} {
			if !slices.Contains(checked, want) {
				t.Errorf("the registry answered the digest checks %v; want HEAD %s", checked, want)
			}
		}
		t.Logf("the proxy's log, in all: %d tunnels %v", len(proxy.Connects(t)), proxy.Connects(t))
	})
}
