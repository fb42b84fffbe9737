package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/guests"
)

// setKubeconfig rewrites the cluster's kubeconfig Secret with Rancher's kubeconfig for it, changed
// by change, as somebody with write access to fleet-default could.
func (gc *guestCluster) setKubeconfig(t *testing.T, proxy *guests.ClusterProxy, change func(*clientcmdapi.Config)) {
	t.Helper()
	raw, err := proxy.Kubeconfig(gc.id, gc.token)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change(cfg)
	}
	if raw, err = clientcmd.Write(*cfg); err != nil {
		t.Fatal(err)
	}
	rig.Must(t, gc.world.SetKubeconfig(gc.name+"-kubeconfig", raw))
}

// guestTexts is everything the operator wrote for people about the FloatingIPs in namespaces: the
// Events on them and their conditions.
func guestTexts(t *testing.T, namespaces ...string) string {
	t.Helper()
	shard := shards.Of(t)
	kube := kubernetes.NewForConfigOrDie(shard.Env.Config)
	api := shard.Kubefip
	var b strings.Builder
	for _, ns := range namespaces {
		evs, err := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			fmt.Fprintf(&b, "event %s/%s %s %s: %s\n", ns, e.InvolvedObject.Name, e.Type, e.Reason, e.Message)
		}
		fips, err := api.FloatingIP().List(ns, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range fips.Items {
			for _, c := range x.Status.Conditions {
				fmt.Fprintf(&b, "condition %s/%s %s=%s %s: %s\n", ns, x.Name, c.Type, c.Status, c.Reason, c.Message)
			}
		}
	}
	return b.String()
}

func guestMessage(x *v1.FloatingIP) string {
	c, _ := v1.GetCondition(x.Status.Conditions, v1.GuestConfigured)
	return c.Message
}

