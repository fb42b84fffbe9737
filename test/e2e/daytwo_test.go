package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/node"
)

// operatorKubevip is the operator's kube-vip DaemonSet in the guest, or nil when it is not there.
func (s *suite) operatorKubevip(t *testing.T) *appsv1.DaemonSet {
	t.Helper()
	ds, err := s.guestKube.AppsV1().DaemonSets("kube-system").Get(context.Background(), chartvalues.KubevipNameOverride, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	rig.Must(t, err)
	return ds
}

// guestEvent waits for an Event of reason on the guest's FloatingIP whose message has every one of
// parts, and returns its message.
func (s *suite) guestEvent(t *testing.T, timeout time.Duration, reason string, parts ...string) string {
	t.Helper()
	var msg string
	rig.Eventually(t, timeout, "a "+reason+" Event on the guest's FloatingIP", func() bool {
		list, err := s.mgmtKube.CoreV1().Events(guestID).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false
		}
	events:
		for _, e := range list.Items {
			if e.Reason != reason {
				continue
			}
			for _, part := range parts {
				if !strings.Contains(e.Message, part) {
					continue events
				}
			}
			msg = e.Message
			return true
		}
		return false
	})
	return msg
}

// waitReloaded waits for the operator to have read kube-fip-config again after since, with a
// configuration whose summary has want.
func (s *suite) waitReloaded(t *testing.T, since time.Time, want string) {
	t.Helper()
	rig.Eventually(t, time.Minute, "kube-fip-config reloaded with "+want, func() bool {
		list, err := s.mgmtKube.CoreV1().Events(operatorNS).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, e := range list.Items {
			if e.Reason == v1.ReasonReloaded && e.InvolvedObject.Name == config.ConfigMapName && strings.Contains(e.Message, want) &&
				(e.LastTimestamp.After(since) || e.EventTime.After(since)) {
				return true
			}
		}
		return false
	})
}

// newestRecord is the newest revision of the guest's Helm release name in kube-system and its
// status, as its records' labels say: "3 deployed".
func (s *suite) newestRecord(t *testing.T, name string) string {
	t.Helper()
	list, err := s.guestKube.CoreV1().Secrets("kube-system").List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + name})
	rig.Must(t, err)
	newest, status := 0, ""
	for _, sec := range list.Items {
		if v, err := strconv.Atoi(sec.Labels["version"]); err == nil && v > newest {
			newest, status = v, sec.Labels["status"]
		}
	}
	return fmt.Sprintf("%d %s", newest, status)
}

