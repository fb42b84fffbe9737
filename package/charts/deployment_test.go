package charts

import (
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func renderDeployment(t *testing.T, values map[string]interface{}) (*appsv1.Deployment, corev1.Container) {
	t.Helper()
	var d appsv1.Deployment
	convert(t, find(t, renderOperator(t, values), "Deployment", "kube-fip-operator"), &d)
	if n := len(d.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("%d containers; want 1", n)
	}
	return &d, d.Spec.Template.Spec.Containers[0]
}

// TestPodHardening checks the pod and container security settings with the defaults and with every
// switch on: non-root, read-only root filesystem with a writable /tmp, no capabilities, no privilege
// escalation, RuntimeDefault seccomp, resource requests and limits.
func TestPodHardening(t *testing.T) {
	for name, values := range map[string]map[string]interface{}{"defaults": nil, "all-switches": allSwitchesOn()} {
		t.Run(name, func(t *testing.T) {
			d, c := renderDeployment(t, values)
			pod := d.Spec.Template.Spec.SecurityContext
			if pod == nil || pod.RunAsNonRoot == nil || !*pod.RunAsNonRoot || pod.RunAsUser == nil || *pod.RunAsUser == 0 {
				t.Errorf("pod securityContext %+v: want runAsNonRoot and a non-zero runAsUser", pod)
			}
			if pod == nil || pod.SeccompProfile == nil || pod.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("pod seccompProfile: want RuntimeDefault")
			}
			sc := c.SecurityContext
			switch {
			case sc == nil:
				t.Fatal("no container securityContext")
			case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
				t.Error("container root filesystem is writable")
			case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
				t.Error("container may escalate privileges")
			case sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0:
				t.Errorf("capabilities %+v: want drop [ALL] and nothing added", sc.Capabilities)
			case sc.Privileged != nil && *sc.Privileged:
				t.Error("container is privileged")
			}
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if _, ok := c.Resources.Requests[r]; !ok {
					t.Errorf("no %s request", r)
				}
				if _, ok := c.Resources.Limits[r]; !ok {
					t.Errorf("no %s limit", r)
				}
			}
			// One writable emptyDir at /tmp for Helm's caches; anything else is a Secret mounted
			// read-only (the additional trusted CAs).
			mounts := map[string]corev1.VolumeMount{}
			for _, m := range c.VolumeMounts {
				mounts[m.Name] = m
			}
			var emptyDirs int
			for _, v := range d.Spec.Template.Spec.Volumes {
				m, mounted := mounts[v.Name]
				switch {
				case v.EmptyDir != nil && mounted && m.MountPath == "/tmp":
					emptyDirs++
				case v.Secret != nil && mounted && m.ReadOnly:
				default:
					t.Errorf("volume %+v mounted as %+v: want the emptyDir at /tmp, or a Secret mounted read-only", v, m)
				}
			}
			if emptyDirs != 1 {
				t.Errorf("want one emptyDir mounted at /tmp for Helm's caches; mounts %+v, volumes %+v", c.VolumeMounts, d.Spec.Template.Spec.Volumes)
			}
			env := map[string]string{}
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
			for _, k := range []string{"HOME", "HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"} {
				if v := env[k]; len(v) < 4 || v[:4] != "/tmp" {
					t.Errorf("%s = %q; want a path under /tmp", k, v)
				}
			}
		})
	}
}

// TestProbesAndPort: /healthz and /readyz are probed on the named metrics port, which is the
// configured metricsPort and is also passed as --metrics-port.
func TestProbesAndPort(t *testing.T) {
	for name, tc := range map[string]struct {
		values map[string]interface{}
		port   int32
	}{"defaults": {nil, 8080}, "all-switches": {allSwitchesOn(), 9090}} {
		t.Run(name, func(t *testing.T) {
			_, c := renderDeployment(t, tc.values)
			if len(c.Ports) != 2 || c.Ports[0].Name != "metrics" || c.Ports[0].ContainerPort != tc.port ||
				c.Ports[1].Name != "webhook" || c.Ports[1].ContainerPort != 9443 {
				t.Errorf("ports %+v; want metrics on %d and webhook on 9443", c.Ports, tc.port)
			}
			for path, p := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
				if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port != intstr.FromString("metrics") {
					t.Errorf("probe %s: %+v; want httpGet %s on port metrics", path, p, path)
				}
			}
			if !hasArg(c.Args, "--metrics-port="+strconv.Itoa(int(tc.port))) {
				t.Errorf("args %v: want --metrics-port=%d", c.Args, tc.port)
			}
		})
	}
}