// TestGuestKubeconfigRefused: a kubeconfig Secret that asks for an exec plugin, a token file,
// insecure TLS, another cluster's proxy URL, a server that is not Rancher's own address (its
// internal-server-url setting) or a server URL with credentials is refused before any client
// exists: the FloatingIP says KubeconfigRefused with a Warning Event, the exec plugin never
// runs, nothing reaches the guest the URL points at, and no token appears in any Event, condition
// or log line. Once Rancher's own kubeconfig is back, the guest is configured.
func TestGuestKubeconfigRefused(t *testing.T) {
	f := newFixture(t, "c-m-kcrefuse")
	proxy := f.shard.StartClusterProxy(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "exec-plugin-ran")
	tokenFile := filepath.Join(dir, "token")

	victim := rancherCluster(t, proxy, "kc-victim", "c-m-kcvictim", nil, f.shard.StartGuest(t, "kc-victim"))
	execCluster := rancherCluster(t, proxy, "kc-exec", "c-m-kcexec01", nil, nil)
	fileCluster := rancherCluster(t, proxy, "kc-file", "c-m-kcfile01", nil, nil)
	insecure := rancherCluster(t, proxy, "kc-insecure", "c-m-kcinsec1", nil, nil)
	redirected := rancherCluster(t, proxy, "kc-other", "c-m-kcother1", nil, nil)
	withCreds := rancherCluster(t, proxy, "kc-creds", "c-m-kccreds1", nil, nil)
	elsewhere := rancherCluster(t, proxy, "kc-elsewhere", "c-m-kcelse01", nil, nil)
	all := []*guestCluster{victim, execCluster, fileCluster, insecure, redirected, withCreds, elsewhere}
	var namespaces []string
	for _, gc := range all {
		f.extraNamespace(gc.id)
		namespaces = append(namespaces, gc.id)
	}
	if err := os.WriteFile(tokenFile, []byte(victim.token), 0o600); err != nil {
		t.Fatal(err)
	}
	// Each kubeconfig would reach the victim's guest on the old code, with the victim's token.
	victim.setKubeconfig(t, proxy, func(c *clientcmdapi.Config) {
		c.AuthInfos["user"].Token = ""
		c.AuthInfos["user"].Exec = &clientcmdapi.ExecConfig{
			APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh", InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
			Args: []string{"-c", "touch " + marker + `; printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}' ` + victim.token},
		}
	})
	execCluster.setKubeconfig(t, proxy, func(c *clientcmdapi.Config) {
		c.AuthInfos["user"].Exec = &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh", Args: []string{"-c", "touch " + marker}}
	})
	fileCluster.setKubeconfig(t, proxy, func(c *clientcmdapi.Config) {
		c.AuthInfos["user"].Token, c.AuthInfos["user"].TokenFile = "", tokenFile
	})
	insecure.setKubeconfig(t, proxy, func(c *clientcmdapi.Config) {
		c.Clusters["cluster"].InsecureSkipTLSVerify, c.Clusters["cluster"].CertificateAuthorityData = true, nil
	})
	redirected.setKubeconfig(t, proxy, func(c *clientcmdapi.Config) {
		c.Clusters["cluster"].Server = proxy.URL + "/k8s/clusters/" + victim.id
		c.AuthInfos["user"].Token = victim.token
	})
	withCreds.setKubeconfig(t, proxy, func(c *clientcmdapi.Config) {
		c.Clusters["cluster"].Server = strings.Replace(proxy.URL, "https://", "https://admin:"+withCreds.token+"@", 1) + "/k8s/clusters/" + withCreds.id
	})
	// A second proxy that Rancher's settings do not name, serving the victim's guest under this
	// cluster's id: a path and token that look right, on a host that is not Rancher's.
	foreign, err := guests.StartClusterProxy()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = foreign.Close() })
	if err := foreign.Register(elsewhere.id, victim.guest, victim.token); err != nil {
		t.Fatal(err)
	}
	elsewhere.setKubeconfig(t, foreign, func(c *clientcmdapi.Config) { c.AuthInfos["user"].Token = victim.token })

	f.operatorConfig(map[string]string{"logLevel": "Trace", "operateGuestClusterInterval": "2", "kubevipGuestInstall": "disabled"})
	p, port := f.operator()
	f.createRange("kcrefuse", "10.171.0.0/28")
	for i, gc := range all {
		f.createFIPIn(gc.id, gc.name+"-kubevip", "kcrefuse", fmt.Sprintf("10.171.0.%d", i+2))
	}

	for _, tc := range []struct {
		gc   *guestCluster
		says string
	}{
		{victim, "exec credential plugin"},
		{execCluster, "exec credential plugin"},
		{fileCluster, "tokenFile"},
		{insecure, "insecure-skip-tls-verify"},
		{redirected, "not Rancher's cluster proxy URL for cluster " + redirected.id},
		{withCreds, "carries credentials"},
		{elsewhere, "not Rancher's cluster proxy URL for cluster " + elsewhere.id},
	} {
		x := f.waitFIPIn(tc.gc.id, tc.gc.name+"-kubevip", 30*time.Second, "KubeconfigRefused", guestReason("KubeconfigRefused"))
		if msg := guestMessage(x); !strings.Contains(msg, tc.says) || !strings.Contains(msg, tc.gc.name+"-kubeconfig") {
			t.Errorf("%s: GuestConfigured says %q; want it to name the Secret and say %q", tc.gc.name, msg, tc.says)
		}
		if x.Status.GuestState != "Error" {
			t.Errorf("%s: guest state %q, want Error", tc.gc.name, x.Status.GuestState)
		}
		rig.Eventually(t, 10*time.Second, tc.gc.name+": a Warning Event KubeconfigRefused", func() bool {
			return f.shard.HasEvent(t, tc.gc.id, tc.gc.name+"-kubevip", corev1.EventTypeWarning, "KubeconfigRefused", tc.says)
		})
	}

	// More passes later: nothing ran, nothing reached the victim's guest.
	waitGuestPasses(t, port, all...)
	if _, err := os.Stat(marker); err == nil {
		t.Error("an exec credential plugin of a guest kubeconfig ran inside the operator")
	}
	if cidr := victim.kubevipCIDR(t); cidr != "" {
		t.Errorf("the victim's guest got cidr-global %q through a refused kubeconfig", cidr)
	}

	texts, logs := guestTexts(t, namespaces...), p.Logs()
	for _, gc := range all {
		for where, text := range map[string]string{"Events or conditions": texts, "logs": logs} {
			if strings.Contains(text, gc.token) {
				t.Errorf("the token of %s appears in the %s", gc.name, where)
			}
		}
	}
	if !strings.Contains(texts, "https://REDACTED@127.0.0.1:") {
		t.Errorf("the refusal of a server URL with credentials does not show the URL masked:\n%s", grepLines(texts, "credentials"))
	}

	// Rancher's own kubeconfig again: the next pass reads it, and the guest is configured.
	victim.setKubeconfig(t, proxy, nil)
	victim.waitCIDR(t, "10.171.0.2/32", 30*time.Second)
	f.waitFIPIn(victim.id, victim.name+"-kubevip", 15*time.Second, "Configured", guestReason("Configured"))
	if _, err := os.Stat(marker); err == nil {
		t.Error("an exec credential plugin of a guest kubeconfig ran inside the operator")
	}
}

