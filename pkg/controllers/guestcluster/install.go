package guestcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/helminstall"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/approve"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
)

// step is one chart of the install.
type step struct {
	name  string
	chart config.Chart
	plan  func(config.Config) (*installpolicy.Plan, error)
	event string
}

// install keeps kube-vip and kube-vip-cloud-provider installed in the guest and says where the
// installed provider reads its address pool; found is false when that is not known.
func (c *controller) install(ctx context.Context, cfg config.Config, client guestAPI, p *pass) (result outcome, ref kubevipconfig.ConfigMapRef, found bool) {
	// kube-vip announces on the NIC the guest's control-plane VMs have on the range's network,
	// unless kube-fip-config names one; nodes that lack it or name it apart keep the guest from
	// being Ready, whatever else the install does.
	nic, wrongNIC := c.nicOf(p.fip)
	if wrongNIC != nil && wrongNIC.Reason == v1.ReasonWaitingForHarvester {
		return outcome{reason: wrongNIC.Reason, message: p.redact(wrongNIC.Message)}, ref, false
	}
	cfg = withInterface(cfg, nic.Name)
	defer func() {
		if result.ok && wrongNIC != nil {
			result = outcome{reason: wrongNIC.Reason, message: p.redact(wrongNIC.Message)}
		}
	}()
	policy := c.opts.ChartPolicy
	steps := []step{
		{"kube-vip", cfg.Kubevip, policy.PlanKubevip, metrics.EventKubevipInstall},
		{"kube-vip-cloud-provider", cfg.KubevipCloudProvider, policy.PlanCloudProvider, metrics.EventKubevipCloudProviderInstall},
	}
	plans, credentials, failed := c.prepare(ctx, cfg, client, p, steps)
	var done, notes []string
	for i := 0; failed == nil && i < len(steps); i++ {
		s := steps[i]
		rel := helminstall.Release{Namespace: cfg.KubevipNamespace, Name: s.chart.ReleaseName, Chart: s.name, RepoURL: s.chart.RepoURL,
			Ref: s.chart.Ref, Version: s.chart.Version, Plan: plans[i], Update: cfg.KubevipUpdate, Sources: policy.Sources()}
		rel.Trusted = p.trusted(rel)
		var note string
		if rel.Credentials, note = credentials.forRelease(s.name, rel); note != "" {
			notes = append(notes, note)
		}
		res, err := client.EnsureRelease(ctx, rel)
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
			continue
		}
		p.remember(rel, s.name, res.Applied)
		what := fmt.Sprintf("%s/%s (chart %s %s%s)", rel.Namespace, rel.Name, s.name, rel.Version, images(res.Approval))
		if c.opts.GuestCharts.Fetched(guestchart.Chart(s.name), rel.RepoURL, rel.Ref, rel.Version) {
			notes = append(notes, fmt.Sprintf("chart %s %s was fetched from %s, as the operator's image ships no bundled guest charts (GuestChartsFetched on kube-fip-config)",
				s.name, rel.Version, rel.RepoURL))
		}
		if res.Untrusted != "" {
			c.Recorder.Eventf(p.fip, v1.EventType(v1.ReasonUntrustedRecord), v1.ReasonUntrustedRecord,
				"guest cluster %s: the %s was not written by the operator (its manifest is none the operator applied): nothing it lists was deleted, and release %s/%s was installed over it",
				p.cluster, res.Untrusted, rel.Namespace, rel.Name)
		}
		switch res.Outcome {
		case helminstall.Unchanged:
		case helminstall.Restored:
			c.Recorder.Eventf(p.fip, v1.EventType(v1.ReasonReleaseRestored), v1.ReasonReleaseRestored,
				"guest cluster %s: release %s/%s is kept at revision %d, and what the guest had lost of it was put back: %s",
				p.cluster, rel.Namespace, rel.Name, res.Applied.Revision, p.redact(strings.Join(res.Restored, "; ")))
		default:
			c.countEvent(p, s.event, metrics.StatusSuccess)
			c.Recorder.Eventf(p.fip, v1.EventType(v1.ReasonInstalled), v1.ReasonInstalled, "guest cluster %s: release %s %s", p.cluster, what, res.Outcome)
			c.recordDecisions(p, res.Approval)
		}
		done = append(done, what)
	}
	// Where the provider reads: from its Deployment as installed, even when this pass's install
	// or upgrade failed or did not start but an earlier one succeeded.
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

// prepare is what comes before anything is fetched or reaches the guest: the deployment's policy
// decides on both charts, then the chart credentials are read, the images held to what the
// registry names now, and the guest given its copy of the pull Secret. An outcome says why
// nothing is installed.
func (c *controller) prepare(ctx context.Context, cfg config.Config, client guestAPI, p *pass, steps []step) ([]*installpolicy.Plan, *chartSecret, *outcome) {
	plans := make([]*installpolicy.Plan, len(steps))
	for i, s := range steps {
		plan, err := s.plan(cfg)
		if err != nil {
			return nil, nil, c.refused(p, s.name, err)
		}
		plans[i] = plan
	}
	credentials, bad := c.chartCredentials(ctx, p)
	if bad != nil {
		return nil, nil, bad
	}
	pull, bad := c.imagePullSecret(ctx, p)
	if bad == nil {
		bad = c.checkImages(ctx, p, plans, pull)
	}
	if bad == nil {
		bad = c.writePullSecret(ctx, client, p, cfg.KubevipNamespace, pull)
	}
	return plans, credentials, bad
}

