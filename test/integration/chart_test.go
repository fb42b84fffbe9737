package integration

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubefip/kube-fip-operator/package/charts"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

const chartNamespace = "kube-fip-chart"

// helmCluster installs charts with the Helm SDK into one API server, as the helm CLI would with a
// kubeconfig: a fresh action.Configuration per action, so each sees the cluster's APIs as they are.
type helmCluster struct {
	t          *testing.T
	kubeconfig string
	cacheDir   string
}

func newHelmCluster(t *testing.T, cfg *rest.Config) *helmCluster {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "admin"}
	kc.CurrentContext = "test"
	h := &helmCluster{t: t, kubeconfig: filepath.Join(t.TempDir(), "kubeconfig"), cacheDir: t.TempDir()}
	if err := clientcmd.WriteToFile(*kc, h.kubeconfig); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *helmCluster) action() *action.Configuration {
	flags := genericclioptions.NewConfigFlags(false)
	ns := chartNamespace
	flags.KubeConfig, flags.Namespace, flags.CacheDir = &h.kubeconfig, &ns, &h.cacheDir
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, chartNamespace, "secret", func(string, ...interface{}) {}); err != nil {
		h.t.Fatal(err)
	}
	return cfg
}

// install installs the chart name from the repository's charts/ directory, as release name.
func (h *helmCluster) install(name string, values map[string]interface{}) error {
	return h.installChart(chartrepo.RepoChart(h.t, name), values)
}

// installChart installs c as the release named after the chart, in chartNamespace.
func (h *helmCluster) installChart(c *chart.Chart, values map[string]interface{}) error {
	install := action.NewInstall(h.action())
	install.ReleaseName, install.Namespace, install.CreateNamespace = c.Name(), chartNamespace, true
	install.Timeout = time.Minute
	_, err := install.Run(c, values)
	return err
}

func (h *helmCluster) uninstall(name string) {
	if _, err := action.NewUninstall(h.action()).Run(name); err != nil {
		h.t.Fatalf("uninstalling %s: %v", name, err)
	}
}

