package charts

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubefip/kube-fip-operator/pkg/cleanup"
)

const cleanupName = "kube-fip-operator-cleanup"

// renderHooks renders the operator chart as `helm template` does and returns its hooks (which
// Render leaves out, as they are not part of the release's manifest) and each hook's object.
func renderHooks(t *testing.T, values map[string]interface{}) ([]*release.Hook, []*unstructured.Unstructured) {
	t.Helper()
	rel, err := renderRelease(t, values)
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, h := range rel.Hooks {
		decoded, err := decodeManifest(h.Manifest)
		if err != nil || len(decoded) != 1 {
			t.Fatalf("hook %s: %d objects, %v", h.Path, len(decoded), err)
		}
		objs = append(objs, decoded[0])
	}
	return rel.Hooks, objs
}

// renderRelease renders the operator chart offline, with the CRD chart's and Rancher Monitoring's
// APIs present.
func renderRelease(t *testing.T, values map[string]interface{}) (*release.Release, error) {
	t.Helper()
	c, err := Load(chartDir(OperatorChart))
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&action.Configuration{Log: func(string, ...interface{}) {}})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = OperatorChart, testNamespace
	install.APIVersions = append(InstallAPIVersions(), monitoringAPIVersions...)
	kv, err := chartutil.ParseKubeVersion(testKubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	install.KubeVersion = kv
	return install.Run(c, values)
}

// TestCleanupHookOrderAndLifetime: by default the chart has exactly the clean-up hooks, all
// pre-delete, the ServiceAccount and roles weighted before their bindings and both before the Job,
// each deleted once the hooks succeeded and before being created again; none of them is part of
// the release's own manifest, so they exist only while the hook runs. The clean-up's report is
// never rendered, so that the uninstall leaves it.
func TestCleanupHookOrderAndLifetime(t *testing.T) {
	hooks, _ := renderHooks(t, nil)
	weights := map[string]int{}
	for _, h := range hooks {
		if h.Name != cleanupName {
			t.Errorf("unexpected hook %s %s", h.Kind, h.Name)
		}
		if !reflect.DeepEqual(h.Events, []release.HookEvent{release.HookPreDelete}) {
			t.Errorf("%s %s: events %v; want only pre-delete", h.Kind, h.Name, h.Events)
		}
		policies := map[release.HookDeletePolicy]bool{}
		for _, p := range h.DeletePolicies {
			policies[p] = true
		}
		if len(policies) != 2 || !policies[release.HookBeforeHookCreation] || !policies[release.HookSucceeded] {
			t.Errorf("%s %s: delete policies %v; want before-hook-creation and hook-succeeded", h.Kind, h.Name, h.DeletePolicies)
		}
		weights[h.Kind] = h.Weight
	}
	want := []string{"ClusterRole", "ClusterRoleBinding", "Job", "Role", "RoleBinding", "ServiceAccount"}
	if len(hooks) != len(want) || len(weights) != len(want) {
		t.Fatalf("hooks by kind %v; want one each of %v", weights, want)
	}
	for _, grant := range []string{"ServiceAccount", "ClusterRole", "Role"} {
		for _, binding := range []string{"ClusterRoleBinding", "RoleBinding"} {
			if weights[grant] >= weights[binding] {
				t.Errorf("%s weight %d not before %s weight %d", grant, weights[grant], binding, weights[binding])
			}
		}
	}
	for _, k := range want {
		if k != "Job" && weights[k] >= weights["Job"] {
			t.Errorf("%s weight %d not before the Job's %d", k, weights[k], weights["Job"])
		}
	}
	for _, o := range renderOperator(t, nil) {
		if o.GetName() == cleanupName {
			t.Errorf("%s %s is in the release manifest; want it only as a hook", o.GetKind(), o.GetName())
		}
	}
	// The report of the guests not cleaned must outlive the uninstall: the chart never owns it.
	values := allSwitchesOn()
	values["cleanup"] = map[string]interface{}{"onUninstall": "delete"}
	_, hookObjs := renderHooks(t, values)
	for _, o := range append(renderOperator(t, values), hookObjs...) {
		if o.GetName() == cleanup.ReportConfigMapName {
			t.Errorf("the chart renders %s %s; Helm would delete the report with the release", o.GetKind(), o.GetName())
		}
	}
}

