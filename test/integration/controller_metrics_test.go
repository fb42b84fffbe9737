package integration

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kubefip/kube-fip-operator/pkg/controllers/discovery"
	"github.com/kubefip/kube-fip-operator/pkg/controllers/floatingip"
	"github.com/kubefip/kube-fip-operator/pkg/controllers/floatingiprange"
	"github.com/kubefip/kube-fip-operator/pkg/controllers/guestcluster"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// TestOperatorServesControllerMetrics: the operator's /metrics serves, beside its own series,
// lasso's controller series — handler executions and reconcile times of every handler of every
// controller — and the depth, adds and retries of every work queue: one per kind the shared
// controller factory serves, and the guest queue. The binary is started as a deployment would
// start it, with no environment variable asking for them.
func TestOperatorServesControllerMetrics(t *testing.T) {
	f := newFixture(t, "kube-fip-ctrl-metrics")
	r := f.shard.Rancher(t)
	// An object of every kind a handler watches: kube-fip-config, a range, a FloatingIP, and a
	// Rancher guest cluster (provisioning and management clusters, namespace).
	f.operatorConfig(map[string]string{"logLevel": "info"})
	rig.Must(t, r.AddGuest(rancher.Guest{Name: "ctrlmetrics", ID: "c-m-ctrlmetrics", Harvester: "c-m-harvctrlmetrics", Display: "harv-ctrl-metrics", Network: rancher.Network("vlan10")}))
	_, port := f.operator()
	f.createRange("ctrl-metrics", "10.164.0.0/28")
	f.waitFIP(f.createFIP("ctrl-metrics", "ctrl-metrics", "").Name, quick, "an address", suite.Allocated)

	const (
		configMaps  = "/v1, Resource=configmaps"
		namespaces  = "/v1, Resource=namespaces"
		ranges      = "kubefip.k8s.binbash.org/v1, Resource=floatingipranges"
		fips        = "kubefip.k8s.binbash.org/v1, Resource=floatingips"
		provCluster = "provisioning.cattle.io/v1, Resource=clusters"
		mgmtCluster = "management.cattle.io/v3, Resource=clusters"
	)
	var want []string
	for controller, handlers := range map[string][]string{
		configMaps: {"kube-fip-config"},
		namespaces: {discovery.HandlerName + "-namespace"},
		ranges:     {floatingiprange.HandlerName, discovery.HandlerName + "-range"},
		fips: {floatingip.HandlerName, floatingip.ReadyMetricHandlerName, guestcluster.HandlerName,
			discovery.HandlerName + "-floatingip"},
		provCluster: {discovery.HandlerName, guestcluster.HandlerName},
		mgmtCluster: {floatingip.HandlerName, guestcluster.HandlerName, discovery.HandlerName + "-management"},
	} {
		for _, h := range handlers {
			labels := fmt.Sprintf(`{controller_name=%q,handler_name=%q,has_error="false"}`, controller, h)
			want = append(want, "lasso_controller_total_handler_execution"+labels, "lasso_controller_reconcile_time_seconds_count"+labels)
		}
	}
	for _, queue := range []string{"/v1, Kind=ConfigMap", "/v1, Kind=Namespace", "kubefip.k8s.binbash.org/v1, Kind=FloatingIP",
		"kubefip.k8s.binbash.org/v1, Kind=FloatingIPAllocation", "kubefip.k8s.binbash.org/v1, Kind=FloatingIPRange",
		"management.cattle.io/v3, Kind=Cluster", "provisioning.cattle.io/v1, Kind=Cluster", "kube-fip-guest"} {
		for _, series := range []string{"workqueue_depth", "workqueue_adds_total", "workqueue_retries_total"} {
			want = append(want, fmt.Sprintf("%s{name=%q}", series, queue))
		}
	}
	sort.Strings(want)
	// And the operator's own series, beside them.
	own := fmt.Sprintf(`name="ctrl-metrics",namespace=%q}`, f.ns)

	var missing []string
	rig.Within(30*time.Second, func() bool {
		_, body := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
		served := map[string]bool{}
		for _, line := range strings.Split(body, "\n") {
			if i := strings.LastIndexByte(line, ' '); i > 0 && !strings.HasPrefix(line, "#") {
				served[line[:i]] = true
			}
		}
		missing = missing[:0]
		if !hasSeries(served, "kubefipoperator_floatingip_ready{", own) {
			missing = append(missing, "kubefipoperator_floatingip_ready{..."+own)
		}
		for _, s := range want {
			if !served[s] {
				missing = append(missing, s)
			}
		}
		return len(missing) == 0
	})
	if len(missing) > 0 {
		t.Errorf("/metrics lacks %d of %d series:\n%s", len(missing), len(want), strings.Join(missing, "\n"))
	}
}

// hasSeries reports whether served holds a series that starts with prefix and ends with suffix.
func hasSeries(served map[string]bool, prefix, suffix string) bool {
	for s := range served {
		if strings.HasPrefix(s, prefix) && strings.HasSuffix(s, suffix) {
			return true
		}
	}
	return false
}