// TestChartInstallAndServiceAccountRights installs both charts with the Helm SDK into a private API
// server that has no CRDs: the operator chart alone is refused with a message naming the CRD chart;
// the CRD chart, then the operator chart install; the objects exist and kube-fip-config parses
// without a problem; SubjectAccessReviews show the operator's service account allowed exactly what
// the operator does and refused Secrets elsewhere, CRD writes and Rancher cluster writes; no role has
// a wildcard. Uninstalled while the operator holds a range and FloatingIPs, the chart's pre-delete
// hook (played by running the hook Job's own command with the hook's ServiceAccount, as the API
// server has no kubelet) stops the operator first and, by default, leaves every object without the
// operator's finalizers and unchanged, so that a reinstall adopts each with its address; with
// cleanup.onUninstall=delete nothing is left, and the guests it could not reach (as delete cleans
// the guests) are named in a ConfigMap that outlives the uninstall, written under the hook's own
// roles; the default, keeping the guests, writes none. Uninstalling removes the operator's objects
// and the hook's, and keeps the CRDs.
func TestChartInstallAndServiceAccountRights(t *testing.T) {
	shards.Take(t)
	ctx := context.Background()
	guest := startChartGuest(t, "charts")
	kube := kubernetes.NewForConfigOrDie(guest.Config)
	helm := newHelmCluster(t, guest.Config)
	values := map[string]interface{}{
		"replicas":            2,
		"podDisruptionBudget": map[string]interface{}{"enabled": true},
		"monitoring":          map[string]interface{}{"dashboard": map[string]interface{}{"enabled": true}},
	}
	installMonitoringAPI(t, guest.Config, "Prometheus")

	err := helm.install(charts.OperatorChart, values)
	if err == nil || !strings.Contains(err.Error(), "kube-fip-operator-crd chart is not installed") {
		t.Fatalf("installing the operator chart without the CRD chart: %v; want a refusal naming the CRD chart", err)
	}
	if err := helm.install(charts.CRDChart, nil); err != nil {
		t.Fatalf("installing the CRD chart: %v", err)
	}
	rig.Eventually(t, time.Minute, "the kubefip API to be served", func() bool {
		list, err := kube.Discovery().ServerResourcesForGroupVersion("kubefip.k8s.binbash.org/v1")
		return err == nil && len(list.APIResources) >= 2
	})
	if err := helm.install(charts.OperatorChart, values); err != nil {
		t.Fatalf("installing the operator chart: %v", err)
	}

	checkInstalledObjects(t, kube)
	checkServiceAccountRights(t, kube)
	checkNoWildcardRoles(t, kube)

	// Uninstalled with the defaults while the operator holds FloatingIPs and a range: the hook
	// stops the operator and takes its finalizers off; the objects stay as they were, and the next
	// install's operator adopts them with the same addresses.
	world := newUninstallWorld(t, helm, guest.Config)
	world.startOperator()
	world.createObjects()
	world.uninstallWithHook("keep")
	world.checkKeptObjects(false)
	world.checkReport()

	values["cleanup"] = map[string]interface{}{"onUninstall": "delete"}
	if err := helm.install(charts.OperatorChart, values); err != nil {
		t.Fatalf("installing the operator chart again: %v", err)
	}
	world.startOperator()
	world.waitAllocated("the operator to adopt the kept FloatingIPs and range")

	// Uninstalled with cleanup.onUninstall=delete: nothing is left.
	// The guests of the FloatingIPs are no Rancher clusters: the clean-up, under the hook's own
	// roles, cannot reach them and names them in a ConfigMap that Helm's uninstall leaves.
	world.uninstallWithHook("delete")
	world.checkNothingLeft()
	world.checkReport("one", "two")

	helm.uninstall(charts.CRDChart)
	if _, err := kube.RbacV1().ClusterRoles().Get(ctx, "kube-fip-operator", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole after uninstall: %v; want NotFound", err)
	}
	if _, err := kube.CoreV1().ConfigMaps(chartNamespace).Get(ctx, config.ConfigMapName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("%s after uninstall: %v; want NotFound", config.ConfigMapName, err)
	}
	if list, err := kube.Discovery().ServerResourcesForGroupVersion("kubefip.k8s.binbash.org/v1"); err != nil || len(list.APIResources) < 2 {
		t.Errorf("the kubefip API after uninstalling the CRD chart: %v; want the CRDs kept", err)
	}
}