// TestReleaseRestoredWithoutUpdate: with kubevipUpdate off, kube-vip's DaemonSet deleted in the
// guest, then its image edited there, are put back by the next pass as the revision the operator
// applied has them, with a ReleaseRestored Event naming what departed, and the real kube-vip serves
// the address again.
func TestReleaseRestoredWithoutUpdate(t *testing.T) {
	s := current(t)
	ctx := context.Background()
	fip := s.guestFIP(t)
	s.kubevipPod(t, "")
	set := time.Now().Add(-time.Second)
	was := s.setConfig(t, config.KeyKubevipUpdate, "false")
	defer s.setConfig(t, config.KeyKubevipUpdate, was)
	s.waitReloaded(t, set, "kubevipUpdate=false")
	// An upgrade the earlier setting started is over: the release's newest revision stays
	// deployed for two passes and more.
	revision := ""
	rig.Eventually(t, time.Minute, "kube-vip's release settled at one revision", func() bool {
		was := revision
		revision = s.newestRecord(t, "kube-vip")
		time.Sleep(7 * time.Second)
		return was == revision && strings.HasSuffix(revision, "deployed")
	})
	installed := s.operatorKubevip(t)
	image := installed.Spec.Template.Spec.Containers[0].Image
	dss := s.guestKube.AppsV1().DaemonSets("kube-system")

	rig.Must(t, dss.Delete(ctx, chartvalues.KubevipNameOverride, metav1.DeleteOptions{}))
	deleted := time.Now()
	rig.Eventually(t, 2*time.Minute, "kube-vip's DaemonSet put back", func() bool {
		ds := s.operatorKubevip(t)
		return ds != nil && ds.UID != installed.UID
	})
	t.Logf("the DaemonSet was back %s after it was deleted (operateGuestClusterInterval 3 s)", time.Since(deleted).Round(100*time.Millisecond))
	s.guestEvent(t, time.Minute, v1.ReasonReleaseRestored, "DaemonSet kube-system/"+chartvalues.KubevipNameOverride+" (missing)")
	if got := s.operatorKubevip(t).Spec.Template.Spec.Containers[0].Image; got != image {
		t.Errorf("the DaemonSet put back runs %s; want %s", got, image)
	}

	var edited *appsv1.DaemonSet
	rig.Eventually(t, time.Minute, "kube-vip's image edited in the guest", func() bool {
		edited = s.operatorKubevip(t)
		if edited == nil {
			return false
		}
		edited.Spec.Template.Spec.Containers[0].Image = node.PauseImage
		_, err := dss.Update(ctx, edited, metav1.UpdateOptions{})
		return err == nil
	})
	changed := time.Now()
	rig.Eventually(t, 2*time.Minute, "kube-vip's image put back", func() bool {
		ds := s.operatorKubevip(t)
		return ds != nil && ds.Spec.Template.Spec.Containers[0].Image == image
	})
	t.Logf("the image was back %s after it was edited", time.Since(changed).Round(100*time.Millisecond))
	s.guestEvent(t, time.Minute, v1.ReasonReleaseRestored, "(changed: spec.template.spec.containers)")
	if now := s.newestRecord(t, "kube-vip"); now != revision {
		t.Errorf("kube-vip's release went from %s to %s: it was upgraded, not restored", revision, now)
	}
	s.kubevipPod(t, "")
	s.echoServed(t, fip, "kube-vip restored")
}

// harvesterKubevip creates in the guest the Harvester cloud provider's kube-vip as its chart
// renders it (harvester/charts at 48a577b: chart harvester-cloud-provider, appVersion v0.2.8, its
// kube-vip subchart 0.11.0, values.yaml's kube-vip.env and dependency_charts/kube-vip's rbac.yaml): the DaemonSet
// kube-system/kube-vip of release harvester-cloud-provider, its ServiceAccount and RBAC, and the
// chart's environment (ARP, services, no election). Its image is the real kube-vip the operator's
// runs here (the same registry, the same NIC), so that it announces the address once it takes over.
// It returns a function that deletes it all.
func (s *suite) harvesterKubevip(t *testing.T, ours *appsv1.DaemonSet) func() {
	t.Helper()
	ctx := context.Background()
	const name, ns = kubevipconfig.HarvesterDaemonSetName, kubevipconfig.HarvesterDaemonSetNamespace
	labels := map[string]string{"app.kubernetes.io/name": "kube-vip", "app.kubernetes.io/instance": kubevipconfig.HarvesterReleaseName}
	meta := metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels,
		Annotations: map[string]string{kubevipconfig.HarvesterReleaseAnnotation: kubevipconfig.HarvesterReleaseName}}
	rig.Must(t, ignoreExists(s.guestKube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta}, metav1.CreateOptions{})))
	rig.Must(t, ignoreExists(s.guestKube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"services/status"}, Verbs: []string{"update"}},
		{APIGroups: []string{""}, Resources: []string{"services", "endpoints"}, Verbs: []string{"list", "get", "watch", "update"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list", "get", "watch", "update", "patch"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"list", "get", "watch", "update", "create"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "get", "watch", "update"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
	}}, metav1.CreateOptions{})))
	rig.Must(t, ignoreExists(s.guestKube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}}, metav1.CreateOptions{})))
	container := *ours.Spec.Template.Spec.Containers[0].DeepCopy()
	iface := ""
	for _, e := range container.Env {
		if e.Name == "vip_interface" {
			iface = e.Value
		}
	}
	container.Env = nil
	for _, kv := range [][2]string{{"vip_interface", iface}, {"vip_arp", "true"}, {"lb_enable", "true"}, {"lb_port", "6443"}, {"vip_subnet", "32"},
		{"cp_enable", "false"}, {"svc_enable", "true"}, {"svc_election", "false"}, {"vip_leaderelection", "false"}, {"prometheus_server", ":2113"}} {
		container.Env = append(container.Env, corev1.EnvVar{Name: kv[0], Value: kv[1]})
	}
	container.Ports, container.LivenessProbe, container.ReadinessProbe, container.StartupProbe = nil, nil, nil, nil
	pod := ours.Spec.Template.Spec.DeepCopy()
	pod.Containers, pod.ServiceAccountName, pod.NodeSelector = []corev1.Container{container}, name, nil
	pod.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	ds := &appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: *pod}}}
	rig.Must(t, ignoreExists(s.guestKube.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{})))
	return func() {
		_ = s.guestKube.AppsV1().DaemonSets(ns).Delete(ctx, name, metav1.DeleteOptions{})
		_ = s.guestKube.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = s.guestKube.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
		_ = s.guestKube.CoreV1().ServiceAccounts(ns).Delete(ctx, name, metav1.DeleteOptions{})
	}
}

