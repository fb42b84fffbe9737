package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/alerts"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/node"
)

// waitServed waits for the guest's FloatingIP's Served condition to have one of reasons.
func (s *suite) waitServed(t *testing.T, timeout time.Duration, reasons ...string) *v1.FloatingIP {
	t.Helper()
	var x *v1.FloatingIP
	rig.Eventually(t, timeout, "the FloatingIP's Served condition "+strings.Join(reasons, " or "), func() bool {
		list, err := s.fips.FloatingIP().List(guestID, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			return false
		}
		x = &list.Items[0]
		c, _ := v1.GetCondition(x.Status.Conditions, v1.Served)
		for _, r := range reasons {
			if c.Reason == r {
				return true
			}
		}
		return false
	})
	return x
}

// editKubevipValues changes kubevipChartValues in kube-fip-config, as an administrator does in
// the ConfigMap, and returns the text it held.
func (s *suite) editKubevipValues(t *testing.T, edit func(map[string]interface{})) string {
	t.Helper()
	ctx := context.Background()
	cm, err := s.mgmtKube.CoreV1().ConfigMaps(operatorNS).Get(ctx, config.ConfigMapName, metav1.GetOptions{})
	rig.Must(t, err)
	was := cm.Data[config.KeyKubevipChartValues]
	values := map[string]interface{}{}
	rig.Must(t, yaml.Unmarshal([]byte(was), &values))
	edit(values)
	text, err := yaml.Marshal(values)
	rig.Must(t, err)
	cm.Data[config.KeyKubevipChartValues] = string(text)
	_, err = s.mgmtKube.CoreV1().ConfigMaps(operatorNS).Update(ctx, cm, metav1.UpdateOptions{})
	rig.Must(t, err)
	return was
}

// setKubevipValues puts text back as kubevipChartValues.
func (s *suite) setKubevipValues(t *testing.T, text string) {
	t.Helper()
	ctx := context.Background()
	cm, err := s.mgmtKube.CoreV1().ConfigMaps(operatorNS).Get(ctx, config.ConfigMapName, metav1.GetOptions{})
	rig.Must(t, err)
	cm.Data[config.KeyKubevipChartValues] = text
	_, err = s.mgmtKube.CoreV1().ConfigMaps(operatorNS).Update(ctx, cm, metav1.UpdateOptions{})
	rig.Must(t, err)
}

// operatorMetrics is what every operator pod serves at /metrics, scraped from the management
// node: the leader's holds the FloatingIPs' series, a standby's does not.
func (s *suite) operatorMetrics(t *testing.T) string {
	t.Helper()
	var all []string
	for _, p := range s.operatorPods(t) {
		if p.Status.PodIP == "" {
			continue
		}
		body, err := getIn(s.mgmt.NodeNamespace, fmt.Sprintf("http://%s:%d/metrics", p.Status.PodIP, metricsPort))
		if err == nil {
			all = append(all, body)
		}
	}
	return strings.Join(all, "\n")
}

// metricsPort is the operator chart's default config.metricsPort.
const metricsPort = 8080

// TestNotServedIsShownAndRecovers: on real nodes, the FloatingIP says what the guest does. Served
// while kube-vip's pod holds the address for the echo Service; then, with kube-vip's node selector
// matching no node, kube-vip's DaemonSet schedules no pod: the FloatingIP is not Ready with
// KubevipNotScheduled (Stalled, an error in Rancher's UI), kubefipoperator_floatingip_served is 0
// and the chart's KubeFIPFloatingIPNotServed expression holds for it; with the node selector back,
// it is served and Ready again, and the expression holds no more.
func TestNotServedIsShownAndRecovers(t *testing.T) {
	s := current(t)
	fip := s.guestFIP(t)
	s.echoService(t)
	x := s.waitServed(t, 3*time.Minute, v1.ReasonServed)
	if !v1.Ready.IsTrue(x) || x.Status.ServedBy != "default/echo" {
		t.Errorf("served: Ready %v, servedBy %q; want Ready, served by default/echo", v1.Ready.IsTrue(x), x.Status.ServedBy)
	}
	expr := chartrepo.OperatorAlertExpr(t, operatorNS, "KubeFIPFloatingIPNotServed")

	was := s.editKubevipValues(t, func(v map[string]interface{}) {
		v["nodeSelector"] = map[string]interface{}{"kubefip.e2e/no-such-node": "true"}
	})
	began := time.Now()
	x = s.waitServed(t, 3*time.Minute, v1.ReasonKubevipNotScheduled)
	t.Logf("KubevipNotScheduled %s after the node selector changed", time.Since(began).Round(time.Second))
	c, _ := v1.GetCondition(x.Status.Conditions, v1.Ready)
	if c.Status != corev1.ConditionFalse || c.Reason != v1.ReasonKubevipNotScheduled || !v1.Stalled.IsTrue(x) {
		t.Errorf("Ready %s/%s, Stalled %v; want False/KubevipNotScheduled and Stalled", c.Status, c.Reason, v1.Stalled.IsTrue(x))
	}
	var firing []string
	rig.Eventually(t, time.Minute, "KubeFIPFloatingIPNotServed's expression to hold for the FloatingIP", func() bool {
		firing = alerts.Holds(t, expr, s.operatorMetrics(t))
		return len(firing) == 1 && strings.Contains(firing[0], x.Name)
	})
	t.Logf("%s holds for %v", expr, firing)

	s.setKubevipValues(t, was)
	x = s.waitServed(t, 3*time.Minute, v1.ReasonServed)
	if !v1.Ready.IsTrue(x) {
		t.Errorf("Ready is not True once served again: %s", v1.Ready.GetMessage(x))
	}
	rig.Eventually(t, time.Minute, "KubeFIPFloatingIPNotServed's expression to hold no more", func() bool {
		return len(alerts.Holds(t, expr, s.operatorMetrics(t))) == 0
	})
	s.servedThrough(t, fip, "kube-vip back on its node")
}

