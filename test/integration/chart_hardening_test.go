package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
)

// withoutHardening is chart at version with the security context of its workload's container
// taken out: the container then runs with the runtime's defaults (root, privilege escalation, the
// default capabilities, no seccomp profile).
func withoutHardening(t *testing.T, c *chart.Chart, version, template string) *chart.Chart {
	t.Helper()
	c.Metadata.Version = version
	for _, tpl := range c.Templates {
		if tpl.Name != template {
			continue
		}
		lines := strings.Split(string(tpl.Data), "\n")
		var kept []string
		skip := -1
		for _, l := range lines {
			indent := len(l) - len(strings.TrimLeft(l, " "))
			if skip >= 0 && (strings.TrimSpace(l) == "" || indent > skip) {
				continue
			}
			skip = -1
			if strings.TrimSpace(l) == "securityContext:" && indent >= 8 {
				skip = indent
				continue
			}
			kept = append(kept, l)
		}
		tpl.Data = []byte(strings.Join(kept, "\n"))
		if strings.Contains(string(tpl.Data), "allowPrivilegeEscalation") || strings.Contains(string(tpl.Data), "drop:") {
			t.Fatalf("%s %s still holds its container's security context", c.Name(), template)
		}
		return c
	}
	t.Fatalf("%s has no template %s", c.Name(), template)
	return nil
}

// unhardened describes every workload of the guest whose containers lack the hardening the
// upstream charts give them: for the provider, non-root, no privilege escalation, every
// capability dropped and the RuntimeDefault seccomp profile; for kube-vip, every capability
// dropped but NET_ADMIN and NET_RAW.
func unhardened(t *testing.T, gc *guestCluster) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	check := func(what string, spec corev1.PodSpec) {
		for _, c := range spec.Containers {
			sc := c.SecurityContext
			switch {
			case sc == nil || sc.Capabilities == nil || len(sc.Capabilities.Drop) == 0:
				out = append(out, fmt.Sprintf("%s container %s drops no capability", what, c.Name))
			case !strings.Contains(c.Name, "kube-vip-cloud-provider"):
			case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
				sc.SeccompProfile == nil:
				out = append(out, fmt.Sprintf("%s container %s may run as root, escalate or without seccomp", what, c.Name))
			}
		}
	}
	dss, err := gc.direct.AppsV1().DaemonSets("").List(ctx, listAll())
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range dss.Items {
		check("DaemonSet "+x.Namespace+"/"+x.Name, x.Spec.Template.Spec)
	}
	deps, err := gc.direct.AppsV1().Deployments("").List(ctx, listAll())
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range deps.Items {
		check("Deployment "+x.Namespace+"/"+x.Name, x.Spec.Template.Spec)
	}
	return out
}

// TestUnhardenedChartIsRefused: the same charts one patch version up, identical but for the
// security context of their containers. From an allowed source they are refused by digest
// (ChartRefused), and no workload without the upstream hardening reaches the guest; the pinned
// pair then installs in the same guest. (A deployment that allows another archive's digest vouches
// for what it renders outside the value keys: docs/security.md, What Helm applies.)
func TestUnhardenedChartIsRefused(t *testing.T) {
	kubevip := withoutHardening(t, chartrepo.KubevipChart("0.9.9"), "0.9.10", "templates/daemonset.yaml")
	provider := withoutHardening(t, chartrepo.KubevipCloudProviderChart("0.2.10"), "0.2.11", "templates/deployment.yaml")
	repo := startPathCountingRepo(t, append(controlplane.PinnedStandIns(), kubevip, provider)...)
	f := newFixture(t, "kube-fip-hardening")
	proxy := f.shard.StartClusterProxy(t)
	f.createRange("hardening", "10.193.0.0/28")
	base := map[string]string{"operateGuestClusterInterval": "2", "kubevipGuestInstall": "enabled", "kubevipChartRepoUrl": repo.URL}
	unpinned := map[string]string{"kubevipChartVersion": "0.9.10", "kubevipCloudProviderChartVersion": "0.2.11"}
	for k, v := range base {
		unpinned[k] = v
	}

	f.operatorConfig(unpinned)
	f.operator()
	gc := policyGuest(t, f, proxy, "hardening1", "hardening", "10.193.0.2")
	x := f.kubevipDecided(gc, "hardening1")
	if msg := message(x.Status.Conditions, v1.KubevipInstalled); !kubevipReason(v1.ReasonChartRefused)(x) ||
		(!strings.Contains(msg, chartrepo.Digest(provider)) && !strings.Contains(msg, chartrepo.Digest(kubevip))) {
		t.Errorf("the charts without hardening: KubevipInstalled %q; want ChartRefused naming a digest", msg)
	}
	for _, what := range append(unhardened(t, gc), reachedGuest(t, gc)...) {
		t.Errorf("in the guest: %s", what)
	}

	// The pinned pair from the same source installs.
	f.operatorConfig(base)
	f.waitFIPIn(gc.id, gc.name, 90*time.Second, "KubevipInstalled=True at the pinned pair", func(x *v1.FloatingIP) bool { return v1.KubevipInstalled.IsTrue(x) })
	for _, what := range unhardened(t, gc) {
		t.Errorf("after the pinned install: %s", what)
	}
}
