package installpolicy

import (
	"errors"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/problem"
)

// PlanKubevip is the plan of the kube-vip chart kube-fip-config asks for: its chart source
// allowed, its values accepted. It returns a *Refusal naming the key otherwise.
func (p Policy) PlanKubevip(cfg config.Config) (*Plan, error) {
	if err := p.checkNamespace(config.KeyKubevipNamespace, cfg.KubevipNamespace); err != nil {
		return nil, err
	}
	return p.plan(Kubevip, cfg.Kubevip, config.Default().Kubevip, config.KeyKubevipChartRef, config.KeyKubevipChartValues)
}

// PlanCloudProvider is PlanKubevip for the kube-vip-cloud-provider chart.
func (p Policy) PlanCloudProvider(cfg config.Config) (*Plan, error) {
	if err := p.checkNamespace(config.KeyKubevipNamespace, cfg.KubevipNamespace); err != nil {
		return nil, err
	}
	return p.plan(CloudProvider, cfg.KubevipCloudProvider, config.Default().KubevipCloudProvider,
		config.KeyKubevipCloudProviderChartRef, config.KeyKubevipCloudProviderChartValues)
}

func (p Policy) plan(chart Chart, ch, defaults config.Chart, refKey, valuesKey string) (*Plan, error) {
	key, source := config.KeyKubevipChartRepoURL, ch.RepoURL
	if ch.Ref != "" {
		key, source = refKey, ch.Ref
	}
	if err := p.CheckSource(key, source); err != nil {
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
		var r *Refusal
		if errors.As(err, &r) {
			problems = append(problems, config.KeyProblem{Key: r.Key, Warning: true, Problem: problem.Problem{
				Reason: r.Reason, Message: r.Message + "; nothing is installed from it until it is allowed"}})
		}
	}
	return problems
}
