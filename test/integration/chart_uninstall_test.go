package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/kubefip/kube-fip-operator/package/charts"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/cleanup"
	"github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// The chart's clean-up hook: its objects all carry this name.
const cleanupHook = "kube-fip-operator-cleanup"

// The operator's finalizers, the only ones these objects get.
const (
	fipFinalizer   = "wrangler.cattle.io/kube-fip-floatingip"
	rangeFinalizer = "wrangler.cattle.io/kube-fip-floatingiprange"
)

// uninstallWorld is what the chart's uninstall meets in the chart test's API server: a range and
// FloatingIPs in Rancher's c-m-* namespaces, allocated by the operator binary itself, and a pod
// standing in for the operator's (the API server has no kubelet and no controllers).
type uninstallWorld struct {
	t     *testing.T
	helm  *helmCluster
	admin *rest.Config
	kube  kubernetes.Interface
	fips  kubefipAPI
	op    *controlplane.Process
	// addrs and uids are what the operator allocated: "namespace/name" → address and UID.
	addrs, uids map[string]string
}

const uninstallRange = "chart-uninstall"

// uninstallFIPs are the FloatingIPs of the world: one asking for an address, one for any.
func uninstallFIPs() map[string]string {
	return map[string]string{"c-m-chartun1/one-kubevip": "10.77.0.9", "c-m-chartun2/two-kubevip": ""}
}

// newUninstallWorld is the world of an uninstall test on a cluster startChartGuest started, which
// has Rancher's CRDs.
func newUninstallWorld(t *testing.T, helm *helmCluster, admin *rest.Config) *uninstallWorld {
	t.Helper()
	f, err := kubefip.NewFactoryFromConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	return &uninstallWorld{t: t, helm: helm, admin: admin, kube: kubernetes.NewForConfigOrDie(admin), fips: f.Kubefip().V1()}
}

// startOperator runs the operator binary as the installed chart's Deployment would, in the release
// namespace with the chart's kube-fip-config, until the operator's pod stand-in is deleted.
// It serves the chart's admission webhook, which the API server reaches at a loopback port (this
// API server has no kube-proxy to reach the chart's Service).
func (w *uninstallWorld) startOperator() {
	w.t.Helper()
	port := rig.FreePort(w.t)
	suite.PointWebhookAt(w.t, w.kube, "kube-fip-operator", port)
	p, err := controlplane.StartOperator(shards.Of(w.t).Operator, nil, nil, "--kubeconfig", w.helm.kubeconfig, "--namespace", chartNamespace,
		"--metrics-bind-address", "127.0.0.1", "--metrics-port", fmt.Sprint(rig.FreePort(w.t)),
		"--webhook-port", fmt.Sprint(port), "--webhook-hosts", "127.0.0.1", "--webhook-configuration", "kube-fip-operator")
	if err != nil {
		w.t.Fatal(err)
	}
	w.op = p
	w.t.Cleanup(func() {
		_ = p.Stop(20 * time.Second)
		if w.t.Failed() {
			fmt.Fprintf(os.Stderr, "---- operator output (%s) ----\n%s\n", w.t.Name(), p.Logs())
		}
	})
	if err := p.WaitForLog(context.Background(), "controllers running", time.Minute); err != nil {
		w.t.Fatal(err)
	}
	probe := &v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "webhook-probe"}, Spec: v1.FloatingIPRangeSpec{IPRange: "198.18.255.0/30"}}
	rig.Eventually(w.t, 30*time.Second, "the API server to reach the chart's webhook", func() bool {
		return suite.DryRunCreateRangeIn(w.admin, probe) == nil
	})
	w.standInPod()
}

// standInPod creates a pod that the operator Deployment's selector matches: what the clean-up
// waits to see gone.
func (w *uninstallWorld) standInPod() {
	w.t.Helper()
	ctx := context.Background()
	d, err := w.kube.AppsV1().Deployments(chartNamespace).Get(ctx, "kube-fip-operator", metav1.GetOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-fip-operator-standin", Namespace: chartNamespace, Labels: d.Spec.Selector.MatchLabels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "operator", Image: "kubefip/kube-fip-operator"}}},
	}
	if _, err := w.kube.CoreV1().Pods(chartNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		w.t.Fatal(err)
	}
}

