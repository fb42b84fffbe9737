package installpolicy

import (
	"fmt"
	"strings"
)

// ValueKeysMarkdown is the table of the value keys a configuration may set, and the list of
// kube-vip's variables, as the README shows them.
func ValueKeysMarkdown() string {
	var b strings.Builder
	b.WriteString("| chart | key | takes |\n| --- | --- | --- |\n")
	for _, chart := range []Chart{Kubevip, CloudProvider} {
		for _, k := range ValueKeys(chart) {
			fmt.Fprintf(&b, "| %s | `%s` | %s |\n", chart, k.Key, k.Takes)
		}
	}
	fmt.Fprintf(&b, "\nkube-vip's variables (`env.<name>`, `envValueFrom.<name>`): `%s`.\n", strings.Join(KubevipEnvNames(), "`, `"))
	return b.String()
}
