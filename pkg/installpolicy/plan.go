package installpolicy

import (
	"errors"
	"fmt"

	helmchart "helm.sh/helm/v3/pkg/chart"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/approve"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartarchive"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/render"
	"github.com/kubefip/kube-fip-operator/pkg/problem"
)

// Plan is one chart as kube-fip-config asks to install it, with values the schema accepted.
type Plan struct {
	policy  Policy
	Chart   guestchart.Chart
	Version string
	// Values are what Helm is given.
	Values chartvalues.Values
	// baseline are the operator's default values for the chart, named as Values name the objects:
	// what a render with Values may differ from only where the schema allows.
	baseline map[string]interface{}
}

// PlanKubevip is the plan of the kube-vip chart kube-fip-config asks for: its namespace and chart
// source allowed, its values accepted. It returns a *guestchart.Refusal naming the key otherwise.
func (p Policy) PlanKubevip(cfg config.Config) (*Plan, error) {
	return p.plan(cfg, guestchart.Kubevip, cfg.Kubevip, config.Default().Kubevip, config.KeyKubevipChartRef, config.KeyKubevipChartValues)
}

// PlanCloudProvider is PlanKubevip for the kube-vip-cloud-provider chart.
func (p Policy) PlanCloudProvider(cfg config.Config) (*Plan, error) {
	return p.plan(cfg, guestchart.CloudProvider, cfg.KubevipCloudProvider, config.Default().KubevipCloudProvider,
		config.KeyKubevipCloudProviderChartRef, config.KeyKubevipCloudProviderChartValues)
}

func (p Policy) plan(cfg config.Config, chart guestchart.Chart, ch, defaults config.Chart, refKey, valuesKey string) (*Plan, error) {
	if err := p.checkNamespace(config.KeyKubevipNamespace, cfg.KubevipNamespace); err != nil {
		return nil, err
	}
	key, source := config.KeyKubevipChartRepoURL, ch.RepoURL
	if ch.Ref != "" {
		key, source = refKey, ch.Ref
	}
	if err := p.sources.Check(key, source); err != nil {
		return nil, err
	}
	return p.NewPlan(chart, valuesKey, ch.Version, ch.Values, defaults.Values)
}

// Check reports, as Warning Problems for the ConfigMap's Events, every chart of cfg the policy
// refuses. The configuration stays as written: it is the install that is refused, until the
// ConfigMap or the deployment changes.
func (p Policy) Check(cfg config.Config) []config.KeyProblem {
	var problems []config.KeyProblem
	for _, plan := range []func(config.Config) (*Plan, error){p.PlanKubevip, p.PlanCloudProvider} {
		_, err := plan(cfg)
		var r *guestchart.Refusal
		if errors.As(err, &r) {
			problems = append(problems, config.KeyProblem{Key: r.Key, Warning: true, Problem: problem.Problem{
				Reason: r.Reason, Message: r.Message + "; nothing is installed from it until it is allowed"}})
		}
	}
	return problems
}

// NewPlan checks the values kube-fip-config gives chart under key, and the operator's defaults
// for it (chartvalues.Schema.Baseline). version is the chart version asked
// for, "" for the newest.
func (p Policy) NewPlan(chart guestchart.Chart, key, version string, given, defaults map[string]interface{}) (*Plan, error) {
	v, err := p.values.Check(chart, key, given)
	if err != nil {
		return nil, err
	}
	baseline, err := p.values.Baseline(chart, v, defaults)
	if err != nil {
		return nil, err
	}
	return &Plan{policy: p, Chart: chart, Version: version, Values: v, baseline: baseline}, nil
}

// Package is the archive data as chartarchive.Archives.Load lets it through for the plan's chart
// and version.
func (pl *Plan) Package(data []byte) (*chartarchive.Package, error) {
	return pl.policy.archives.Load(pl.Chart, pl.Version, data)
}

// CheckDigest says whether an archive of the plan's chart with digest, as a repository's index
// lists it, is worth fetching at all.
func (pl *Plan) CheckDigest(digest string) error {
	return pl.policy.archives.CheckDigest(pl.Chart, digest)
}

// Approve renders ch for rel with the plan's values and with the operator's defaults, and judges
// every object (approve.Judge). It returns the approved manifest, or a *guestchart.Refusal
// (ReasonChartRefused, ReasonRenderRefused, ReasonKubevipRefused) or a *render.TemplateError.
func (pl *Plan) Approve(ch *helmchart.Chart, rel render.Target) (*approve.Approval, error) {
	if err := chartarchive.CheckChart(pl.Chart, ch, pl.Version); err != nil {
		return nil, err
	}
	got, err := pl.objects(ch, pl.Values.Map, rel)
	if err != nil {
		return nil, err
	}
	base, err := pl.objects(ch, pl.baseline, rel)
	if err != nil {
		return nil, fmt.Errorf("with the operator's default values: %w", err)
	}
	return approve.Judge(pl.policy.values, pl.Chart, pl.Values.Name, rel, got, base)
}

// objects renders ch with values within the policy's render budget, and decodes the documents.
func (pl *Plan) objects(ch *helmchart.Chart, values map[string]interface{}, rel render.Target) ([]*approve.Object, error) {
	docs, err := pl.policy.renders.Render(pl.Chart, ch, values, rel, pl.policy.archives.DigestOf(ch))
	if err != nil {
		return nil, err
	}
	return approve.Decode(pl.Chart, docs)
}
