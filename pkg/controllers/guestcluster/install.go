package guestcluster

import (
	"context"
	"fmt"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
)

// install keeps kube-vip and kube-vip-cloud-provider installed in the guest.
func (c *Controller) install(ctx context.Context, cfg config.Config, client *guest.Client, p *pass) outcome {
	steps := []struct {
		chart config.Chart
		name  string
		event string
	}{
		{cfg.Kubevip, "kube-vip", metrics.EventKubevipInstall},
		{cfg.KubevipCloudProvider, "kube-vip-cloud-provider", metrics.EventKubevipCloudProviderInstall},
	}
	var done []string
	for _, s := range steps {
		rel := release(cfg, s.chart, s.name)
		out, err := c.installer.Ensure(ctx, client, rel)
		if err != nil {
			c.event(p, s.event, metrics.StatusError)
			msg := fmt.Sprintf("%s: %v", s.name, err)
			c.Recorder.Event(p.fip, corev1.EventTypeWarning, ReasonHelmFailed, "guest cluster "+p.cluster+": "+msg)
			logrus.Warnf("guest cluster %s: %s", p.cluster, msg)
			return outcome{reason: ReasonHelmFailed, message: msg}
		}
		if out != guest.Unchanged {
			c.event(p, s.event, metrics.StatusSuccess)
			c.Recorder.Eventf(p.fip, corev1.EventTypeNormal, ReasonInstalled, "guest cluster %s: release %s/%s %s", p.cluster, rel.Namespace, rel.Name, out)
			logrus.Infof("guest cluster %s: release %s/%s %s", p.cluster, rel.Namespace, rel.Name, out)
		}
		done = append(done, fmt.Sprintf("%s/%s", rel.Namespace, rel.Name))
	}
	return outcome{ok: true, reason: ReasonInstalled, message: fmt.Sprintf("releases %s and %s are installed", done[0], done[1])}
}

// release is what the configuration asks of one chart. kube-vip-cloud-provider is told which
// ConfigMap to read — the very one the operator writes.
func release(cfg config.Config, chart config.Chart, name string) guest.Release {
	values := copyValues(chart.Values)
	if _, ok := values["nameOverride"]; !ok {
		values["nameOverride"] = chart.ReleaseName
	}
	if name == "kube-vip-cloud-provider" {
		env, _ := values["env"].(map[string]interface{})
		if env == nil {
			env = map[string]interface{}{}
		}
		env["KUBEVIP_NAMESPACE"] = cfg.KubevipNamespace
		env["KUBEVIP_CONFIG_MAP"] = guest.KubevipConfigMap
		values["env"] = env
	}
	return guest.Release{
		Namespace: cfg.KubevipNamespace,
		Name:      chart.ReleaseName,
		Chart:     name,
		RepoURL:   chart.RepoURL,
		Ref:       chart.Ref,
		Version:   chart.Version,
		Values:    values,
		Update:    cfg.KubevipUpdate,
	}
}

// copyValues copies the top level and the env map, the parts release changes; the configuration's
// own maps stay untouched.
func copyValues(in map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(in)+1)
	for k, v := range in {
		if m, ok := v.(map[string]interface{}); ok && k == "env" {
			cp := make(map[string]interface{}, len(m))
			for ek, ev := range m {
				cp[ek] = ev
			}
			v = cp
		}
		out[k] = v
	}
	return out
}