func checkInstalledObjects(t *testing.T, kube kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	d, err := kube.AppsV1().Deployments(chartNamespace).Get(ctx, "kube-fip-operator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 2 || d.Spec.Template.Spec.ServiceAccountName != "kube-fip-operator" {
		t.Errorf("Deployment replicas %d, service account %q", *d.Spec.Replicas, d.Spec.Template.Spec.ServiceAccountName)
	}
	get, found := metav1.GetOptions{}, func(what string, err error) {
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	_, err = kube.CoreV1().ServiceAccounts(chartNamespace).Get(ctx, "kube-fip-operator", get)
	found("ServiceAccount", err)
	_, err = kube.CoreV1().Services(chartNamespace).Get(ctx, "kube-fip-operator-metrics", get)
	found("Service", err)
	_, err = kube.PolicyV1().PodDisruptionBudgets(chartNamespace).Get(ctx, "kube-fip-operator", get)
	found("PodDisruptionBudget", err)
	_, err = kube.RbacV1().ClusterRoleBindings().Get(ctx, "kube-fip-operator", get)
	found("ClusterRoleBinding", err)
	dashboard, err := kube.CoreV1().ConfigMaps("cattle-dashboards").Get(ctx, "kube-fip-operator-dashboard", get)
	found("dashboard ConfigMap", err)
	if err == nil && dashboard.Labels["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap labels %v", dashboard.Labels)
	}
	cm, err := kube.CoreV1().ConfigMaps(chartNamespace).Get(ctx, config.ConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, problems := config.Parse(cm.Data, config.Default()); len(problems) != 0 || len(cm.Data) != len(config.Keys()) {
		t.Errorf("installed %s: %d keys, problems %v; want every option and no problem", config.ConfigMapName, len(cm.Data), problems)
	}
}

// access is one request the operator's service account may or may not make.
type access struct{ verb, group, resource, namespace string }

func (a access) String() string {
	return strings.TrimSpace(a.verb+" "+a.group+" "+a.resource) + " in namespace " + a.namespace
}

func accesses(verbs []string, group, resource string, namespaces ...string) []access {
	var out []access
	for _, ns := range namespaces {
		for _, v := range verbs {
			out = append(out, access{v, group, resource, ns})
		}
	}
	return out
}

// checkServiceAccountRights asks the API server's authorizer, by SubjectAccessReview, what the
// operator's service account may do. "" as namespace is a cluster-wide request.
func checkServiceAccountRights(t *testing.T, kube kubernetes.Interface) {
	t.Helper()
	// Only what TestLeastPrivilegeUnderChartRBAC/RuleRemoval shows the operator needs.
	read, watch := []string{"get", "list", "watch"}, []string{"list", "watch"}
	const guestNS = "c-m-abcd1234"
	var allowed []access
	allowed = append(allowed, accesses(watch, "", "namespaces", "")...)
	allowed = append(allowed, accesses(watch, "provisioning.cattle.io", "clusters", "", "fleet-default")...)
	allowed = append(allowed, accesses(watch, "management.cattle.io", "clusters", "")...)
	allowed = append(allowed, accesses(watch, "rke-machine-config.cattle.io", "harvesterconfigs", "", "fleet-default")...)
	allowed = append(allowed, accesses([]string{"get", "list", "watch", "create", "update", "delete"}, "kubefip.k8s.binbash.org", "floatingips", "", guestNS)...)
	allowed = append(allowed, accesses([]string{"list", "watch", "update"}, "kubefip.k8s.binbash.org", "floatingipranges", "")...)
	allowed = append(allowed, accesses([]string{"list", "watch", "create", "update", "delete"}, "kubefip.k8s.binbash.org", "floatingipallocations", "")...)
	allowed = append(allowed, accesses([]string{"update"}, "kubefip.k8s.binbash.org", "floatingips/status", guestNS)...)
	allowed = append(allowed, accesses([]string{"update"}, "kubefip.k8s.binbash.org", "floatingipranges/status", "")...)
	allowed = append(allowed, accesses([]string{"create", "patch"}, "", "events", guestNS, chartNamespace, "fleet-default", "default")...)
	allowed = append(allowed, accesses(read, "", "configmaps", chartNamespace)...)
	allowed = append(allowed, accesses([]string{"get", "create", "update"}, "coordination.k8s.io", "leases", chartNamespace)...)
	// Secrets by name only: list and watch would return every one in full.
	allowed = append(allowed, accesses([]string{"get"}, "", "secrets", "fleet-default", "cattle-global-data")...)

	var denied []access
	denied = append(denied, accesses([]string{"get", "list"}, "", "secrets", "kube-system", chartNamespace, guestNS, "default", "")...)
	denied = append(denied, accesses([]string{"list", "watch", "create", "update", "delete"}, "", "secrets", "fleet-default", "cattle-global-data")...)
	denied = append(denied, accesses([]string{"create", "update", "patch", "delete"}, "apiextensions.k8s.io", "customresourcedefinitions", "")...)
	denied = append(denied, accesses([]string{"create", "delete", "update"}, "", "namespaces", "")...)
	denied = append(denied, accesses([]string{"create", "update", "patch", "delete"}, "provisioning.cattle.io", "clusters", "fleet-default")...)
	denied = append(denied, accesses([]string{"update", "delete"}, "management.cattle.io", "clusters", "")...)
	denied = append(denied, accesses([]string{"update", "delete"}, "", "configmaps", chartNamespace)...)
	denied = append(denied, accesses([]string{"get"}, "", "configmaps", "kube-system", "fleet-default")...)
	denied = append(denied, accesses([]string{"create", "update"}, "coordination.k8s.io", "leases", "kube-system")...)
	denied = append(denied, accesses([]string{"delete"}, "coordination.k8s.io", "leases", chartNamespace)...)
	denied = append(denied, accesses([]string{"create", "escalate", "bind"}, "rbac.authorization.k8s.io", "clusterroles", "")...)
	denied = append(denied, accesses([]string{"list", "create"}, "", "pods", chartNamespace)...)
	denied = append(denied, accesses([]string{"get", "create", "patch", "delete"}, "kubefip.k8s.binbash.org", "floatingipranges", "")...)
	// An address is released by deleting its object; an update (guarded by its resourceVersion)
	// only retains it for a deleted cluster or hands it back. Allocations are read from the cache.
	denied = append(denied, accesses([]string{"get", "patch"}, "kubefip.k8s.binbash.org", "floatingipallocations", "")...)
	denied = append(denied, accesses([]string{"patch"}, "kubefip.k8s.binbash.org", "floatingips/status", guestNS)...)
	denied = append(denied, accesses([]string{"create"}, "events.k8s.io", "events", guestNS)...)

	for want, list := range map[bool][]access{true: allowed, false: denied} {
		for _, a := range list {
			if got := mayDo(t, kube, a); got != want {
				t.Errorf("service account may %s: %v; want %v", a, got, want)
			}
		}
	}
	t.Logf("%d allowed and %d denied requests checked", len(allowed), len(denied))
}

func mayDo(t *testing.T, kube kubernetes.Interface, a access) bool {
	t.Helper()
	resource, sub, _ := strings.Cut(a.resource, "/")
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + chartNamespace + ":kube-fip-operator",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + chartNamespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: a.namespace, Verb: a.verb, Group: a.group, Resource: resource, Subresource: sub,
		},
	}}
	got, err := kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), review, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SubjectAccessReview %s: %v", a, err)
	}
	return got.Status.Allowed
}