// harvesterKubevip is the Harvester cloud provider's kube-vip DaemonSet as every Harvester guest
// carries it (kube-system/kube-vip of release harvester-cloud-provider), here running the sandbox
// image: what matters to the operator is the object, and a second real kube-vip would contend for
// the address.
func harvesterKubevip() *appsv1.DaemonSet {
	labels := map[string]string{"app.kubernetes.io/name": "kube-vip", "app.kubernetes.io/instance": "harvester-cloud-provider"}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: kubevipconfig.HarvesterDaemonSetName, Namespace: kubevipconfig.HarvesterDaemonSetNamespace,
			Annotations: map[string]string{kubevipconfig.HarvesterReleaseAnnotation: kubevipconfig.HarvesterReleaseName}},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				Containers:  []corev1.Container{{Name: "kube-vip", Image: node.PauseImage, ImagePullPolicy: corev1.PullIfNotPresent}}}},
		},
	}
}

// harvesterSelector is the node selector of the Harvester cloud provider's kube-vip DaemonSet.
func (s *suite) harvesterSelector(t *testing.T) map[string]string {
	t.Helper()
	ds, err := s.guestKube.AppsV1().DaemonSets(kubevipconfig.HarvesterDaemonSetNamespace).Get(context.Background(), kubevipconfig.HarvesterDaemonSetName, metav1.GetOptions{})
	rig.Must(t, err)
	return ds.Spec.Template.Spec.NodeSelector
}

// TestHarvesterKubevipOnlyBesideOurs: the Harvester cloud provider's kube-vip is kept off the
// nodes only while the operator's own kube-vip runs a ready pod in the guest; once the guest no
// longer wants the operator's kube-vip (its kube-vip label set to false in Rancher), Harvester's is
// given its nodes back and its pod runs again; wanted again, it is kept off again.
func TestHarvesterKubevipOnlyBesideOurs(t *testing.T) {
	s := current(t)
	ctx := context.Background()
	s.guestFIP(t)
	s.kubevipPod(t, "")
	if _, err := s.guestKube.AppsV1().DaemonSets(kubevipconfig.HarvesterDaemonSetNamespace).Create(ctx, harvesterKubevip(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	rig.Eventually(t, 2*time.Minute, "Harvester's kube-vip kept off the nodes beside the operator's ready one", func() bool {
		return s.harvesterSelector(t)[kubevipconfig.DisabledNodeSelectorKey] == "true"
	})

	rig.Must(t, s.world.LabelGuest(guestName, guestID, config.ClusterLabel, "false"))
	defer func() { rig.Must(t, s.world.LabelGuest(guestName, guestID, config.ClusterLabel, "true")) }()
	rig.Eventually(t, 2*time.Minute, "Harvester's kube-vip given its nodes back once the guest does not want the operator's", func() bool {
		_, still := s.harvesterSelector(t)[kubevipconfig.DisabledNodeSelectorKey]
		return !still
	})
	rig.Eventually(t, 2*time.Minute, "Harvester's kube-vip pod running again", func() bool {
		ds, err := s.guestKube.AppsV1().DaemonSets(kubevipconfig.HarvesterDaemonSetNamespace).Get(ctx, kubevipconfig.HarvesterDaemonSetName, metav1.GetOptions{})
		return err == nil && ds.Status.NumberReady == 1
	})

	rig.Must(t, s.world.LabelGuest(guestName, guestID, config.ClusterLabel, "true"))
	rig.Eventually(t, 2*time.Minute, "Harvester's kube-vip kept off the nodes again", func() bool {
		return s.harvesterSelector(t)[kubevipconfig.DisabledNodeSelectorKey] == "true"
	})
}