// TestGuestSecretsNeverReachEventsOrConditions: a guest's token and a chart repository password
// given in the ConfigMap never appear in an Event (on the FloatingIP or the ConfigMap), a
// FloatingIP condition or the operator's trace-level log, while the operator works normally and
// reports the refused repository URL.
func TestGuestSecretsNeverReachEventsOrConditions(t *testing.T) {
	const password = "S3CRETrepoPassw0rd"
	f := newFixture(t, "c-m-secrecy")
	proxy := f.shard.StartClusterProxy(t)
	gc := rancherCluster(t, proxy, "secrecy", "c-m-secrecy1", nil, f.shard.StartGuest(t, "secrecy"))
	f.extraNamespace(gc.id)

	f.operatorConfig(map[string]string{"logLevel": "Trace", "operateGuestClusterInterval": "1", "kubevipGuestInstall": "disabled"})
	p, port := f.operator()
	f.createRange("secrecy", "10.172.0.0/28")
	f.createFIPIn(gc.id, "secrecy-kubevip", "secrecy", "10.172.0.2")
	gc.waitCIDR(t, "10.172.0.2/32", 30*time.Second)

	// A rotation and a revoked role give messages about the token; the repository URL with a
	// password is refused and reported.
	gc.rotate(t, proxy)
	if err := proxy.RevokeClusterOwner(gc.id); err != nil {
		t.Fatal(err)
	}
	f.waitFIPIn(gc.id, "secrecy-kubevip", 30*time.Second, "NotClusterOwner", guestReason("NotClusterOwner"))
	updateConfig(t, f.ns, map[string]string{"logLevel": "Trace", "operateGuestClusterInterval": "1", "kubevipGuestInstall": "enabled",
		"kubevipChartRepoUrl": "https://kube-fip:" + password + "@127.0.0.1:1/charts"})
	rig.Eventually(t, 30*time.Second, "a Warning Event on kube-fip-config about kubevipChartRepoUrl", func() bool {
		for _, e := range f.shard.Events(t, f.ns, "kube-fip-config") {
			if e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "kubevipChartRepoUrl") {
				return true
			}
		}
		return false
	})
	waitGuestPasses(t, port, gc)

	texts := guestTexts(t, gc.id)
	for _, e := range f.shard.Events(t, f.ns, "kube-fip-config") {
		texts += fmt.Sprintf("event %s %s: %s\n", e.Type, e.Reason, e.Message)
	}
	if !strings.Contains(texts, "NotClusterOwner") {
		t.Fatalf("no Event or condition about the revoked role: the check below would prove little\n%s", texts)
	}
	logs := p.Logs()
	if !strings.Contains(logs, "level=trace") && !strings.Contains(logs, "level=debug") {
		t.Error("the operator logged nothing below info: the log check would prove nothing")
	}
	for what, needle := range map[string]string{
		"the old token":             strings.TrimSuffix(gc.token, "r"),
		"the new token":             gc.token,
		"the repository password":   password,
		"the repository user:pass@": "kube-fip:" + password,
		"a bearer header":           "Bearer ",
		"a certificate":             "BEGIN CERTIFICATE",
	} {
		if strings.Contains(texts, needle) {
			t.Errorf("an Event or condition contains %s:\n%s", what, grepLines(texts, needle))
		}
		if strings.Contains(logs, needle) {
			t.Errorf("the logs contain %s", what)
		}
	}
}