// checkNoWildcardRoles reads back every ClusterRole and Role of the release and looks for a "*".
func checkNoWildcardRoles(t *testing.T, kube kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	opts := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + charts.OperatorChart}
	clusterRoles, err := kube.RbacV1().ClusterRoles().List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	roles, err := kube.RbacV1().Roles("").List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(clusterRoles.Items) != 1 || len(roles.Items) != 3 {
		t.Errorf("release has %d ClusterRoles and %d Roles; want 1 and 3", len(clusterRoles.Items), len(roles.Items))
	}
	check := func(role string, rules []rbacv1.PolicyRule) {
		for _, rule := range rules {
			for _, field := range [][]string{rule.APIGroups, rule.Resources, rule.Verbs, rule.ResourceNames, rule.NonResourceURLs} {
				for _, f := range field {
					if strings.Contains(f, "*") {
						t.Errorf("%s has a wildcard: %+v", role, rule)
					}
				}
			}
		}
	}
	for _, r := range clusterRoles.Items {
		check("ClusterRole "+r.Name, r.Rules)
	}
	for _, r := range roles.Items {
		check("Role "+r.Namespace+"/"+r.Name, r.Rules)
	}
}

// installMonitoringAPI installs stand-ins of the Prometheus Operator's CRDs Rancher Monitoring
// brings (monitoring.coreos.com/v1, from the rancher-monitoring-crd chart, which carries
// prometheus-operator's): their group, version, kinds, plurals and scope; the stand-ins keep any
// field. The operator's chart knows Rancher Monitoring by Prometheus; the kube-vip chart's
// PodMonitor is applied as a PodMonitor.
func installMonitoringAPI(t *testing.T, cfg *rest.Config, kinds ...string) {
	t.Helper()
	preserve := true
	var defs []*apiextv1.CustomResourceDefinition
	for _, kind := range kinds {
		singular := strings.ToLower(kind)
		plural := singular + "s"
		if kind == "Prometheus" {
			plural = "prometheuses"
		}
		defs = append(defs, &apiextv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + ".monitoring.coreos.com"},
			Spec: apiextv1.CustomResourceDefinitionSpec{
				Group: "monitoring.coreos.com",
				Names: apiextv1.CustomResourceDefinitionNames{Plural: plural, Singular: singular, Kind: kind, ListKind: kind + "List"},
				Scope: apiextv1.NamespaceScoped,
				Versions: []apiextv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
					Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}}}},
			},
		})
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: defs}); err != nil {
		t.Fatalf("installing the monitoring.coreos.com/v1 stand-in: %v", err)
	}
}
