package integration

import (
	"context"
	"fmt"
	appsv1 "k8s.io/api/apps/v1"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/test/rig"
)

// Values whose shape the schema takes but whose meaning changes what runs in a guest, against real
// guest API servers: each is refused before anything is fetched, naming the key, and the guest
// holds nothing of it. Each case looks at the guest for the effect the value would have had.

// meaningCase is one configuration and what it would have done in the guest.
type meaningCase struct {
	name string
	// data are the kube-fip-config keys changed from the benign configuration.
	data map[string]string
	// says is what KubevipInstalled must name.
	says []string
	// effect describes, from the guest, what the configuration did there ("" when nothing).
	effect func(t *testing.T, gc *guestCluster) string
}

// guestDaemonSets are the DaemonSets of every namespace of the guest.
func guestDaemonSets(t *testing.T, gc *guestCluster) []appsv1.DaemonSet {
	t.Helper()
	dss, err := gc.direct.AppsV1().DaemonSets("").List(context.Background(), listAll())
	if err != nil {
		t.Fatal(err)
	}
	return dss.Items
}

// kubevipEnvIn describes every variable of the guest's DaemonSets whose name is one of names.
func kubevipEnvIn(t *testing.T, gc *guestCluster, names ...string) string {
	var out []string
	for _, ds := range guestDaemonSets(t, gc) {
		for _, c := range ds.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				for _, n := range names {
					if e.Name == n {
						out = append(out, fmt.Sprintf("DaemonSet %s/%s runs kube-vip with %s=%q", ds.Namespace, ds.Name, e.Name, e.Value))
					}
				}
			}
		}
	}
	return strings.Join(out, "; ")
}

// podSpecsIn describes what of the guest's DaemonSets' pods the values would have set: a priority
// class, labels beyond the selector's.
func podSpecsIn(t *testing.T, gc *guestCluster) string {
	var out []string
	for _, ds := range guestDaemonSets(t, gc) {
		if p := ds.Spec.Template.Spec.PriorityClassName; p != "" {
			out = append(out, fmt.Sprintf("DaemonSet %s/%s has priority class %s", ds.Namespace, ds.Name, p))
		}
		for k, v := range ds.Spec.Template.Labels {
			if ds.Spec.Selector == nil || ds.Spec.Selector.MatchLabels[k] != v {
				out = append(out, fmt.Sprintf("DaemonSet %s/%s gives its pods the label %s=%s", ds.Namespace, ds.Name, k, v))
			}
		}
	}
	return strings.Join(out, "; ")
}