// stopOperator does what the kubelet does once the Deployment is scaled to zero.
func (w *uninstallWorld) stopOperator() {
	w.t.Helper()
	if err := w.op.Stop(20 * time.Second); err != nil {
		w.t.Error(err)
	}
	zero := int64(0)
	err := w.kube.CoreV1().Pods(chartNamespace).Delete(context.Background(), "kube-fip-operator-standin", metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil {
		w.t.Fatal(err)
	}
}

// createObjects creates the range and the FloatingIPs and waits until the operator allocated them.
func (w *uninstallWorld) createObjects() {
	w.t.Helper()
	_, err := w.fips.FloatingIPRange().Create(&v1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: uninstallRange, Annotations: map[string]string{
			v1.AnnotationHarvesterClusterName: "harvester-chart", v1.AnnotationHarvesterNetworkName: "vlan10"}},
		Spec: v1.FloatingIPRangeSpec{IPRange: "10.77.0.0/28", AllowedNamespaces: []string{"c-m-chartun1", "c-m-chartun2"}},
	})
	if err != nil {
		w.t.Fatal(err)
	}
	for key, ip := range uninstallFIPs() {
		ns, name, _ := strings.Cut(key, "/")
		if _, err := w.kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			w.t.Fatal(err)
		}
		_, err := w.fips.FloatingIP().Create(&v1.FloatingIP{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{
				v1.AnnotationClusterName: strings.TrimSuffix(name, "-kubevip"), v1.AnnotationFloatingIPRange: uninstallRange}},
			Spec: v1.FloatingIPSpec{IPAddress: ip},
		})
		if err != nil {
			w.t.Fatal(err)
		}
	}
	w.addrs, w.uids = map[string]string{}, map[string]string{}
	w.waitAllocated("the operator to allocate both FloatingIPs")
	for key, ip := range uninstallFIPs() {
		if ip != "" && w.addrs[key] != ip {
			w.t.Errorf("%s got %s; want the address it asked for, %s", key, w.addrs[key], ip)
		}
	}
}

// waitAllocated waits until every FloatingIP holds an address with the operator's finalizer on it
// and on the range, and records the addresses the first time (later calls require the same ones).
func (w *uninstallWorld) waitAllocated(what string) {
	w.t.Helper()
	first := len(w.addrs) == 0
	rig.Eventually(w.t, time.Minute, what, func() bool {
		for key := range uninstallFIPs() {
			ns, name, _ := strings.Cut(key, "/")
			f, err := w.fips.FloatingIP().Get(ns, name, metav1.GetOptions{})
			if err != nil || !suite.Allocated(f) || !has(f.Finalizers, fipFinalizer) {
				return false
			}
			if first {
				w.addrs[key], w.uids[key] = f.Status.IPAddress, string(f.UID)
			}
		}
		r, err := w.fips.FloatingIPRange().Get(uninstallRange, metav1.GetOptions{})
		return err == nil && has(r.Finalizers, rangeFinalizer) && len(suite.HeldIn(w.t, w.fips, uninstallRange)) == len(uninstallFIPs())
	})
	w.checkKeptObjects(true)
}

// checkKeptObjects: every FloatingIP and the range exist with the addresses and UIDs first
// allocated, their allocation objects name them, and the operator's finalizers are on (or all off).
func (w *uninstallWorld) checkKeptObjects(withFinalizers bool) {
	w.t.Helper()
	for key, addr := range w.addrs {
		ns, name, _ := strings.Cut(key, "/")
		f, err := w.fips.FloatingIP().Get(ns, name, metav1.GetOptions{})
		if err != nil {
			w.t.Errorf("FloatingIP %s: %v", key, err)
			continue
		}
		if f.Status.IPAddress != addr || f.Spec.IPAddress != addr || string(f.UID) != w.uids[key] {
			w.t.Errorf("FloatingIP %s: %s (uid %s); want %s, the same object", key, suite.StatusText(f), f.UID, addr)
		}
		if got := has(f.Finalizers, fipFinalizer); got != withFinalizers || (!withFinalizers && len(f.Finalizers) > 0) {
			w.t.Errorf("FloatingIP %s finalizers %v; want the operator's: %v", key, f.Finalizers, withFinalizers)
		}
	}
	r, err := w.fips.FloatingIPRange().Get(uninstallRange, metav1.GetOptions{})
	if err != nil {
		w.t.Fatalf("range %s: %v", uninstallRange, err)
	}
	if got := has(r.Finalizers, rangeFinalizer); got != withFinalizers || (!withFinalizers && len(r.Finalizers) > 0) {
		w.t.Errorf("range finalizers %v; want the operator's: %v", r.Finalizers, withFinalizers)
	}
	want := map[string]string{}
	for key, addr := range w.addrs {
		want[addr] = w.uids[key]
	}
	got := map[string]string{}
	for addr, a := range suite.HeldIn(w.t, w.fips, uninstallRange) {
		got[addr] = string(a.UID)
	}
	if !reflect.DeepEqual(got, want) {
		w.t.Errorf("allocations %v; want %v", got, want)
	}
}

