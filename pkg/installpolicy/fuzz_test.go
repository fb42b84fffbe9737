package installpolicy

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

// FuzzWhatWouldBeSent: whatever values a configuration gives, those the schema accepts render,
// through the operator's own install path (the plan's approval of the upstream chart stand-ins),
// into objects the judge approves and that hold none of what the operator must never apply in a
// guest. The checks read the approved manifest as plain YAML, apart from the judge's own code.
func FuzzWhatWouldBeSent(f *testing.F) {
	for _, seed := range []string{
		config.DefaultKubevipChartValues,
		config.DefaultKubevipCloudProviderChartValues,
		"",
		"podMonitor: {enabled: true, labels: {a: b}}\nenv: {prometheus_server: ':2112'}",
		"nodeSelector: {a: b}\ntolerations: [{key: a, operator: Exists}]\npriorityClassName: system-node-critical",
		"affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: a, operator: In, values: [b]}]}]}}}",
		"resources: {limits: {cpu: 100m, memory: 64Mi}}\nimagePullSecrets: [{name: pull}]",
		"extraLabels: {team: net}\nupdateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 2}}",
		"envValueFrom: {bgp_routerid: {fieldRef: {fieldPath: status.podIP}}}",
		"env: {cp_enable: 'true', vip_leaderelection: true, lb_port: 6443}\nconfig: {address: 10.0.0.1}",
		"image: {repository: plndr/kube-vip, tag: v0.6.4}\nconfig: {vip_interface: eth0}",
		"annotations: {helm.sh/hook: pre-install}",
		"envFrom: {command: [sh]}",
		"priorityClassName: \"a\u2028      hostPID: true\"",
		"tolerations: [{key: a, Key: b}]",
		"replicasCount: 2\nconfigMapName: pools\nenableloadbalancerClass: true",
	} {
		f.Add(seed, true)
		f.Add(seed, false)
	}
	f.Fuzz(func(t *testing.T, doc string, kubevip bool) {
		raw := map[string]interface{}{}
		if yaml.Unmarshal([]byte(doc), &raw) != nil {
			return
		}
		chart := guestchart.CloudProvider
		if kubevip {
			chart = guestchart.Kubevip
		}
		p, err := plan(t, chart, raw)
		if err != nil {
			return // refused by the schema: nothing is sent
		}
		// What the schema accepts renders into what the judge approves: the two never disagree.
		a, err := p.Approve(chartrepo.DefaultChart(chart), release())
		if err != nil {
			t.Fatalf("values the schema accepts are refused when rendered: %v", err)
		}
		for _, doc := range strings.Split(a.Manifest, "\n---\n") {
			var obj map[string]interface{}
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil || obj == nil {
				t.Fatalf("the approved manifest holds a document that does not parse: %v", err)
			}
			neverSent(t, chart, &unstructured.Unstructured{Object: obj})
		}
	})
}

// neverSent fails when obj holds what no approved object may hold.
func neverSent(t *testing.T, chart guestchart.Chart, obj *unstructured.Unstructured) {
	t.Helper()
	for k := range obj.GetAnnotations() {
		if strings.HasPrefix(k, "helm.sh/") {
			t.Fatalf("%s %s carries the annotation %s", obj.GetKind(), obj.GetName(), k)
		}
	}
	if ns := obj.GetNamespace(); ns != "" && ns != "kube-system" {
		t.Fatalf("%s %s is in namespace %s", obj.GetKind(), obj.GetName(), ns)
	}
	spec, found, _ := unstructured.NestedMap(obj.Object, "spec", "template", "spec")
	if !found {
		return
	}
	for _, field := range []string{"hostPID", "hostIPC", "volumes", "initContainers", "ephemeralContainers", "securityContext", "hostAliases", "automountServiceAccountToken", "shareProcessNamespace"} {
		if _, set := spec[field]; set {
			t.Fatalf("%s %s sets spec.template.spec.%s", obj.GetKind(), obj.GetName(), field)
		}
	}
	if net, _ := spec["hostNetwork"].(bool); net && chart != guestchart.Kubevip {
		t.Fatalf("%s %s uses the host's network", obj.GetKind(), obj.GetName())
	}
	containers, _ := spec["containers"].([]interface{})
	if len(containers) != 1 {
		t.Fatalf("%s %s runs %d containers", obj.GetKind(), obj.GetName(), len(containers))
	}
	c, _ := containers[0].(map[string]interface{})
	for _, field := range []string{"volumeMounts", "volumeDevices", "lifecycle", "livenessProbe", "readinessProbe", "startupProbe", "envFrom", "workingDir", "stdin", "tty"} {
		if _, set := c[field]; set {
			t.Fatalf("the container sets %s", field)
		}
	}
	if _, set := c["command"]; set && chart == guestchart.Kubevip {
		t.Fatal("kube-vip's container sets a command")
	}
	if args, _ := c["args"].([]interface{}); chart == guestchart.Kubevip && (len(args) != 1 || args[0] != "manager") {
		t.Fatalf("kube-vip's container has the arguments %v", args)
	}
	ports, _ := c["ports"].([]interface{})
	for _, p := range ports {
		if m, _ := p.(map[string]interface{}); m["hostPort"] != nil || m["hostIP"] != nil {
			t.Fatalf("the container asks for a host port: %v", m)
		}
	}
	image, _ := c["image"].(string)
	repo, _, _ := strings.Cut(image, ":")
	allowed := map[guestchart.Chart][]string{guestchart.Kubevip: {"ghcr.io/kube-vip/kube-vip", "plndr/kube-vip", "docker.io/plndr/kube-vip"},
		guestchart.CloudProvider: {"kubevip/kube-vip-cloud-provider", "docker.io/kubevip/kube-vip-cloud-provider", "ghcr.io/kube-vip/kube-vip-cloud-provider"}}
	ok := false
	for _, a := range allowed[chart] {
		ok = ok || repo == a
	}
	if !ok {
		t.Fatalf("the container runs %s", image)
	}
	if sc, _ := c["securityContext"].(map[string]interface{}); sc != nil {
		if sc["privileged"] == true {
			t.Fatal("the container is privileged")
		}
		caps, _ := sc["capabilities"].(map[string]interface{})
		add, _ := caps["add"].([]interface{})
		for _, capability := range add {
			if chart != guestchart.Kubevip || (capability != "NET_ADMIN" && capability != "NET_RAW") {
				t.Fatalf("the container adds the capability %v", capability)
			}
		}
	}
	env, _ := c["env"].([]interface{})
	for _, e := range env {
		m, _ := e.(map[string]interface{})
		if from, _ := m["valueFrom"].(map[string]interface{}); from != nil {
			if _, field := from["fieldRef"]; !field || len(from) != 1 {
				t.Fatalf("env %v is filled from something other than the pod's fields", m["name"])
			}
		}
		if name, _ := m["name"].(string); name == "kubernetes_addr" || name == "k8s_config_file" {
			t.Fatalf("env %s points kube-vip away from the guest", name)
		}
	}
}
