package integration

import (
	"fmt"
	"testing"
	"time"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// TestGuestStalledChartSourceDoesNotStopOthers: the chart repository accepts connections and never
// answers. Twelve labelled clusters, more than the ten guest workers, need kube-vip from it; two
// unlabelled clusters need only their ConfigMap. The two are configured within seconds, and the
// twelve say that their chart is still being fetched.
func TestGuestStalledChartSourceDoesNotStopOthers(t *testing.T) {
	f := newFixture(t, "c-m-stall")
	proxy := f.shard.StartClusterProxy(t)
	// The labelled clusters never get past the chart fetch, so one API server serves them all.
	stuckGuest := f.shard.StartGuest(t, "stall-stuck")
	var stuck []*guestCluster
	for i := 0; i < 12; i++ {
		gc := rancherCluster(t, proxy, fmt.Sprintf("stall-%02d", i), fmt.Sprintf("c-m-stal%04d", i), map[string]string{"kube-vip": "True"}, stuckGuest)
		f.extraNamespace(gc.id)
		stuck = append(stuck, gc)
	}
	var free []*guestCluster
	for _, name := range []string{"stall-free-a", "stall-free-b"} {
		gc := rancherCluster(t, proxy, name, "c-m-"+name[len(name)-6:], nil, f.shard.StartGuest(t, name))
		f.extraNamespace(gc.id)
		free = append(free, gc)
	}

	f.operatorConfig(map[string]string{"operateGuestClusterInterval": "600", "kubevipGuestInstall": "clusterlabel",
		"kubevipChartRepoUrl": "http://" + chartrepo.StallingServerForTest(t)})
	f.operator()
	f.createRange("stall", "10.155.0.0/27")
	// The stuck ones first, so that they are ahead in the queue.
	for i, gc := range stuck {
		f.createFIPIn(gc.id, gc.name+"-kubevip", "stall", fmt.Sprintf("10.155.0.%d", i+1))
	}
	start := time.Now()
	for i, gc := range free {
		f.createFIPIn(gc.id, gc.name+"-kubevip", "stall", fmt.Sprintf("10.155.0.%d", 20+i))
	}
	for i, gc := range free {
		if !gc.hasCIDR(t, fmt.Sprintf("10.155.0.%d/32", 20+i), 30*time.Second) {
			t.Fatalf("%s not configured within 30s while the chart repository stalls: %s", gc.name, suite.StatusText(f.getFIPIn(gc.id, gc.name+"-kubevip")))
		}
	}
	took := time.Since(start)
	for _, gc := range stuck {
		f.waitFIPIn(gc.id, gc.name+"-kubevip", 30*time.Second, "KubevipInstalled=ChartFetching", func(x *v1.FloatingIP) bool {
			c, ok := v1.GetCondition(x.Status.Conditions, v1.KubevipInstalled)
			return ok && c.Reason == "ChartFetching"
		})
	}
	t.Logf("2 guests configured in %s while 12 waited for a stalled chart repository (10 workers)", took.Round(100*time.Millisecond))
}
