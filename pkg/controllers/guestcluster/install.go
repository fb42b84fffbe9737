package guestcluster

import (
	"context"
	"errors"
	"fmt"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/kubevip"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
)

// KubevipNameOverride names every object of the kube-vip release the operator installs, unless the
// values set nameOverride themselves. The kube-vip chart names its DaemonSet, ServiceAccount,
// ClusterRole, ClusterRoleBinding, Role and RoleBinding after nameOverride alone (never after the
// release), and the Harvester cloud provider's kube-vip subchart already owns all of them as
// "kube-vip" in every Harvester guest: without an override the install cannot succeed.
const KubevipNameOverride = "kube-fip-kube-vip"

// ProviderConfigMapName is the ConfigMap the operator asks kube-vip-cloud-provider (chart 0.2.4 and
// later, value configMapName) to read: the name the original operator always wrote.
const ProviderConfigMapName = guest.KubevipConfigMap

// install keeps kube-vip and kube-vip-cloud-provider installed in the guest and says where the
// installed provider reads its address pool; found is false when that is not known.
func (c *controller) install(ctx context.Context, cfg config.Config, client guestAPI, p *pass) (result outcome, ref guest.ConfigMapRef, found bool) {
	// The deployment's chart policy decides before anything is fetched (chartpolicy.go).
	if refused := c.refuseCharts(cfg, p); refused != nil {
		return c.notInstalled(ctx, cfg, client, refused)
	}
	credentials, bad := c.chartCredentials(p)
	if bad != nil {
		return c.notInstalled(ctx, cfg, client, bad)
	}
	steps := []struct {
		chart config.Chart
		name  string
		event string
	}{
		{cfg.Kubevip, "kube-vip", metrics.EventKubevipInstall},
		{cfg.KubevipCloudProvider, "kube-vip-cloud-provider", metrics.EventKubevipCloudProviderInstall},
	}
	var done, notes []string
	var failed *outcome
	for _, s := range steps {
		rel := release(cfg, s.chart, s.name)
		rel.Sources = c.opts.ChartPolicy
		var note string
		if rel.Credentials, note = credentials.forRelease(s.name, rel); note != "" {
			notes = append(notes, note)
		}
		judge := &kubevipJudge{}
		policy := newRenderPolicy(s.name, rel.Namespace, c.opts.ChartPolicy, judge)
		rel.PostRenderer = guest.Judged{Judge: policy.judge, Done: policy.done}
		out, err := client.EnsureRelease(ctx, rel)
		if err != nil {
			f := installFailure(s.name, rel.Version, err)
			f.message = p.redact(withNotes(f.message, notes))
			if f.counted {
				c.countEvent(p, s.event, metrics.StatusError)
			}
			if f.warn {
				c.Recorder.Event(p.fip, v1.EventType(f.reason), f.reason, "guest cluster "+p.cluster+": "+f.message)
			}
			failed = &f.outcome
			break
		}
		what := fmt.Sprintf("%s/%s (chart %s %s%s)", rel.Namespace, rel.Name, s.name, rel.Version, judge.images(s.chart))
		if out != guest.Unchanged {
			c.countEvent(p, s.event, metrics.StatusSuccess)
			c.Recorder.Eventf(p.fip, v1.EventType(v1.ReasonInstalled), v1.ReasonInstalled, "guest cluster %s: release %s %s", p.cluster, what, out)
			judge.record(c, p)
		}
		done = append(done, what)
	}
	// Where the provider reads: from its Deployment as installed, even when this pass's install
	// or upgrade failed but an earlier one succeeded.
	ref, err := client.ProviderConfigMap(ctx, cfg.KubevipNamespace, cfg.KubevipCloudProvider.ReleaseName)
	switch {
	case err != nil && failed != nil:
		return *failed, ref, false
	case err != nil:
		return outcome{reason: v1.ReasonHelmFailed, message: p.redact(err.Error())}, ref, false
	case failed != nil:
		failed.message += "; the provider installed earlier reads " + ref.String()
		return *failed, ref, true
	}
	return outcome{ok: true, reason: v1.ReasonInstalled, message: withNotes(fmt.Sprintf("releases %s and %s are installed; the provider reads %s",
		done[0], done[1], ref), notes)}, ref, true
}

// release is what the configuration asks of one chart.
//   - kube-vip gets nameOverride KubevipNameOverride unless the values name it, so that it installs
//     beside the Harvester cloud provider's kube-vip, and a config.vip_interface of the original
//     defaults is passed on as env.vip_interface, the key every kube-vip chart since 0.4.1 reads;
//   - kube-vip-cloud-provider is told to read ProviderConfigMapName (chart 0.2.4 and later).
func release(cfg config.Config, chart config.Chart, name string) guest.Release {
	values := copyValues(chart.Values)
	switch name {
	case "kube-vip":
		if _, ok := values["nameOverride"]; !ok {
			values["nameOverride"] = KubevipNameOverride
		}
		env, _ := values["env"].(map[string]interface{})
		legacy, _ := values["config"].(map[string]interface{})
		if iface, ok := legacy["vip_interface"]; ok {
			if _, set := env["vip_interface"]; !set {
				if env == nil {
					env = map[string]interface{}{}
				}
				env["vip_interface"] = iface
				values["env"] = env
			}
		}
	case "kube-vip-cloud-provider":
		if _, ok := values["configMapName"]; !ok {
			values["configMapName"] = ProviderConfigMapName
		}
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

// failure is an install or upgrade that did not happen: its outcome, whether it makes a Warning
// Event and whether it counts as a failed install in the metrics.
type failure struct {
	outcome
	warn, counted bool
}

// installFailure says why chart (at version) was not installed. A refusal before install names
// what was refused; a chart still being fetched is no failure (the pass comes back).
func installFailure(chart, version string, err error) failure {
	var rendered *renderRefusal
	var refused *kubevip.Refusal
	var foreign *guest.ForeignRelease
	switch {
	case errors.As(err, &rendered):
		return failure{outcome{reason: v1.ReasonRenderRefused, message: rendered.Error() + "; nothing was installed"}, true, true}
	case errors.As(err, &refused):
		return failure{outcome{reason: v1.ReasonKubevipRefused,
			message: fmt.Sprintf("%s chart %s: %s; nothing was installed", chart, version, refused.Message)}, true, true}
	case errors.As(err, &foreign):
		return failure{outcome{reason: v1.ReasonForeignRelease, message: foreign.Error()}, true, false}
	case errors.Is(err, guest.ErrChartPending):
		// The fetch goes on without this worker; the pass is retried with backoff.
		return failure{outcome{reason: v1.ReasonChartFetching, message: fmt.Sprintf("%s: %v", chart, err)}, false, false}
	}
	return failure{outcome{reason: v1.ReasonHelmFailed, message: fmt.Sprintf("%s: %v", chart, err)}, true, true}
}