// TestCleanupHookRBAC: the hook's roles allow only what the clean-up does — get, list, update and
// delete of the two kinds cluster-wide; in the release namespace, reading the operator's
// Deployment by name, scaling it, and listing pods — with no wildcard, bound to the hook's own
// ServiceAccount, which the Job runs as.
func TestCleanupHookRBAC(t *testing.T) {
	_, objs := renderHooks(t, nil)
	var cr rbacv1.ClusterRole
	convert(t, find(t, objs, "ClusterRole", cleanupName), &cr)
	checkGrants(t, "cleanup ClusterRole", cr.Rules,
		append(grantsOf("kubefip.k8s.binbash.org", []string{"floatingips", "floatingipranges"}, "get", "list", "update", "delete"),
			grantsOf("kubefip.k8s.binbash.org", []string{"floatingipallocations"}, "list", "delete")...))

	var role rbacv1.Role
	convert(t, find(t, objs, "Role", cleanupName), &role)
	if role.Namespace != testNamespace {
		t.Errorf("cleanup Role in namespace %q; want %q", role.Namespace, testNamespace)
	}
	// The Deployment and its scale by name only; pods cannot be named in advance.
	wantRules := []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{"kube-fip-operator"}, Verbs: []string{"get"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments/scale"}, ResourceNames: []string{"kube-fip-operator"}, Verbs: []string{"get", "update"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
	}
	if !reflect.DeepEqual(role.Rules, wantRules) {
		t.Errorf("cleanup Role rules:\n%+v\nwant:\n%+v", role.Rules, wantRules)
	}
	for _, rules := range [][]rbacv1.PolicyRule{cr.Rules, role.Rules} {
		for _, r := range rules {
			for _, f := range [][]string{r.APIGroups, r.Resources, r.Verbs, r.ResourceNames} {
				if strings.Contains(strings.Join(f, ","), "*") {
					t.Errorf("cleanup rule with a wildcard: %+v", r)
				}
			}
		}
	}

	subject := rbacv1.Subject{Kind: "ServiceAccount", Name: cleanupName, Namespace: testNamespace}
	var crb rbacv1.ClusterRoleBinding
	convert(t, find(t, objs, "ClusterRoleBinding", cleanupName), &crb)
	var rb rbacv1.RoleBinding
	convert(t, find(t, objs, "RoleBinding", cleanupName), &rb)
	for what, b := range map[string]struct {
		ref      rbacv1.RoleRef
		subjects []rbacv1.Subject
	}{
		"ClusterRoleBinding": {crb.RoleRef, crb.Subjects},
		"RoleBinding":        {rb.RoleRef, rb.Subjects},
	} {
		wantKind := strings.TrimSuffix(what, "Binding")
		if b.ref.Kind != wantKind || b.ref.Name != cleanupName || !reflect.DeepEqual(b.subjects, []rbacv1.Subject{subject}) {
			t.Errorf("%s: roleRef %+v subjects %+v; want %s %s for %+v", what, b.ref, b.subjects, wantKind, cleanupName, subject)
		}
	}
	find(t, objs, "ServiceAccount", cleanupName)
	var job batchv1.Job
	convert(t, find(t, objs, "Job", cleanupName), &job)
	if job.Spec.Template.Spec.ServiceAccountName != cleanupName {
		t.Errorf("Job runs as %q; want %q", job.Spec.Template.Spec.ServiceAccountName, cleanupName)
	}
}

