// Package configmap reloads the operator's configuration from the kube-fip-config ConfigMap while
// the operator runs. A bad value is reported on the ConfigMap as a Warning Event naming the key,
// and the previous good value of that key stays in force (kubevipGuestInstall: disabled). A chart
// the deployment's policy does not allow is reported the same way; it stays in the configuration,
// and the guest operations refuse to install it. An image that ships no bundled guest charts, while
// the configuration installs the pinned ones, is reported too (GuestChartsFetched): those installs
// fetch them from the network.
package configmap

import (
	"context"
	"fmt"
	"strings"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/controllers"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartarchive"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
)

type handler struct {
	namespace string
	store     *config.Store
	policy    installpolicy.Policy
	recorder  record.EventRecorder
	metrics   *metrics.Metrics
	// bundle is the pinned guest charts the image ships.
	bundle chartarchive.Bundle
	// lastVersion is the resourceVersion last handled, so that a resync does not repeat Events.
	lastVersion string
}

// Register watches the kube-fip-config ConfigMap in the operator's namespace and keeps the store
// current. Charts that the chart policy refuses are reported on the ConfigMap.
func Register(ctx context.Context, c *controllers.Context) error {
	h := &handler{namespace: c.Namespace, store: c.Store, policy: c.Guest.ChartPolicy, recorder: c.Recorder, metrics: c.Metrics, bundle: c.Guest.GuestCharts}
	c.ConfigMaps.OnChange(ctx, "kube-fip-config", h.OnConfigMapChange)
	return nil
}

// OnConfigMapChange parses the ConfigMap into the store. A deleted ConfigMap means defaults.
func (h *handler) OnConfigMapChange(key string, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	if key != h.namespace+"/"+config.ConfigMapName {
		return cm, nil
	}
	var data map[string]string
	version := ""
	if cm != nil && cm.DeletionTimestamp == nil {
		data = cm.Data
		version = cm.ResourceVersion
	}
	if version != "" && version == h.lastVersion {
		return cm, nil
	}
	h.lastVersion = version

	previous := h.store.Get()
	next, problems := config.Parse(data, previous)
	problems = append(problems, h.policy.Check(next)...)
	failed := false
	for _, p := range problems {
		if p.Warning {
			h.report(cm, p.Reason, p.Error())
			continue
		}
		failed = true
		h.report(cm, p.Reason, p.Error()+"; "+p.Fallback)
	}
	if failed {
		h.metrics.ConfigReloads.WithLabelValues(metrics.StatusError).Inc()
	} else {
		h.metrics.ConfigReloads.WithLabelValues(metrics.StatusSuccess).Inc()
	}

	// Set first: a new log level applies to the lines below.
	if h.store.Set(next) {
		h.report(cm, v1.ReasonReloaded, fmt.Sprintf("configuration reloaded: %s", next))
	}
	if msg := h.fetched(h.store.Get()); msg != "" {
		h.report(cm, v1.ReasonGuestChartsFetched, msg)
	}
	logrus.Debugf("%s in force: %s", config.ConfigMapName, next)
	return cm, nil
}

// fetched says which pinned guest charts c installs from kube-vip's repository that the image
// does not ship, or "" when none (or when c installs nothing).
func (h *handler) fetched(c config.Config) string {
	if c.KubevipGuestInstall == config.InstallDisabled {
		return ""
	}
	var charts []string
	var from string
	for _, ch := range []struct {
		chart guestchart.Chart
		sel   config.Chart
	}{{guestchart.Kubevip, c.Kubevip}, {guestchart.CloudProvider, c.KubevipCloudProvider}} {
		if h.bundle.Fetched(ch.chart, ch.sel.RepoURL, ch.sel.Ref, ch.sel.Version) {
			pc, _ := chartarchive.Pinned(ch.chart)
			charts = append(charts, fmt.Sprintf("%s %s", pc.Chart, pc.Version))
			from = ch.sel.RepoURL
		}
	}
	if len(charts) == 0 {
		return ""
	}
	return fmt.Sprintf("the operator's image ships no bundled %s (it was not built by make release): each install into a guest fetches them from %s, "+
		"which the operator must reach; in an air gap, run a release image or name a chart repository inside the network", strings.Join(charts, " and "), from)
}

// report records what became of the ConfigMap as an Event on it, which the operator's event
// broadcaster also logs; with no ConfigMap to record it on (the defaults are in force), it is
// logged alone. Its type follows the reason's class (v1.EventType).
func (h *handler) report(cm *corev1.ConfigMap, reason, msg string) {
	eventType := v1.EventType(reason)
	if cm != nil {
		h.recorder.Event(cm, eventType, reason, msg)
		return
	}
	if eventType == corev1.EventTypeWarning {
		logrus.Warnf("%s/%s: %s", h.namespace, config.ConfigMapName, msg)
		return
	}
	logrus.Infof("%s/%s: %s", h.namespace, config.ConfigMapName, msg)
}