// TestInstallPolicyMeaning: values of the right shape whose meaning changes what runs or where the
// operator writes are refused, and the guest holds nothing of them:
//   - kube-vip's routing-table mode against the node's main table with its clean-up on, which
//     deletes every route kube-vip did not add, the node's default route included;
//   - kube-vip's Service Lease under another component's name;
//   - a priority class that preempts the control plane's pods;
//   - pod labels that put kube-vip's host-network pods into another Service's endpoints;
//   - kubevipNamespace naming a tenant's namespace, where the tenant could edit the privileged
//     DaemonSet;
//   - a provider configMapName naming someone else's ConfigMap, into which the operator would
//     write its address pool.
//
// The cases take turns on one guest; with the benign configuration it then gets both releases
// and its address.
func TestInstallPolicyMeaning(t *testing.T) {
	shard := shards.TakeEarly(t)
	ctx := context.Background()
	charts := startCountingChartRepo(t, defaultCharts()...)
	f := newFixture(t, "kube-fip-ipmeaning")
	proxy := shard.StartClusterProxy(t)
	benign := map[string]string{"operateGuestClusterInterval": "2", "kubevipGuestInstall": "enabled", "kubevipChartRepoUrl": charts.URL}
	withKubevip := func(edit func(map[string]interface{})) map[string]string {
		return map[string]string{config.KeyKubevipChartValues: kubevipValuesWith(t, edit)}
	}
	victim := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"},
		Data: map[string]string{"Corefile": ".:53 {\n    forward . /etc/resolv.conf\n}\n"}}
	cases := []meaningCase{
		{"the node's main routing table, cleaned", withKubevip(func(v map[string]interface{}) {
			env := v["env"].(map[string]interface{})
			env["vip_routingtable"], env["vip_routingtableid"], env["vip_cleanroutingtable"] = "true", "254", "true"
		}), []string{config.KeyKubevipChartValues, "routingtable mode"}, func(t *testing.T, gc *guestCluster) string {
			return kubevipEnvIn(t, gc, "vip_routingtable", "vip_routingtableid", "vip_cleanroutingtable")
		}},
		{"another component's Lease", withKubevip(func(v map[string]interface{}) {
			v["env"].(map[string]interface{})["svc_leasename"] = "kube-controller-manager"
		}), []string{config.KeyKubevipChartValues, "env.svc_leasename"}, func(t *testing.T, gc *guestCluster) string {
			return kubevipEnvIn(t, gc, "svc_leasename")
		}},
		{"a priority class that preempts the control plane", withKubevip(func(v map[string]interface{}) {
			v["priorityClassName"] = "system-node-critical"
		}), []string{config.KeyKubevipChartValues, "priorityClassName"}, podSpecsIn},
		{"pod labels of another Service", withKubevip(func(v map[string]interface{}) {
			v["extraLabels"] = map[string]interface{}{"app": "ingress-nginx"}
		}), []string{config.KeyKubevipChartValues, "extraLabels"}, podSpecsIn},
		{"a tenant's namespace", map[string]string{config.KeyKubevipNamespace: "tenant-a"},
			[]string{config.KeyKubevipNamespace, "tenant-a"}, func(t *testing.T, gc *guestCluster) string {
				return strings.Join(reachedGuest(t, gc), "; ")
			}},
		{"someone else's ConfigMap as the provider's", map[string]string{config.KeyKubevipCloudProviderChartValues: "configMapName: coredns\n"},
			[]string{config.KeyKubevipCloudProviderChartValues, "configMapName"}, func(t *testing.T, gc *guestCluster) string {
				got, err := gc.direct.CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
				if err != nil {
					return "kube-system/coredns: " + err.Error()
				}
				if len(got.Data) != 1 || got.Data["Corefile"] != victim.Data["Corefile"] {
					out, _ := yaml.Marshal(got.Data)
					return "kube-system/coredns now holds\n" + string(out)
				}
				return ""
			}},
	}
	caseConfig := func(c meaningCase) map[string]string {
		data := map[string]string{}
		for k, v := range benign {
			data[k] = v
		}
		for k, v := range c.data {
			data[k] = v
		}
		return data
	}
	f.createRange("ipmeaning", "10.190.0.0/28")
	// The operator starts with the first case's configuration, so that the FloatingIP never meets
	// the benign one before the end.
	f.operatorConfig(caseConfig(cases[0]))
	f.operator()
	// One guest for every case: a refused configuration leaves nothing in it, so each case finds
	// it as the last one left it, and a case that left something is seen.
	gc := rancherCluster(t, proxy, "ipmeaning", "c-m-ipmeaning", nil, shard.StartGuest(t, "ipmeaning"))
	if _, err := gc.direct.CoreV1().ConfigMaps("kube-system").Create(ctx, victim.DeepCopy(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.extraNamespace(gc.id)
	f.createFIPIn(gc.id, "ipmeaning", "ipmeaning", "10.190.0.2")
	for i, c := range cases {
		if i > 0 {
			f.operatorConfig(caseConfig(c))
		}
		refused := func(x *v1.FloatingIP) bool {
			msg := message(x.Status.Conditions, v1.KubevipInstalled)
			ok := kubevipReason(v1.ReasonChartValuesNotAllowed)(x)
			for _, s := range c.says {
				ok = ok && strings.Contains(msg, s)
			}
			return ok
		}
		var x *v1.FloatingIP
		if !rig.Within(90*time.Second, func() bool { x = f.getFIPIn(gc.id, "ipmeaning"); return refused(x) }) {
			t.Errorf("%s: KubevipInstalled %q; want %s naming %s", c.name, message(x.Status.Conditions, v1.KubevipInstalled),
				v1.ReasonChartValuesNotAllowed, strings.Join(c.says, " and "))
		}
		// More passes, so that whatever the configuration would do has happened.
		time.Sleep(5 * time.Second)
		if effect := c.effect(t, gc); effect != "" {
			t.Errorf("%s: in the guest: %s", c.name, effect)
		}
	}
	if n := charts.requests.Load(); n != 0 {
		t.Errorf("the chart repository got %d requests; refused values come before any fetch", n)
	}

	// The benign configuration installs into the same guest, so that each "nothing there" above
	// could have seen something.
	f.operatorConfig(benign)
	f.waitFIPIn(gc.id, "ipmeaning", 90*time.Second, "KubevipInstalled=True", func(x *v1.FloatingIP) bool { return v1.KubevipInstalled.IsTrue(x) })
	gc.waitCIDR(t, "10.190.0.2/32", 30*time.Second)
}