// TestCleanupHookJob: the Job runs the Deployment's image (registry prefix and tag included) as
// `cleanup` of the same binary with the mode the values choose, under the Deployment's pod and
// container security contexts, scheduling and pull secrets; its pod is not one the Deployment's
// selector matches, since the clean-up waits for those to stop.
func TestCleanupHookJob(t *testing.T) {
	for _, mode := range []string{"", "keep", "delete"} {
		values := allSwitchesOn()
		want := mode
		if mode == "" {
			want = "keep" // the default
		} else {
			values["cleanup"] = map[string]interface{}{"onUninstall": mode, "stopTimeout": "45s"}
		}
		_, objs := renderHooks(t, values)
		var job batchv1.Job
		convert(t, find(t, objs, "Job", cleanupName), &job)
		var d appsv1.Deployment
		convert(t, find(t, renderOperator(t, values), "Deployment", "kube-fip-operator"), &d)

		pod, dpod := job.Spec.Template.Spec, d.Spec.Template.Spec
		if len(pod.Containers) != 1 {
			t.Fatalf("mode %q: Job has %d containers", mode, len(pod.Containers))
		}
		c, dc := pod.Containers[0], dpod.Containers[0]
		if c.Image != dc.Image || !strings.HasPrefix(c.Image, "registry.example.com:5000/") || c.ImagePullPolicy != dc.ImagePullPolicy {
			t.Errorf("mode %q: Job image %q (%s); want the Deployment's %q (%s)", mode, c.Image, c.ImagePullPolicy, dc.Image, dc.ImagePullPolicy)
		}
		timeout := "2m"
		if mode != "" {
			timeout = "45s"
		}
		// delete gives every address back, so the guests are cleaned with it.
		guests := "keep"
		if want == "delete" {
			guests = "clean"
		}
		wantArgs := []string{"cleanup", "--namespace=" + testNamespace, "--deployment=" + d.Name, "--mode=" + want, "--stop-timeout=" + timeout,
			"--guests=" + guests, "--fleet-namespace=fleet-other", "--guests-timeout=2m"}
		if len(c.Command) != 0 || !reflect.DeepEqual(c.Args, wantArgs) {
			t.Errorf("mode %q: command %q args %q; want the image's entrypoint with %q", mode, c.Command, c.Args, wantArgs)
		}
		if _, err := cleanup.ParseMode(want); err != nil {
			t.Errorf("mode %q: the binary refuses it: %v", want, err)
		}
		if !reflect.DeepEqual(pod.SecurityContext, dpod.SecurityContext) || !reflect.DeepEqual(c.SecurityContext, dc.SecurityContext) {
			t.Errorf("mode %q: security contexts %+v / %+v; want the Deployment's %+v / %+v", mode, pod.SecurityContext, c.SecurityContext, dpod.SecurityContext, dc.SecurityContext)
		}
		if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem ||
			pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
			t.Errorf("mode %q: want a non-root pod with a read-only root filesystem", mode)
		}
		if !reflect.DeepEqual(pod.ImagePullSecrets, dpod.ImagePullSecrets) || !reflect.DeepEqual(pod.NodeSelector, dpod.NodeSelector) ||
			!reflect.DeepEqual(pod.Tolerations, dpod.Tolerations) || pod.PriorityClassName != dpod.PriorityClassName {
			t.Errorf("mode %q: pull secrets, node selector, tolerations or priority class differ from the Deployment's", mode)
		}
		if pod.RestartPolicy != corev1.RestartPolicyNever || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("mode %q: restartPolicy %q, limits %v; want Never and resource limits", mode, pod.RestartPolicy, c.Resources.Limits)
		}
		selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			t.Fatal(err)
		}
		if selector.Matches(labels.Set(job.Spec.Template.Labels)) {
			t.Errorf("mode %q: the Deployment's selector %s matches the Job's pod labels %v", mode, selector, job.Spec.Template.Labels)
		}
	}
}

// TestCleanupHookSwitches: cleanup.enabled=false renders no hook; an onUninstall other than keep
// or delete is refused by values.schema.json, naming the value and the choices.
func TestCleanupHookSwitches(t *testing.T) {
	hooks, _ := renderHooks(t, map[string]interface{}{"cleanup": map[string]interface{}{"enabled": false}})
	if len(hooks) != 0 {
		t.Errorf("cleanup.enabled=false: %d hooks; want none", len(hooks))
	}
	_, err := renderRelease(t, map[string]interface{}{"cleanup": map[string]interface{}{"onUninstall": "purge"}})
	// values.schema.json refuses it before the template's own check runs.
	if err == nil || !strings.Contains(err.Error(), `at '/cleanup/onUninstall': value must be one of 'keep', 'delete'`) {
		t.Errorf("cleanup.onUninstall=purge: %v; want a refusal naming the value and the choices", err)
	}
}

// TestCleanupQuestion: the form offers for the uninstall exactly the modes the clean-up accepts,
// and asks them, with what becomes of the guests, under the cleanup.enabled switch.
func TestCleanupQuestion(t *testing.T) {
	questions, _ := loadQuestions(t)
	asked := 0
	for _, q := range flattenQuestions(questions, nil) {
		if q.Variable != "cleanup.onUninstall" && q.Variable != "cleanup.guests" {
			continue
		}
		asked++
		if q.parent == nil || q.parent.Variable != "cleanup.enabled" {
			t.Errorf("%s is not asked under cleanup.enabled", q.Variable)
		}
		if q.Variable != "cleanup.onUninstall" {
			continue
		}
		for _, mode := range q.Options {
			if _, err := cleanup.ParseMode(mode); err != nil {
				t.Errorf("option %q: %v", mode, err)
			}
		}
		if !reflect.DeepEqual(q.Options, []string{"keep", "delete"}) {
			t.Errorf("cleanup.onUninstall offers %v; want keep and delete", q.Options)
		}
	}
	if asked != 2 {
		t.Errorf("%d of cleanup.onUninstall and cleanup.guests asked; want both", asked)
	}
}