// checkNothingLeft: no FloatingIP and no range is left anywhere, so nothing holds a c-m-*
// namespace: deleting them leaves them with nothing to wait for.
func (w *uninstallWorld) checkNothingLeft() {
	w.t.Helper()
	ctx := context.Background()
	if list, err := w.fips.FloatingIP().List("", metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		w.t.Errorf("FloatingIPs left after the delete clean-up: %v %v", list, err)
	}
	if list, err := w.fips.FloatingIPRange().List(metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		w.t.Errorf("FloatingIPRanges left after the delete clean-up: %v %v", list, err)
	}
	if list, err := w.fips.FloatingIPAllocation().List(metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		w.t.Errorf("FloatingIPAllocations left after the delete clean-up: %v %v", list, err)
	}
	for key := range uninstallFIPs() {
		ns, _, _ := strings.Cut(key, "/")
		if err := w.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			w.t.Errorf("deleting namespace %s: %v", ns, err)
		}
		if list, err := w.fips.FloatingIP().List(ns, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
			w.t.Errorf("terminating namespace %s still holds FloatingIPs: %v %v", ns, list, err)
		}
	}
}

// uninstallWithHook uninstalls the operator chart with the Helm SDK and plays the cluster's part in
// its pre-delete hook: once Helm has created the hook's ServiceAccount, roles and Job, it runs the
// Job's command — the operator binary with the Job's own arguments — with a token of the hook's
// ServiceAccount, so the hook's roles as rendered are all it may use; it stops the operator once
// the clean-up scaled the Deployment to zero (checking that nothing was touched before), and
// marks the Job complete when the binary is done. Helm must then remove every hook object.
func (w *uninstallWorld) uninstallWithHook(mode string) {
	w.t.Helper()
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		u := action.NewUninstall(w.helm.action())
		u.Timeout = 3 * time.Minute
		_, err := u.Run(charts.OperatorChart)
		done <- err
	}()
	notDone := func() bool {
		select {
		case err := <-done:
			w.t.Fatalf("the uninstall ended before its pre-delete hook ran: %v", err)
		default:
		}
		return true
	}

	var job *batchv1.Job
	rig.Eventually(w.t, time.Minute, "Helm to create the clean-up Job", func() bool {
		j, err := w.kube.BatchV1().Jobs(chartNamespace).Get(ctx, cleanupHook, metav1.GetOptions{})
		job = j
		return notDone() && err == nil
	})
	w.checkHookObjects(true)
	pod := job.Spec.Template.Spec
	c := pod.Containers[0]
	if pod.ServiceAccountName != cleanupHook || len(c.Command) != 0 || len(c.Args) == 0 || c.Args[0] != "cleanup" || !has(c.Args, "--mode="+mode) {
		w.t.Fatalf("clean-up Job runs as %q: command %q args %q; want %s running the image's entrypoint with cleanup --mode=%s",
			pod.ServiceAccountName, c.Command, c.Args, cleanupHook, mode)
	}

	kubeconfig := filepath.Join(w.t.TempDir(), "kubeconfig")
	if err := controlplane.ServiceAccountKubeconfig(w.admin, chartNamespace, pod.ServiceAccountName, kubeconfig, 10*time.Minute); err != nil {
		w.t.Fatal(err)
	}
	as := kubernetes.NewForConfigOrDie(controlplane.RESTConfigOf(w.t, kubeconfig))
	if _, err := as.CoreV1().Secrets(chartNamespace).List(ctx, metav1.ListOptions{Limit: 1}); !apierrors.IsForbidden(err) {
		w.t.Fatalf("as the hook's ServiceAccount, listing Secrets: %v; want Forbidden (is RBAC enforced?)", err)
	}
	p, err := controlplane.StartOperator(shards.Of(w.t).Operator, nil, []string{"KUBECONFIG=" + kubeconfig, "LOG_LEVEL=debug"}, c.Args...)
	if err != nil {
		w.t.Fatal(err)
	}
	defer func() {
		if w.t.Failed() {
			fmt.Fprintf(os.Stderr, "---- clean-up output (%s) ----\n%s\n", w.t.Name(), p.Logs())
		}
	}()

	rig.Eventually(w.t, time.Minute, "the clean-up to scale the operator to zero", func() bool {
		d, err := w.kube.AppsV1().Deployments(chartNamespace).Get(ctx, "kube-fip-operator", metav1.GetOptions{})
		return notDone() && err == nil && d.Spec.Replicas != nil && *d.Spec.Replicas == 0
	})
	// The clean-up looked again after scaling and found the pod still running: one that did not
	// wait for it would have acted by now.
	if err := p.WaitForLog(ctx, "pods of Deployment "+chartNamespace+"/kube-fip-operator still running", time.Minute); err != nil {
		w.t.Fatal(err)
	}
	w.checkKeptObjects(true)
	w.stopOperator()

	select {
	case <-p.Done():
	case <-time.After(time.Minute):
		w.t.Fatal("the clean-up did not finish within a minute")
	}
	if logs := p.Logs(); !strings.Contains(logs, "clean-up ("+mode+") done") || strings.Contains(logs, "level=fatal") {
		w.t.Fatalf("the clean-up did not succeed:\n%s", logs)
	}
	w.completeJob()
	select {
	case err := <-done:
		if err != nil {
			w.t.Fatalf("uninstalling the operator chart: %v", err)
		}
	case <-time.After(time.Minute):
		w.t.Fatal("the uninstall did not finish within a minute of the Job's completion")
	}
	w.checkHookObjects(false)
	if _, err := w.kube.AppsV1().Deployments(chartNamespace).Get(ctx, "kube-fip-operator", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		w.t.Errorf("operator Deployment after uninstall: %v; want NotFound", err)
	}
}

