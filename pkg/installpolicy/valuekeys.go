package installpolicy

import (
	"fmt"
	"strings"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/approve"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
)

// ValueKeysMarkdown is the table of the value keys a configuration may set, and the list of
// kube-vip's variables, as docs/security.md shows them.
func ValueKeysMarkdown() string {
	var b strings.Builder
	b.WriteString("| chart | key | takes |\n| --- | --- | --- |\n")
	for _, chart := range guestchart.Charts() {
		for _, k := range chartvalues.Keys(chart) {
			fmt.Fprintf(&b, "| %s | `%s` | %s |\n", chart, k.Key, k.Takes)
		}
	}
	fmt.Fprintf(&b, "\nkube-vip's variables (`env.<name>`), for its ARP mode for Services: `%s`.\n", strings.Join(chartvalues.KubevipEnvNames(chartvalues.ModeServices), "`, `"))
	b.WriteString("Those of another mode only when the deployment allows the mode (`security.kubevipModes`, `--allowed-kubevip-modes`):\n\n")
	for _, m := range chartvalues.Modes() {
		fmt.Fprintf(&b, "- `%s`: `%s`\n", m, strings.Join(chartvalues.KubevipEnvNames(m), "`, `"))
	}
	b.WriteString("\nWhere a rendered object may differ from the chart's own render with the product's defaults (everything else must be exactly as there):\n\n")
	b.WriteString("| chart | object | path | may hold |\n| --- | --- | --- | --- |\n")
	for _, chart := range guestchart.Charts() {
		for _, v := range approve.Variables(chart) {
			fmt.Fprintf(&b, "| %s | %s | `%s` | %s |\n", chart, v.Kind, v.Path, v.Takes)
		}
	}
	return b.String()
}