// refused reports a chart the policy refused before anything was fetched, with a Warning Event.
func (c *controller) refused(p *pass, chart string, err error) *outcome {
	var r *guestchart.Refusal
	if !errors.As(err, &r) {
		return &outcome{reason: v1.ReasonChartValuesNotAllowed, message: p.redact(fmt.Sprintf("%s: %v; nothing is installed", chart, err))}
	}
	msg := p.redact(fmt.Sprintf("%s: %v; nothing is installed", chart, r))
	c.Recorder.Event(p.fip, v1.EventType(r.Reason), r.Reason, "guest cluster "+p.cluster+": "+msg)
	return &outcome{reason: r.Reason, message: msg}
}

// rememberedReleases are the releases every FloatingIP of the cluster remembers.
func rememberedReleases(members []*pass) []v1.GuestRelease {
	var out []v1.GuestRelease
	for _, m := range members {
		for _, r := range m.fip.Status.KubevipReleases {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// trusted are the manifests the management side remembers the operator applied to rel in this
// guest.
func (p *pass) trusted(rel helminstall.Release) []string {
	var out []string
	for _, r := range p.releases {
		if r.Namespace == rel.Namespace && r.Name == rel.Name && r.ManifestDigest != "" {
			out = append(out, r.ManifestDigest)
		}
	}
	return out
}

// remember keeps what the operator applied to rel, in place of what was remembered of it.
func (p *pass) remember(rel helminstall.Release, chart string, applied *helminstall.Applied) {
	if applied == nil {
		return
	}
	r := v1.GuestRelease{Namespace: rel.Namespace, Name: rel.Name, Chart: chart + "-" + rel.Plan.Version,
		Revision: applied.Revision, ManifestDigest: applied.Digest}
	if rel.Plan.Version == "" {
		r.Chart = chart
	}
	kept := append([]v1.GuestRelease{r}, slices.DeleteFunc(slices.Clone(p.releases), func(old v1.GuestRelease) bool {
		return old.Namespace == rel.Namespace && old.Name == rel.Name
	})...)
	if !slices.Equal(kept, p.releases) {
		p.releases, p.releasesChanged = kept, true
	}
}

// images names the images in use, as rendered.
func images(a *approve.Approval) string {
	if a == nil || len(a.Decisions) == 0 {
		return ""
	}
	var names []string
	for _, d := range a.Decisions {
		names = append(names, fmt.Sprintf("%s (kube-vip %s)", d.Image, d.Generation))
	}
	return ", image " + strings.Join(names, ", ")
}

// recordDecisions makes an Event of each translation and of variables the image ignores.
func (c *controller) recordDecisions(p *pass, a *approve.Approval) {
	if a == nil {
		return
	}
	for _, d := range a.Decisions {
		if len(d.Translated) > 0 {
			c.Recorder.Eventf(p.fip, v1.EventType(v1.ReasonKubevipTranslated), v1.ReasonKubevipTranslated,
				"guest cluster %s: kube-vip %s reads its environment as %s does: %s", p.cluster, d.Image, d.Generation, strings.Join(d.Translated, "; "))
		}
		if len(d.Ignored) > 0 {
			c.Recorder.Eventf(p.fip, v1.EventType(v1.ReasonKubevipIgnored), v1.ReasonKubevipIgnored,
				"guest cluster %s: kube-vip %s does not read %s, which the chart sets; remove them from kubevipChartValues or use a newer image",
				p.cluster, d.Image, strings.Join(d.Ignored, ", "))
		}
	}
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
	var refused *guestchart.Refusal
	var foreign *helminstall.ForeignRelease
	var guarded *helminstall.ErrWriteRefused
	var record *helminstall.RecordRefused
	switch {
	case errors.As(err, &refused):
		return failure{outcome{reason: refused.Reason, message: fmt.Sprintf("%s chart %s: %s; nothing was installed", chart, version, refused.Message)}, true, true}
	case errors.As(err, &guarded):
		return failure{outcome{reason: v1.ReasonRenderRefused, message: fmt.Sprintf("%s: %v", chart, guarded)}, true, true}
	case errors.As(err, &foreign):
		return failure{outcome{reason: v1.ReasonForeignRelease, message: foreign.Error()}, true, false}
	case errors.As(err, &record):
		return failure{outcome{reason: v1.ReasonRecordRefused, message: fmt.Sprintf("%s: %v", chart, record)}, true, false}
	case errors.Is(err, helminstall.ErrChartPending):
		// The fetch goes on without this worker; the pass is retried with backoff.
		return failure{outcome{reason: v1.ReasonChartFetching, message: fmt.Sprintf("%s: %v", chart, err)}, false, false}
	}
	return failure{outcome{reason: v1.ReasonHelmFailed, message: fmt.Sprintf("%s: %v", chart, err)}, true, true}
}