// completeJob writes what the Job controller writes once the Job's pod succeeded.
func (w *uninstallWorld) completeJob() {
	w.t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		j, err := w.kube.BatchV1().Jobs(chartNamespace).Get(ctx, cleanupHook, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		j.Status = batchv1.JobStatus{StartTime: &now, CompletionTime: &now, Succeeded: 1, Conditions: []batchv1.JobCondition{{
			Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastProbeTime: now, LastTransitionTime: now,
		}}}
		_, err = w.kube.BatchV1().Jobs(chartNamespace).UpdateStatus(ctx, j, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		w.t.Fatalf("completing the clean-up Job: %v", err)
	}
}

// checkHookObjects: the hook's ServiceAccount, roles and bindings exist (while the Job runs) or
// are all gone (after the uninstall).
func (w *uninstallWorld) checkHookObjects(present bool) {
	w.t.Helper()
	ctx, get := context.Background(), metav1.GetOptions{}
	errs := map[string]error{}
	_, errs["ServiceAccount"] = w.kube.CoreV1().ServiceAccounts(chartNamespace).Get(ctx, cleanupHook, get)
	_, errs["ClusterRole"] = w.kube.RbacV1().ClusterRoles().Get(ctx, cleanupHook, get)
	_, errs["ClusterRoleBinding"] = w.kube.RbacV1().ClusterRoleBindings().Get(ctx, cleanupHook, get)
	_, errs["Role"] = w.kube.RbacV1().Roles(chartNamespace).Get(ctx, cleanupHook, get)
	_, errs["RoleBinding"] = w.kube.RbacV1().RoleBindings(chartNamespace).Get(ctx, cleanupHook, get)
	if !present {
		_, errs["Job"] = w.kube.BatchV1().Jobs(chartNamespace).Get(ctx, cleanupHook, get)
	}
	for kind, err := range errs {
		if present && err != nil {
			w.t.Errorf("hook %s %s while the Job runs: %v", kind, cleanupHook, err)
		}
		if !present && !apierrors.IsNotFound(err) {
			w.t.Errorf("hook %s %s after the uninstall: %v; want NotFound", kind, cleanupHook, err)
		}
	}
}

// checkReport: after the uninstall, the ConfigMap the clean-up leaves in the release namespace
// names exactly the guests it could not clean, each on a line of its own, or is not there when it
// could clean them all (or kept them).
func (w *uninstallWorld) checkReport(notCleaned ...string) {
	w.t.Helper()
	cm, err := w.kube.CoreV1().ConfigMaps(chartNamespace).Get(context.Background(), cleanup.ReportConfigMapName, metav1.GetOptions{})
	if len(notCleaned) == 0 {
		if !apierrors.IsNotFound(err) {
			w.t.Errorf("ConfigMap %s after an uninstall with nothing to report: %v; want NotFound", cleanup.ReportConfigMapName, err)
		}
		return
	}
	if err != nil {
		w.t.Fatalf("the list of the guests not cleaned, after the uninstall: %v", err)
	}
	var named []string
	for _, line := range strings.Split(strings.TrimSuffix(cm.Data[cleanup.ReportKeyGuests], "\n"), "\n") {
		guest, _, _ := strings.Cut(line, ": ")
		named = append(named, guest)
	}
	if !reflect.DeepEqual(named, notCleaned) {
		w.t.Errorf("ConfigMap %s names %q:\n%s\nwant %q", cleanup.ReportConfigMapName, named, cm.Data[cleanup.ReportKeyGuests], notCleaned)
	}
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