// TestDeploymentSettings: image with the system default registry, flags from the values,
// scheduling on Linux nodes with the cattle.io/os toleration, replicas, and the optional PDB.
func TestDeploymentSettings(t *testing.T) {
	d, c := renderDeployment(t, nil)
	if c.Image != "kubefip/kube-fip-operator:dev" {
		t.Errorf("default image %q; want the chart's appVersion as tag", c.Image)
	}
	for _, a := range []string{"--namespace=$(NAMESPACE)", "--threads=5", "--leader-election=true",
		"--guest-workers=10", "--guest-timeout=15s", "--kube-api-qps=0", "--kube-api-burst=0",
		"--fleet-namespace=fleet-default", "--global-data-namespace=cattle-global-data"} {
		if !hasArg(c.Args, a) {
			t.Errorf("default args %v: missing %s", c.Args, a)
		}
	}
	spec := d.Spec.Template.Spec
	if spec.NodeSelector["kubernetes.io/os"] != "linux" {
		t.Errorf("nodeSelector %v; want kubernetes.io/os=linux", spec.NodeSelector)
	}
	want := corev1.Toleration{Key: "cattle.io/os", Operator: corev1.TolerationOpEqual, Value: "linux", Effect: corev1.TaintEffectNoSchedule}
	if len(spec.Tolerations) != 1 || spec.Tolerations[0] != want {
		t.Errorf("tolerations %+v; want %+v", spec.Tolerations, want)
	}
	if spec.ServiceAccountName != "kube-fip-operator" || d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		t.Errorf("serviceAccountName %q, replicas %v", spec.ServiceAccountName, d.Spec.Replicas)
	}

	objs := renderOperator(t, allSwitchesOn())
	convert(t, find(t, objs, "Deployment", "kube-fip-operator"), d)
	c = d.Spec.Template.Spec.Containers[0]
	if c.Image != "registry.example.com:5000/kubefip/kube-fip-operator:v9.9.9" {
		t.Errorf("image %q; want the systemDefaultRegistry prefix and the tag from values", c.Image)
	}
	for _, a := range []string{"--threads=7", "--guest-workers=4", "--guest-timeout=30s", "--kube-api-qps=50", "--kube-api-burst=80",
		"--fleet-namespace=fleet-other", "--global-data-namespace=global-other"} {
		if !hasArg(c.Args, a) {
			t.Errorf("args %v: missing %s", c.Args, a)
		}
	}
	spec = d.Spec.Template.Spec
	if *d.Spec.Replicas != 3 || spec.PriorityClassName != "system-cluster-critical" || spec.Affinity == nil ||
		len(spec.ImagePullSecrets) != 1 || spec.ImagePullSecrets[0].Name != "pull-secret" {
		t.Errorf("replicas %d, priorityClassName %q, affinity %v, imagePullSecrets %v: want the values",
			*d.Spec.Replicas, spec.PriorityClassName, spec.Affinity, spec.ImagePullSecrets)
	}
	var pdb policyv1.PodDisruptionBudget
	convert(t, find(t, objs, "PodDisruptionBudget", "kube-fip-operator"), &pdb)
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 ||
		pdb.Spec.Selector == nil || pdb.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != "kube-fip-operator" {
		t.Errorf("PodDisruptionBudget spec %+v: want maxUnavailable 1 selecting the operator's pods", pdb.Spec)
	}
}

func hasArg(args []string, want string) bool {
	for _, a := range args {
		if a == want {
			return true
		}
	}
	return false
}