// ignoreExists is err of a create, but for an object that is there already.
func ignoreExists[T any](_ T, err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// harvesterKubevipState is the node selector and ready pods of the Harvester cloud provider's
// kube-vip DaemonSet.
func (s *suite) harvesterKubevipState(t *testing.T) (disabled bool, ready int32) {
	t.Helper()
	ds, err := s.guestKube.AppsV1().DaemonSets(kubevipconfig.HarvesterDaemonSetNamespace).Get(context.Background(), kubevipconfig.HarvesterDaemonSetName, metav1.GetOptions{})
	rig.Must(t, err)
	_, disabled = ds.Spec.Template.Spec.NodeSelector[kubevipconfig.DisabledNodeSelectorKey]
	return disabled, ds.Status.NumberReady
}

// operatorReleaseRecords counts the Helm release records of the operator's two releases in the
// guest.
func (s *suite) operatorReleaseRecords(t *testing.T) int {
	t.Helper()
	list, err := s.guestKube.CoreV1().Secrets("kube-system").List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm"})
	rig.Must(t, err)
	n := 0
	for _, sec := range list.Items {
		if r := sec.Labels["name"]; r == "kube-vip" || r == "kube-vip-cloud-provider" {
			n++
		}
	}
	return n
}

// TestHandOverKeepsOneKubevip: the Harvester cloud provider's kube-vip (a real kube-vip, as its
// chart renders it) is kept off the nodes while the operator's runs a ready pod. Once the guest no
// longer wants the operator's kube-vip (its label set to false in Rancher), Harvester's gets its
// nodes back, and only once it has a ready pod are the operator's releases uninstalled: throughout,
// a client on the VM network reaches the echo Service through the address at every probe, the
// address ends on the node's NIC, announced by Harvester's kube-vip, and no release of the
// operator's is left. How long the address was off the NIC (the operator's kube-vip takes it off
// as it exits; Harvester's puts it back) is reported. Wanted again, the operator's kube-vip is
// installed and Harvester's kept off again.
func TestHandOverKeepsOneKubevip(t *testing.T) {
	s := current(t)
	fip := s.guestFIP(t)
	s.kubevipPod(t, "")
	s.echoServed(t, fip, "before the hand-over")
	remove := s.harvesterKubevip(t, s.operatorKubevip(t))
	defer remove()
	rig.Eventually(t, 2*time.Minute, "Harvester's kube-vip kept off the nodes beside the operator's ready one", func() bool {
		disabled, _ := s.harvesterKubevipState(t)
		return disabled
	})

	rig.Must(t, s.world.LabelGuest(guestName, guestID, config.ClusterLabel, "false"))
	defer func() { rig.Must(t, s.world.LabelGuest(guestName, guestID, config.ClusterLabel, "true")) }()
	n := s.firstNetwork()
	var probes, failed int
	var failures []string
	// off is since when the address has been off the node's NIC; longestOff the longest such
	// stretch: kube-vip takes its addresses off as it exits, and the one staying puts them back.
	var off time.Time
	var longestOff time.Duration
	probe := func() {
		probes++
		on, _ := s.onInterface(t, n.link, fip)
		switch {
		case !on && off.IsZero():
			off = time.Now()
		case on && !off.IsZero():
			longestOff, off = max(longestOff, time.Since(off)), time.Time{}
		}
		body, _, err := s.fromClient(t, n.client, "http://"+fip.String()+"/", "", fip)
		if err != nil || !strings.HasPrefix(body, "hello from echo-") {
			failed++
			if len(failures) < 5 {
				failures = append(failures, fmt.Sprintf("%s: answer %q, %v", time.Now().Format(time.TimeOnly), body, err))
			}
		}
	}
	began := time.Now()
	var sawBoth bool
	rig.Eventually(t, 3*time.Minute, "the operator's releases uninstalled once Harvester's kube-vip is ready", func() bool {
		probe()
		disabled, ready := s.harvesterKubevipState(t)
		ours := s.operatorKubevip(t)
		sawBoth = sawBoth || (!disabled && ready > 0 && ours != nil)
		if ready == 0 && s.operatorReleaseRecords(t) == 0 {
			t.Fatalf("the operator's releases were uninstalled before Harvester's kube-vip had a ready pod")
		}
		return !disabled && ready > 0 && ours == nil && s.operatorReleaseRecords(t) == 0
	})
	t.Logf("handed over %s after the label changed; Harvester's and the operator's kube-vip both ready at one look: %v", time.Since(began).Round(time.Second), sawBoth)
	msg := s.guestEvent(t, time.Minute, v1.ReasonKubevipHandedOver, "release kube-system/kube-vip uninstalled")
	t.Logf("Event: %s", msg)
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end) || !off.IsZero(); time.Sleep(500 * time.Millisecond) {
		probe()
		if time.Since(began) > 3*time.Minute {
			t.Fatalf("%s has been off the node's %s since %s: Harvester's kube-vip does not announce it", fip, n.link, off.Format(time.TimeOnly))
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d probes of %s from the VM network got no answer during the hand-over; first: %s", failed, probes, fip, strings.Join(failures, "; "))
	}
	t.Logf("%d probes of %s from the VM network during and after the hand-over, %d unanswered; the address was off the node's %s for at most %s",
		probes, fip, failed, n.link, longestOff.Round(100*time.Millisecond))
	rig.Eventually(t, time.Minute, "the FloatingIP forgets the operator's releases", func() bool {
		list, err := s.fips.FloatingIP().List(guestID, metav1.ListOptions{})
		return err == nil && len(list.Items) == 1 && len(list.Items[0].Status.KubevipReleases) == 0
	})
	if _, err := s.guestKube.CoreV1().ServiceAccounts("kube-system").Get(context.Background(), chartvalues.KubevipNameOverride, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the operator's kube-vip ServiceAccount is still in the guest: %v", err)
	}

	rig.Must(t, s.world.LabelGuest(guestName, guestID, config.ClusterLabel, "true"))
	s.guestFIP(t)
	s.kubevipPod(t, "")
	rig.Eventually(t, 2*time.Minute, "Harvester's kube-vip kept off the nodes again", func() bool {
		disabled, _ := s.harvesterKubevipState(t)
		return disabled
	})
	s.servedThrough(t, fip, "the operator's kube-vip again")
}