// TestCleanupHookRBACForGuests: cleaning the guests (guests clean, or onUninstall delete, which
// gives the addresses back) adds to the hook's roles what reaching a guest takes, as the operator
// reaches it, and nothing else: Rancher's two address settings by name, and in Rancher's fleet
// namespace get of provisioning clusters and Secrets, bound to the hook's ServiceAccount; and, in
// the release namespace, writing the report of the guests not cleaned: create of ConfigMaps (which
// no name can limit) and update of the report's by name, no read. Keeping the guests adds nothing.
func TestCleanupHookRBACForGuests(t *testing.T) {
	const guestRole = cleanupName + "-guests"
	for _, tc := range []struct {
		name    string
		cleanup map[string]interface{}
		clean   bool
	}{
		{"defaults", nil, false},
		{"guests clean", map[string]interface{}{"guests": "clean"}, true},
		{"delete", map[string]interface{}{"onUninstall": "delete"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			values := map[string]interface{}{"rancher": map[string]interface{}{"fleetNamespace": "fleet-other"}}
			if tc.cleanup != nil {
				values["cleanup"] = tc.cleanup
			}
			_, objs := renderHooks(t, values)
			var cr rbacv1.ClusterRole
			convert(t, find(t, objs, "ClusterRole", cleanupName), &cr)
			settings := rbacv1.PolicyRule{APIGroups: []string{"management.cattle.io"}, Resources: []string{"settings"},
				ResourceNames: []string{"internal-server-url", "server-url"}, Verbs: []string{"get"}}
			hasSettings := false
			for _, r := range cr.Rules {
				hasSettings = hasSettings || reflect.DeepEqual(r, settings)
			}
			var role *unstructured.Unstructured
			for _, o := range objs {
				if o.GetKind() == "Role" && o.GetName() == guestRole {
					role = o
				}
			}
			var own rbacv1.Role
			convert(t, find(t, objs, "Role", cleanupName), &own)
			var report []rbacv1.PolicyRule
			for _, r := range own.Rules {
				if slices.Contains(r.Resources, "configmaps") {
					report = append(report, r)
				}
			}
			if !tc.clean {
				if hasSettings || role != nil || len(report) != 0 {
					t.Errorf("keeping the guests: settings rule %t, Role %s %v, ConfigMap rules %+v; want none", hasSettings, guestRole, role != nil, report)
				}
				return
			}
			wantReport := []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
				{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{cleanup.ReportConfigMapName}, Verbs: []string{"update"}},
			}
			if !reflect.DeepEqual(report, wantReport) {
				t.Errorf("cleaning the guests: the release namespace's ConfigMap rules %+v; want %+v", report, wantReport)
			}
			if !hasSettings || role == nil {
				t.Fatalf("cleaning the guests: settings rule %t, Role %s %v; want both", hasSettings, guestRole, role != nil)
			}
			var r rbacv1.Role
			convert(t, role, &r)
			want := []rbacv1.PolicyRule{
				{APIGroups: []string{"provisioning.cattle.io"}, Resources: []string{"clusters"}, Verbs: []string{"get"}},
				{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
			}
			if r.Namespace != "fleet-other" || !reflect.DeepEqual(r.Rules, want) {
				t.Errorf("Role %s in %q: %+v; want in fleet-other: %+v", guestRole, r.Namespace, r.Rules, want)
			}
			var rb rbacv1.RoleBinding
			convert(t, find(t, objs, "RoleBinding", guestRole), &rb)
			if rb.Namespace != "fleet-other" || rb.RoleRef.Name != guestRole ||
				!reflect.DeepEqual(rb.Subjects, []rbacv1.Subject{{Kind: "ServiceAccount", Name: cleanupName, Namespace: testNamespace}}) {
				t.Errorf("RoleBinding %s: %+v", guestRole, rb)
			}
		})
	}
}