// TestGoMemoryLimit: by default the Go runtime's limit follows the container's memory limit: the
// Downward API gives the operator limits.memory and the chart the ratio, and no GOMEMLIMIT is
// set; goMemoryLimit, when set, becomes GOMEMLIMIT; a value that is not a Go memory size, or a
// ratio out of bounds, is refused. GOGC is goGC, 50 by default, within 10 and 1000.
func TestGoMemoryLimit(t *testing.T) {
	env := func(c corev1.Container, name string) (corev1.EnvVar, bool) {
		for _, e := range c.Env {
			if e.Name == name {
				return e, true
			}
		}
		return corev1.EnvVar{}, false
	}
	_, c := renderDeployment(t, nil)
	// lasso's controller metrics, on as Rancher turns them on (and as the test rig runs the
	// operator, see controlplane.ChartEnv).
	if v, ok := env(c, "CATTLE_PROMETHEUS_METRICS"); !ok || v.Value != "true" {
		t.Errorf("CATTLE_PROMETHEUS_METRICS is %+v; want \"true\"", v)
	}
	if v, ok := env(c, "GOMEMLIMIT"); ok {
		t.Errorf("default GOMEMLIMIT %q is set; want the limit derived from the container's", v.Value)
	}
	if v, ok := env(c, "CONTAINER_MEMORY_LIMIT"); !ok || v.ValueFrom == nil || v.ValueFrom.ResourceFieldRef == nil ||
		v.ValueFrom.ResourceFieldRef.Resource != "limits.memory" || v.ValueFrom.ResourceFieldRef.ContainerName != c.Name {
		t.Errorf("CONTAINER_MEMORY_LIMIT %+v; want the container's limits.memory from the Downward API", v)
	}
	if v, _ := env(c, "MEMORY_LIMIT_RATIO"); v.Value != "0.75" {
		t.Errorf("MEMORY_LIMIT_RATIO %q; want 0.75", v.Value)
	}
	if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
		t.Errorf("no container memory limit to derive the runtime's from")
	}
	if v, _ := env(c, "GOGC"); v.Value != "50" {
		t.Errorf("GOGC %q; want 50", v.Value)
	}
	_, c = renderDeployment(t, map[string]interface{}{"goMemoryLimit": "200MiB", "goMemoryLimitRatio": 0.5, "goGC": 100})
	if v, _ := env(c, "GOGC"); v.Value != "100" {
		t.Errorf("GOGC %q with goGC 100; want 100", v.Value)
	}
	if v, _ := env(c, "GOMEMLIMIT"); v.Value != "200MiB" {
		t.Errorf("GOMEMLIMIT %q; want 200MiB", v.Value)
	}
	if v, _ := env(c, "MEMORY_LIMIT_RATIO"); v.Value != "0.5" {
		t.Errorf("MEMORY_LIMIT_RATIO %q; want 0.5", v.Value)
	}
	chart, err := Load(chartDir(OperatorChart))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"60Mi", "60 MiB", "lots"} {
		if _, err := Render(chart, RenderOptions{Values: map[string]interface{}{"goMemoryLimit": bad}, APIVersions: InstallAPIVersions(), KubeVersion: testKubeVersion}); err == nil {
			t.Errorf("goMemoryLimit %q rendered; want it refused by the schema", bad)
		}
	}
	for _, bad := range []interface{}{0, 1, "half"} {
		if _, err := Render(chart, RenderOptions{Values: map[string]interface{}{"goMemoryLimitRatio": bad}, APIVersions: InstallAPIVersions(), KubeVersion: testKubeVersion}); err == nil {
			t.Errorf("goMemoryLimitRatio %v rendered; want it refused by the schema", bad)
		}
	}
	for _, bad := range []interface{}{0, 5, 5000, "off", "50", 50.5} {
		if _, err := Render(chart, RenderOptions{Values: map[string]interface{}{"goGC": bad}, APIVersions: InstallAPIVersions(), KubeVersion: testKubeVersion}); err == nil {
			t.Errorf("goGC %v rendered; want it refused by the schema", bad)
		}
	}
}
