package charts

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"helm.sh/helm/v3/pkg/strvals"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/test/rig/backup"
)

// helmUpgradeCommand is one `helm upgrade` the documentation shows, as one line.
type helmUpgradeCommand struct{ file, text string }

// documentedHelmUpgrades finds every `helm upgrade` in the README, docs/ and the chart's README,
// app-readme and NOTES: in fenced blocks (continued lines joined) and in inline code.
func documentedHelmUpgrades(t *testing.T) []helmUpgradeCommand {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(repoRoot, "README.md"), filepath.Join(chartDir(OperatorChart), "README.md"),
		filepath.Join(chartDir(OperatorChart), "app-readme.md"), filepath.Join(chartDir(OperatorChart), "templates", "NOTES.txt"))
	fence := regexp.MustCompile("(?s)```[a-z]*\n(.*?)```")
	inline := regexp.MustCompile("`(helm\\s+upgrade[^`]*)`")
	var out []helmUpgradeCommand
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(repoRoot, f)
		text := string(data)
		for _, block := range fence.FindAllStringSubmatch(text, -1) {
			joined := strings.ReplaceAll(block[1], "\\\n", " ")
			for _, line := range strings.Split(joined, "\n") {
				if i := strings.Index(line, "helm upgrade"); i >= 0 {
					out = append(out, helmUpgradeCommand{name, strings.Join(strings.Fields(line[i:]), " ")})
				}
			}
		}
		for _, m := range inline.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
			out = append(out, helmUpgradeCommand{name, strings.Join(strings.Fields(m[1]), " ")})
		}
	}
	return out
}

// upgradeWith upgrades a release of the previous chart, installed with userValues, to this chart
// the way cmd does: its --reuse-values, --reset-then-reuse-values, --reset-values, -f/--values
// (standing for the user's values given again) and --set. It returns kube-fip-config as rendered.
func upgradeWith(t *testing.T, cmd string, previous map[string]interface{}, userValues map[string]interface{}) map[string]string {
	t.Helper()
	kv, err := chartutil.ParseKubeVersion(testKubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	// The cluster has what every optional part needs: the commands may switch any on.
	caps.APIVersions = append(caps.APIVersions, append(append(InstallAPIVersions(), monitoringAPIVersions...), backup.ResourceSetAPIVersion)...)
	cfg := &action.Configuration{
		Releases:     storage.Init(driver.NewMemory()),
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: caps,
		Log:          func(string, ...interface{}) {},
	}
	old, err := Load(chartDir(OperatorChart))
	if err != nil {
		t.Fatal(err)
	}
	old.Values = chartutil.CoalesceTables(deepCopyValues(previous), old.Values)
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace = OperatorChart, testNamespace
	if _, err := install.Run(old, deepCopyValues(userValues)); err != nil {
		t.Fatalf("installing the previous chart: %v", err)
	}

	c, err := Load(chartDir(OperatorChart))
	if err != nil {
		t.Fatal(err)
	}
	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace, upgrade.DryRun = testNamespace, true
	values := map[string]interface{}{}
	args := strings.Fields(cmd)
	for i := 0; i < len(args); i++ {
		arg, next := args[i], ""
		if i+1 < len(args) {
			next = args[i+1]
		}
		switch {
		case arg == "--reuse-values":
			upgrade.ReuseValues = true
		case arg == "--reset-then-reuse-values":
			upgrade.ResetThenReuseValues = true
		case arg == "--reset-values":
			upgrade.ResetValues = true
		case arg == "-f" || arg == "--values":
			values = chartutil.CoalesceTables(values, deepCopyValues(userValues))
			i++
		case arg == "--set" && !strings.Contains(next, "..."):
			if err := strvals.ParseInto(next, values); err != nil {
				t.Fatalf("%s: --set %s: %v", cmd, next, err)
			}
			i++
		}
	}
	rel, err := upgrade.Run(OperatorChart, c, values)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	objs, err := decodeManifest(rel.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	convert(t, find(t, objs, "ConfigMap", config.ConfigMapName), &cm)
	return cm.Data
}

// TestDocumentedUpgradesTakeTheNewDefaults: every `helm upgrade` the documentation shows, run by
// Helm's own upgrade from a previous chart with another default, renders the new chart's default
// for a value the user never set, and keeps the value the user did set. `--reuse-values` fails
// this: it keeps the previous chart's defaults too, so a key the new chart adds renders empty.
func TestDocumentedUpgradesTakeTheNewDefaults(t *testing.T) {
	commands := documentedHelmUpgrades(t)
	if len(commands) < 3 {
		t.Fatalf("found %d helm upgrade commands in the documentation: %v; the extraction is broken", len(commands), commands)
	}
	t.Logf("%d helm upgrade commands in the documentation", len(commands))
	previous := map[string]interface{}{"config": map[string]interface{}{config.KeyOperateGuestClusterInterval: 300}}
	user := map[string]interface{}{"config": map[string]interface{}{config.KeyLogLevel: "Debug"}}
	for _, cmd := range commands {
		data := upgradeWith(t, cmd.text, previous, user)
		if got := data[config.KeyOperateGuestClusterInterval]; got != "480" {
			t.Errorf("%s: %q renders %s %q, the previous chart's default; want the new chart's 480", cmd.file, cmd.text, config.KeyOperateGuestClusterInterval, got)
		}
		if got := data[config.KeyLogLevel]; got != "Debug" {
			t.Errorf("%s: %q renders %s %q; want the user's Debug kept", cmd.file, cmd.text, config.KeyLogLevel, got)
		}
	}
}
