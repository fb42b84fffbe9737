package charts

import (
	"reflect"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// Rancher's chart's conventions (rancher/rancher chart/values.yaml and templates/deployment.yaml,
// read at v2.15.0-alpha21, commit 59bd052e44): the Secret and key of the additional CAs, and the
// default noProxy.
const (
	rancherCASecret = "tls-ca-additional"
	rancherCAKey    = "ca-additional.pem"
	rancherNoProxy  = "127.0.0.0/8,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,.svc,.cluster.local"
)

func envOf(c corev1.Container) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	return env
}

// TestAdditionalTrustedCAsAndProxy: by default the operator gets no bundle and no proxy, and
// noProxy is Rancher's default. additionalTrustedCAs mounts Rancher's Secret tls-ca-additional,
// key ca-additional.pem, read-only, at the path --additional-trusted-cas names; proxy and noProxy
// become HTTP_PROXY, HTTPS_PROXY and NO_PROXY of the operator and of the clean-up Job, which reaches
// the guests through Rancher as the operator does.
func TestAdditionalTrustedCAsAndProxy(t *testing.T) {
	_, values := loadQuestions(t)
	if v, _ := values.PathValue("noProxy"); v != rancherNoProxy {
		t.Errorf("noProxy default %q; want Rancher's %q", v, rancherNoProxy)
	}
	d, c := renderDeployment(t, nil)
	env := envOf(c)
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"} {
		if _, ok := env[k]; ok {
			t.Errorf("by default the operator has %s", k)
		}
	}
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--additional-trusted-cas") {
			t.Errorf("by default the operator has %s", a)
		}
	}
	if n := len(d.Spec.Template.Spec.Volumes); n != 1 {
		t.Errorf("by default %d volumes; want /tmp's alone", n)
	}

	values = map[string]interface{}{"additionalTrustedCAs": true, "proxy": "http://proxy.example.com:3128", "noProxy": "10.0.0.0/8,.svc,rancher.example.com"}
	d, c = renderDeployment(t, values)
	var path string
	for _, a := range c.Args {
		if p, ok := strings.CutPrefix(a, "--additional-trusted-cas="); ok {
			path = p
		}
	}
	var mounted string
	for _, m := range c.VolumeMounts {
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name != m.Name || v.Secret == nil || v.Secret.SecretName != rancherCASecret {
				continue
			}
			if !m.ReadOnly || len(v.Secret.Items) != 1 || v.Secret.Items[0].Key != rancherCAKey {
				t.Errorf("the CA Secret's volume %+v mounted as %+v: want key %s alone, read-only", v, m, rancherCAKey)
			}
			mounted = m.MountPath + "/" + v.Secret.Items[0].Path
		}
	}
	if path == "" || path != mounted {
		t.Errorf("--additional-trusted-cas=%q, the Secret %s's key %s mounted at %q: want the flag to name the mounted file", path, rancherCASecret, rancherCAKey, mounted)
	}
	wantEnv := map[string]string{"HTTP_PROXY": "http://proxy.example.com:3128", "HTTPS_PROXY": "http://proxy.example.com:3128", "NO_PROXY": "10.0.0.0/8,.svc,rancher.example.com"}
	env = envOf(c)
	got := map[string]string{}
	for k := range wantEnv {
		got[k] = env[k]
	}
	if !reflect.DeepEqual(got, wantEnv) {
		t.Errorf("the operator's proxy environment %v; want %v", got, wantEnv)
	}

	values["cleanup"] = map[string]interface{}{"onUninstall": "delete", "guests": "clean"}
	_, hooks := renderHooks(t, values)
	var job batchv1.Job
	convert(t, find(t, hooks, "Job", cleanupName), &job)
	env = envOf(job.Spec.Template.Spec.Containers[0])
	for k := range wantEnv {
		got[k] = env[k]
	}
	if !reflect.DeepEqual(got, wantEnv) {
		t.Errorf("the clean-up Job's proxy environment %v; want %v", got, wantEnv)
	}
}

// TestAirGapGroupAsksForCAAndProxy: the form's Air gap group asks for the three values, with
// values.yaml's defaults.
func TestAirGapGroupAsksForCAAndProxy(t *testing.T) {
	questions, _ := loadQuestions(t)
	want := map[string]string{"additionalTrustedCAs": "boolean", "proxy": "string", "noProxy": "string"}
	for _, q := range questions {
		if typ, ok := want[q.Variable]; ok {
			if q.Group != "Air gap" || q.Type != typ {
				t.Errorf("%s: group %q, type %q; want Air gap, %s", q.Variable, q.Group, q.Type, typ)
			}
			delete(want, q.Variable)
		}
	}
	if len(want) != 0 {
		t.Errorf("the form does not ask for %v", want)
	}
}
