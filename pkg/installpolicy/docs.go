package installpolicy

import (
	"fmt"
	"os"
	"strings"
)

// The README's table of value keys lies between these lines; go generate writes it
// (WriteValueKeys), so that the table is the schema.
const (
	valueKeysBegin = "<!-- value keys: written by go generate from pkg/installpolicy; do not edit -->"
	valueKeysEnd   = "<!-- end of value keys -->"
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

// WriteValueKeys writes ValueKeysMarkdown between the markers of the file at path (the README).
func WriteValueKeys(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text := string(data)
	begin := strings.Index(text, valueKeysBegin)
	end := strings.Index(text, valueKeysEnd)
	if begin < 0 || end < begin {
		return fmt.Errorf("%s has no lines %q and %q around the value keys", path, valueKeysBegin, valueKeysEnd)
	}
	out := text[:begin+len(valueKeysBegin)] + "\n" + ValueKeysMarkdown() + text[end:]
	if out == text {
		return nil
	}
	return os.WriteFile(path, []byte(out), 0o644)
}
