package charts

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/test/rig"
)

func readPage(t *testing.T, page string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(page)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestReadmeSaysWhatChangesInAGuest: the README's one list of what the operator changes in a guest
// names the objects, keys, annotations, labels and selectors the code writes and reads, with their
// values as the code and the chart define them.
func TestReadmeSaysWhatChangesInAGuest(t *testing.T) {
	section, err := rig.ReadmeSection("## What it changes in a guest cluster")
	if err != nil {
		t.Fatal(err)
	}
	defaults := config.Default()
	for _, want := range []string{
		kubevipconfig.DefaultConfigMap().String(),
		"<kubevipNamespace>/" + chartvalues.ProviderConfigMapName,
		kubevipconfig.GlobalCIDRKey,
		kubevipconfig.CIDRKeyPrefix + "<namespace>",
		kubevipconfig.OwnedKeysAnnotation,
		config.KeyKubevipGuestInstall + ": " + string(config.InstallEnabled),
		string(config.InstallClusterLabel),
		config.ClusterLabel + "=true",
		"`" + defaults.Kubevip.ReleaseName + "`",
		"`" + defaults.KubevipCloudProvider.ReleaseName + "`",
		chartvalues.KubevipNameOverride,
		"`" + installpolicy.DefaultNamespaces()[0] + "`",
		kubevipconfig.HarvesterDaemonSetNamespace + "/" + kubevipconfig.HarvesterDaemonSetName,
		kubevipconfig.HarvesterReleaseName,
		kubevipconfig.DisabledNodeSelectorKey + `: "true"`,
		"ConfigMap of `" + guest.ProbeNamespace + "`",
		kubevipconfig.ImplementationLabel,
		"cleanup.guests: clean", "cleanup.onUninstall: delete",
	} {
		if !strings.Contains(strings.Join(strings.Fields(section), " "), want) {
			t.Errorf("the README's list of what changes in a guest does not say %q", want)
		}
	}
	c, err := Load(chartDir(OperatorChart))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"cleanup.guests", "cleanup.onUninstall"} {
		if valueAt(c.Values, key) == nil {
			t.Errorf("the README names %s, which the chart's values do not have", key)
		}
	}
}

// TestReadmePrerequisites: the README's prerequisites name the Rancher versions the chart admits
// (catalog.cattle.io/rancher-version) and the interface kube-vip uses by default.
func TestReadmePrerequisites(t *testing.T) {
	section, err := rig.ReadmeSection("## Prerequisites")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(chartDir(OperatorChart))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^>=\s*(\d+\.\d+)\.0`).FindStringSubmatch(c.Metadata.Annotations["catalog.cattle.io/rancher-version"])
	if m == nil {
		t.Fatalf("catalog.cattle.io/rancher-version %q is no lower bound", c.Metadata.Annotations["catalog.cattle.io/rancher-version"])
	}
	if want := "Rancher " + m[1] + " or later"; !strings.Contains(section, want) {
		t.Errorf("the README's prerequisites do not say %q", want)
	}
	var values struct {
		Env map[string]string `json:"env"`
	}
	if err := yaml.Unmarshal([]byte(config.DefaultKubevipChartValues), &values); err != nil {
		t.Fatal(err)
	}
	nic := values.Env["vip_interface"]
	if nic == "" || !strings.Contains(section, "`"+nic+"` by default") {
		t.Errorf("the README's prerequisites do not name kube-vip's default interface %q", nic)
	}
}

// TestReadmeShowsTheColumnsKubectlPrints: the output of `kubectl get fip -A` the README shows has
// the columns the FloatingIP CRD prints, in its order.
func TestReadmeShowsTheColumnsKubectlPrints(t *testing.T) {
	section, err := rig.ReadmeSection("## Your first FloatingIP")
	if err != nil {
		t.Fatal(err)
	}
	var shown []string
	for _, block := range regexp.MustCompile("(?s)```text\n(.*?)```").FindAllStringSubmatch(section, -1) {
		header, _, _ := strings.Cut(strings.TrimSpace(block[1]), "\n")
		if f := strings.Fields(header); len(f) > 2 && f[0] == "NAMESPACE" {
			shown = f
		}
	}
	if shown == nil {
		t.Fatal("the README's first FloatingIP shows no output of kubectl get fip -A")
	}
	want := append([]string{"NAMESPACE", "NAME"}, printedColumns(t, "floatingips")...)
	if !slices.Equal(shown, want) {
		t.Errorf("the README shows the columns %v; kubectl get fip -A prints %v", shown, want)
	}
}

// TestDesignNamesTheColumnsKubectlPrints: each "`kubectl get <kind>` shows A, B and C (`-o wide`
// adds D and E)" of the API in design.md names the columns the kind's CRD prints, in its order, and
// those -o wide adds.
func TestDesignNamesTheColumnsKubectlPrints(t *testing.T) {
	text := strings.Join(strings.Fields(readPage(t, "docs/design.md")), " ")
	for short, plural := range map[string]string{"fiprange": "floatingipranges", "fip": "floatingips", "fipalloc": "floatingipallocations"} {
		_, shows, ok := strings.Cut(text, "`kubectl get "+short+"` shows ")
		if !ok {
			t.Errorf("design.md does not say what kubectl get %s shows", short)
			continue
		}
		shown, rest, ok := strings.Cut(shows, "(`-o wide` adds ")
		if !ok {
			t.Errorf("design.md does not say what kubectl get %s -o wide adds", short)
			continue
		}
		wide, _, _ := strings.Cut(rest, ")")
		if got, want := columnNames(shown), printedColumns(t, plural); !slices.Equal(got, want) {
			t.Errorf("design.md: kubectl get %s shows %v; the CRD prints %v", short, got, want)
		}
		got, want := columnNames(wide), printedWideColumns(t, plural)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("design.md: kubectl get %s -o wide adds %v; the CRD adds %v", short, got, want)
		}
	}
}

// columnName is a word written as kubectl prints a column's name: in capitals.
var columnName = regexp.MustCompile(`^[A-Z][A-Z0-9%-]+$`)

// columnNames are the words of text written as kubectl prints column names.
func columnNames(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return strings.ContainsRune(" ,.;:()`", r) }) {
		if columnName.MatchString(w) {
			out = append(out, w)
		}
	}
	return out
}

// printedColumns are the columns kubectl prints without -o wide for the kubefip CRD of plural,
// upper-cased as kubectl prints them.
func printedColumns(t *testing.T, plural string) []string {
	t.Helper()
	return crdColumns(t, plural, false)
}

// printedWideColumns are the columns -o wide adds.
func printedWideColumns(t *testing.T, plural string) []string {
	t.Helper()
	return crdColumns(t, plural, true)
}

func crdColumns(t *testing.T, plural string, wide bool) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir(CRDChart), "templates", plural+"_kubefip_k8s_binbash_org.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Columns []struct {
					Name     string `json:"name"`
					Priority int    `json:"priority"`
				} `json:"additionalPrinterColumns"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil || len(crd.Spec.Versions) == 0 {
		t.Fatalf("the CRD of %s: %v", plural, err)
	}
	var out []string
	for _, c := range crd.Spec.Versions[0].Columns {
		if (c.Priority > 0) == wide {
			out = append(out, strings.ToUpper(c.Name))
		}
	}
	return out
}
