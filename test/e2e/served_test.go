package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/alerts"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
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
	s.setConfig(t, config.KeyKubevipChartValues, text)
}

// setConfig sets key of kube-fip-config to value, as an administrator does in the ConfigMap, and
// returns what it held.
func (s *suite) setConfig(t *testing.T, key, value string) string {
	t.Helper()
	ctx := context.Background()
	cm, err := s.mgmtKube.CoreV1().ConfigMaps(operatorNS).Get(ctx, config.ConfigMapName, metav1.GetOptions{})
	rig.Must(t, err)
	was := cm.Data[key]
	cm.Data[key] = value
	_, err = s.mgmtKube.CoreV1().ConfigMaps(operatorNS).Update(ctx, cm, metav1.UpdateOptions{})
	rig.Must(t, err)
	return was
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
