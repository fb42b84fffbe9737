package charts

import (
	"fmt"
	"os"
	"path"
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

// maxReadmeLines is how long the README may be: what it does, prerequisites, install, a first
// FloatingIP and links; everything else is a page of docs/.
const maxReadmeLines = 200

// manualPages are the pages of the manual, by path from the repository root: the README, the
// CHANGELOG, every page of docs/ and the charts' READMEs (the app's README tab in Rancher).
func manualPages(t *testing.T) []string {
	t.Helper()
	pages := []string{"README.md", "CHANGELOG.md"}
	for _, glob := range []string{"docs/*.md", "charts/*/README.md"} {
		found, err := filepath.Glob(filepath.Join(repoRoot, filepath.FromSlash(glob)))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			rel, _ := filepath.Rel(repoRoot, f)
			pages = append(pages, filepath.ToSlash(rel))
		}
	}
	return pages
}

func readPage(t *testing.T, page string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(page)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestReadmeIsShort: the README stays a first screen, at most maxReadmeLines lines.
func TestReadmeIsShort(t *testing.T) {
	lines := strings.Count(readPage(t, "README.md"), "\n")
	t.Logf("README.md has %d lines", lines)
	if lines > maxReadmeLines {
		t.Errorf("README.md has %d lines; at most %d: move a section to a page of docs/ and link it", lines, maxReadmeLines)
	}
}

// TestEveryPageLinkedFromReadme: every page of docs/ and the CHANGELOG is the target of a Markdown
// link of the README, so that nothing of the manual is out of a reader's reach.
func TestEveryPageLinkedFromReadme(t *testing.T) {
	linked := map[string]bool{}
	for _, m := range markdownLinks.FindAllStringSubmatch(readPage(t, "README.md"), -1) {
		target, _, _ := strings.Cut(m[1], "#")
		if target != "" && !strings.Contains(target, ":") {
			linked[path.Clean(target)] = true
		}
	}
	pages := 0
	for _, page := range manualPages(t) {
		if page == "README.md" || strings.HasPrefix(page, "charts/") {
			continue
		}
		pages++
		if !linked[page] {
			t.Errorf("README.md links no %s", page)
		}
	}
	if pages < 8 {
		t.Errorf("only %d pages besides the README; the manual is CHANGELOG.md and docs/*.md", pages)
	}
}

// tableSeparator is the second row of a Markdown table: | --- | :---: |.
var tableSeparator = regexp.MustCompile(`^\|(\s*:?-{3,}:?\s*\|)+$`)

// tableRows returns the body rows of the Markdown tables of text, each with its cells trimmed:
// not a table's header (the row before its separator) nor the separator. Rows in fenced code
// blocks are no table's.
func tableRows(text string) []string {
	var rows []string
	lines := strings.Split(text, "\n")
	fenced := false
	for i, line := range lines {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "|") || tableSeparator.MatchString(line) {
			continue
		}
		if i+1 < len(lines) && tableSeparator.MatchString(strings.TrimSpace(lines[i+1])) {
			continue // a header
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cells {
			cells[j] = strings.Join(strings.Fields(cells[j]), " ")
		}
		rows = append(rows, "| "+strings.Join(cells, " | ")+" |")
	}
	return rows
}

// repeatedRows reports every table row of one page that another page has too.
func repeatedRows(pages map[string]string) []string {
	first := map[string]string{} // row -> the first page that has it
	var out []string
	names := make([]string, 0, len(pages))
	for name := range pages {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		seen := map[string]bool{}
		for _, row := range tableRows(pages[name]) {
			if seen[row] {
				continue
			}
			seen[row] = true
			if other, ok := first[row]; ok && other != name {
				out = append(out, fmt.Sprintf("%s repeats a row of %s: %s", name, other, row))
				continue
			}
			first[row] = name
		}
	}
	return out
}

// TestNoTableRowInTwoPages: each table of the manual lives in one page, and the others link to it:
// no row of a table, beyond its header and separator, appears in two pages.
func TestNoTableRowInTwoPages(t *testing.T) {
	pages := map[string]string{}
	rows := 0
	for _, page := range manualPages(t) {
		pages[page] = readPage(t, page)
		rows += len(tableRows(pages[page]))
	}
	t.Logf("%d table rows in %d pages", rows, len(pages))
	if rows < 100 {
		t.Errorf("only %d table rows found; the manual's tables are missed", rows)
	}
	for _, r := range repeatedRows(pages) {
		t.Error(r)
	}
}

// TestRepeatedRowsAreFound: the check above finds a row two pages share, whatever their spacing,
// and leaves alone headers, separators, code blocks and a row repeated in its own page.
func TestRepeatedRowsAreFound(t *testing.T) {
	a := "| key | meaning |\n| --- | --- |\n| `x` | one |\n| `x` | one |\n\n```\n| `y` | code |\n```\n"
	b := "| key | meaning |\n|---|---|\n|  `x`  |   one |\n| `z` | two |\n| `y` | code |\n"
	got := repeatedRows(map[string]string{"a.md": a, "b.md": b})
	if len(got) != 1 || !strings.Contains(got[0], "b.md repeats a row of a.md: | `x` | one |") {
		t.Errorf("repeatedRows: %q; want b.md's | `x` | one | alone", got)
	}
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
