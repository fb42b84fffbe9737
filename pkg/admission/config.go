package admission

import (
	"slices"
	"strings"

	"github.com/rancher/wrangler/v2/pkg/webhook"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubefip/kube-fip-operator/pkg/config"
)

// config judges kube-fip-config with the checks the operator runs when it reads it (config.Parse,
// then the install policy): an invalid value or chart settings the policy refuses are refused;
// what the operator only warns about (an unknown key, an OCI reference without its version) comes
// back as a warning.
func (v *Validator) config(req *webhook.Request) (verdict, error) {
	_, cm, err := decode[corev1.ConfigMap](req)
	if err != nil || cm == nil || cm.Name != config.ConfigMapName || cm.DeletionTimestamp != nil {
		return allow(), err
	}
	parsed, problems := config.Parse(cm.Data, config.Default())
	var refused, warnings []string
	for _, p := range problems {
		if p.Warning {
			warnings = append(warnings, p.Error())
			continue
		}
		refused = append(refused, p.Error())
	}
	policy, err := v.deps.Policy(req.Context)
	if err != nil {
		// Never judged by a policy that could not be read: refused, so that nothing the
		// deployment did not allow gets in while its settings are missing or broken.
		return refuse("kube-fip-config cannot be judged: %v; nothing was changed", err), nil
	}
	for _, p := range policy.Check(parsed) {
		// Both charts' checks may name one shared key (kubevipChartRepoUrl): said once.
		if msg := p.Error(); !slices.Contains(refused, msg) {
			refused = append(refused, msg)
		}
	}
	if len(refused) == 0 {
		return allow(warnings...), nil
	}
	return refuse("%s; correct these values (see docs/configuration.md, kube-fip-config, and docs/security.md, Chart values), nothing was changed", strings.Join(refused, "; ")), nil
}
