package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// TestStartupWaitsForEveryInformer: no pass runs before every informer it reads has synced. A
// Harvester guest cluster exists, with every object its FloatingIP is made from, before the
// operator starts; the API server is slow to answer for HarvesterConfigs (the one informer outside
// lasso's shared caches, which discovery reads). The operator must not start its workers until that
// informer has synced: the first discovery pass over the cluster finds its HarvesterConfig and
// creates the FloatingIP, where a pass on a still-empty cache would decide the cluster waits for a
// HarvesterConfig that exists.
func TestStartupWaitsForEveryInformer(t *testing.T) {
	f := newFixture(t, "kube-fip-startup-informers")
	r := f.shard.Rancher(t)
	f.createRangeFor("startup-informers", "10.163.0.0/24", "harv-startup-informers", "vlan10")
	g := rancher.Guest{Name: "startinf", ID: "c-m-startinf", Harvester: "c-m-harvstartinf", Display: "harv-startup-informers", Network: rancher.Network("vlan10")}
	rig.Must(t, r.AddGuest(g))
	f.operatorConfig(map[string]string{"logLevel": "debug"})

	api, kubeconfig := adminAPIProxy(t)
	api.HoldReads("harvesterconfigs")
	// The last --kubeconfig wins: the operator talks only through the proxy.
	p := startOperator(t, f.ns, rig.FreePort(t), "--kubeconfig", kubeconfig)

	// The HarvesterConfigs are held until a discovery pass over the cluster is logged, which an
	// operator waiting for them cannot log, or for a while; the wait is not what is tested.
	pass := "discovery: cluster " + rancher.FleetNamespace + "/" + g.Name + ": "
	_ = p.WaitForLog(t.Context(), pass, 10*time.Second)
	api.Release("harvesterconfigs")

	waitDecision(t, p, g.Name, "FloatingIP created")
	suite.WaitFIP(t, r.FIPs, g.ID, g.Name+"-kubevip", 30*time.Second)
	var first string
	for _, line := range strings.Split(p.Logs(), "\n") {
		if strings.Contains(line, pass) {
			first = line
			break
		}
	}
	if !strings.Contains(first, pass+"FloatingIP created") {
		t.Errorf("the first discovery pass over %s ran on caches that had not synced:\n%s", g.Name, first)
	}
	if logs := p.Logs(); strings.Index(logs, "caches synced") > strings.Index(logs, pass) {
		t.Errorf("a discovery pass over %s ran before the caches synced", g.Name)
	}
}
