package charts

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/strvals"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/cleanup"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/imagepolicy"
	"github.com/kubefip/kube-fip-operator/test/rig"
)

// manualSentences are the sentences of every text a person reads about the product (the README,
// docs/, the chart's README, app-readme, form and values), each with the file it is in.
func manualSentences(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, f := range secretClaimFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, f)
		out[filepath.ToSlash(rel)] = sentences(string(data))
	}
	return out
}

// TestUnreachedGuestsAreNamedInTheReport: Helm deletes the clean-up Job, and its log, once it
// succeeded, so every sentence that says where the guests an uninstall could not clean are named
// names the ConfigMap the clean-up keeps them in (cleanup.ReportConfigMapName), and the page that
// describes that ConfigMap lists exactly the keys the clean-up writes.
func TestUnreachedGuestsAreNamedInTheReport(t *testing.T) {
	where := regexp.MustCompile(`(?i)\bJob's log\b|\b(cannot|could not) (reach|clean)\b[^.]*\b(are|is) (named|listed|kept)\b`)
	claims := 0
	for file, ss := range manualSentences(t) {
		for _, s := range ss {
			if !where.MatchString(s) {
				continue
			}
			claims++
			if !strings.Contains(s, cleanup.ReportConfigMapName) {
				t.Errorf("%s: %q says where the guests not cleaned are named without the ConfigMap %s, which outlives the Job", file, s, cleanup.ReportConfigMapName)
			}
		}
	}
	if claims == 0 {
		t.Error("no text says where the guests an uninstall could not clean are named")
	}
	section, err := rig.DocSection("docs/operations.md", "### Guests the uninstall could not clean")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z]+)` \\|").FindAllStringSubmatch(section, -1) {
		keys = append(keys, m[1])
	}
	want := []string{cleanup.ReportKeyGuests, cleanup.ReportKeyMode, cleanup.ReportKeyTime}
	if !slices.Equal(keys, want) {
		t.Errorf("operations.md lists the report's keys %v; the clean-up writes %v", keys, want)
	}
}

// TestPullSecretCopyIsWhereTheOperatorInstalls: the operator copies the guests' image pull Secret
// only into guests where it installs kube-vip, into kubevipNamespace (install.go writePullSecret),
// so every sentence that says where its copy goes names kubevipNamespace and does not say every
// guest.
func TestPullSecretCopyIsWhereTheOperatorInstalls(t *testing.T) {
	copied := regexp.MustCompile(`(?i)\bcop(y|ied|ies)\b`)
	claims := 0
	for file, ss := range manualSentences(t) {
		for _, s := range ss {
			if !strings.Contains(s, imagepolicy.GuestPullSecretName) || !copied.MatchString(s) {
				continue
			}
			claims++
			if !strings.Contains(s, config.KeyKubevipNamespace) || strings.Contains(strings.ToLower(s), "every guest") {
				t.Errorf("%s: %q; the copy %s is written only where the operator installs kube-vip, into %s", file, s, imagepolicy.GuestPullSecretName, config.KeyKubevipNamespace)
			}
		}
	}
	if claims == 0 {
		t.Errorf("no text says where the copy %s of the pull Secret goes", imagepolicy.GuestPullSecretName)
	}
}

// alertsOf are the names of the alerts the chart's PrometheusRule renders with every switch on.
func alertsOf(t *testing.T) []string {
	t.Helper()
	var pr ruleGroups
	convert(t, find(t, renderOperator(t, allSwitchesOn()), "PrometheusRule", "kube-fip-operator"), &pr)
	var names []string
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			names = append(names, r.Alert)
		}
	}
	slices.Sort(names)
	return names
}

// TestAlertListsNameEveryAlert: the form's description of the alerts switch and the configuration
// page's row of monitoring.prometheusRule.enabled name each alert the chart's PrometheusRule
// renders, and no other.
func TestAlertListsNameEveryAlert(t *testing.T) {
	alerts := alertsOf(t)
	if len(alerts) == 0 {
		t.Fatal("the PrometheusRule renders no alert")
	}
	named := func(text string) []string {
		var out []string
		for _, m := range regexp.MustCompile(`\bKubeFIP[A-Za-z]+\b`).FindAllString(text, -1) {
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
		slices.Sort(out)
		return out
	}
	questions, _ := loadQuestions(t)
	form := ""
	for _, q := range questions {
		if q.Variable == "monitoring.prometheusRule.enabled" {
			form = q.Description
		}
	}
	if got := named(form); !slices.Equal(got, alerts) {
		t.Errorf("the form's Alerts (PrometheusRule) description names %v; the chart renders %v", got, alerts)
	}
	row := ""
	for _, line := range strings.Split(readPage(t, "docs/configuration.md"), "\n") {
		if strings.HasPrefix(line, "| `monitoring.prometheusRule.enabled`") {
			row = line
		}
	}
	if got := named(row); !slices.Equal(got, alerts) {
		t.Errorf("configuration.md's row of monitoring.prometheusRule.enabled names %v; the chart renders %v", got, alerts)
	}
}

// helmTemplateFlags reads the flags of one `helm template` command line: the Kubernetes version,
// the API versions and the --set values it passes.
func helmTemplateFlags(t *testing.T, line string) (kubeVersion string, apis []string, values map[string]interface{}) {
	t.Helper()
	values = map[string]interface{}{}
	f := strings.Fields(line)
	for i := 0; i+1 < len(f); i++ {
		switch f[i] {
		case "--kube-version":
			kubeVersion = f[i+1]
		case "--api-versions":
			apis = append(apis, f[i+1])
		case "--set":
			if err := strvals.ParseInto(f[i+1], values); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
		}
	}
	return kubeVersion, apis, values
}

// TestOfflineRenderAsTheManualSays: each `helm template` command of operations.md's Install with
// Helm renders the operator chart, as Helm's renderer does with the flags it names; without its
// --api-versions and --set it fails, so the flags are what makes it render. The comment of
// validateInstallCRD in values.yaml names the same API versions.
func TestOfflineRenderAsTheManualSays(t *testing.T) {
	section, err := rig.DocSection("docs/operations.md", "## Install with Helm")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(chartDir(OperatorChart))
	if err != nil {
		t.Fatal(err)
	}
	commands := 0
	for _, line := range strings.Split(strings.ReplaceAll(section, "\\\n", " "), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "helm template") {
			continue
		}
		commands++
		kubeVersion, apis, values := helmTemplateFlags(t, line)
		if kubeVersion == "" {
			t.Errorf("%q names no --kube-version; Helm's default is older than the chart admits", line)
			continue
		}
		if _, err := Render(c, RenderOptions{Namespace: testNamespace, KubeVersion: kubeVersion, APIVersions: apis, Values: values}); err != nil {
			t.Errorf("%q: %v", line, err)
		}
		if _, err := Render(c, RenderOptions{Namespace: testNamespace, KubeVersion: kubeVersion}); err == nil {
			t.Errorf("%q renders without its --api-versions and --set too; the test proves nothing", line)
		}
	}
	if commands < 2 {
		t.Errorf("operations.md shows %d helm template commands; want one with --api-versions and one with validateInstallCRD=false", commands)
	}
	values := readPage(t, "charts/"+OperatorChart+"/values.yaml")
	comment, _, ok := strings.Cut(values, "\nvalidateInstallCRD:")
	if !ok {
		t.Fatal("values.yaml has no validateInstallCRD")
	}
	comment = comment[strings.LastIndex(comment, "\n\n"):]
	_, apis, _ := helmTemplateFlags(t, strings.ReplaceAll(comment, "#", " "))
	if !slices.Equal(apis, InstallAPIVersions()) {
		t.Errorf("values.yaml's comment of validateInstallCRD names --api-versions %v; the install check needs %v", apis, InstallAPIVersions())
	}
}

// TestConfigurationPageNamesEveryFormGroup: configuration.md's description of the form names each
// of its groups, in bold, in the form's order.
func TestConfigurationPageNamesEveryFormGroup(t *testing.T) {
	section, err := rig.DocSection("docs/configuration.md", "## The form")
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(section), " ")
	at := 0
	for _, group := range questionGroups() {
		i := strings.Index(flat[at:], "**"+group+"**")
		if i < 0 {
			t.Errorf("configuration.md's form does not name the group %q after the one before it", group)
			continue
		}
		at += i
	}
}

// TestImagePushPathIsTheChartsRepository: the push commands of development.md put the operator's
// image where the chart looks for it under a registry: <registry>/ and the chart's
// image.repository.
func TestImagePushPathIsTheChartsRepository(t *testing.T) {
	section, err := rig.DocSection("docs/development.md", "## The container image")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(chartDir(OperatorChart))
	if err != nil {
		t.Fatal(err)
	}
	repo, _ := valueAt(c.Values, "image.repository").(string)
	if repo == "" {
		t.Fatal("the chart has no image.repository")
	}
	flat := strings.Join(strings.Fields(section), " ")
	pushes := regexp.MustCompile(`<registry>/[a-z0-9./-]+`).FindAllString(flat, -1)
	if len(pushes) == 0 {
		t.Fatal("development.md's container image section shows no push to <registry>/...")
	}
	for _, p := range pushes {
		if p != "<registry>/"+repo {
			t.Errorf("development.md pushes the image to %s; the chart pulls <registry>/%s", p, repo)
		}
	}
}

// TestAllocationSelectorsMatchTheirRanges: every label selector of a page on the address space
// labels of FloatingIPAllocations (kubefip.k8s.binbash.org/harvester-cluster, .../harvester-network)
// gives a value the operator writes for an annotation of a range on that page: v1.LabelValue, which
// turns default/vlan10 into default-vlan10-<hash>.
func TestAllocationSelectorsMatchTheirRanges(t *testing.T) {
	annotation := regexp.MustCompile(`\b(harvesterClusterName|harvesterNetworkName): ([A-Za-z0-9./_-]+)`)
	selector := regexp.MustCompile(regexp.QuoteMeta(v1.LabelHarvesterCluster) + `=([^,\s]+)|` + regexp.QuoteMeta(v1.LabelHarvesterNetwork) + `[=:] ?([^,\s]+)`)
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	selectors := 0
	for _, page := range append(docs, filepath.Join(repoRoot, "README.md")) {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		written := map[string]bool{}
		for _, m := range annotation.FindAllStringSubmatch(string(data), -1) {
			written[v1.LabelValue(m[2])] = true
		}
		for _, m := range selector.FindAllStringSubmatch(string(data), -1) {
			value := m[1] + m[2]
			selectors++
			if !written[value] {
				t.Errorf("%s: %q matches no allocation of the ranges the page shows: the operator labels them with %v", filepath.Base(page), m[0], keys(written))
			}
		}
	}
	if selectors == 0 {
		t.Error("no page selects allocations by their Harvester cluster or network")
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestReadmeIsShort: the README stays at or under 200 lines; the rest goes to docs/.
func TestReadmeIsShort(t *testing.T) {
	if n := strings.Count(readPage(t, "README.md"), "\n"); n > 200 {
		t.Errorf("README.md has %d lines; keep it at or under 200 and move the rest to docs/", n)
	}
}

// TestAirGapSaysWhatReadyFollows: a moved tag or a missing image turns KubevipInstalled False and
// nothing else; Ready (v1.SetReady) follows the served state, so the FloatingIP stays Ready while
// the kube-vip installed before serves, and is not Ready where nothing serves (KubevipMissing).
// airgap.md's section on digests says both, and does not say the refusal itself makes it not Ready.
func TestAirGapSaysWhatReadyFollows(t *testing.T) {
	readyWith := func(served bool, servedReason string) bool {
		var s v1.FloatingIPStatus
		v1.SetCondition(&s, v1.Allocated, true, v1.ReasonAllocated, "held")
		v1.SetCondition(&s, v1.GuestConfigured, true, v1.ReasonConfigured, "configured")
		v1.SetCondition(&s, v1.KubevipInstalled, false, v1.ReasonImageTagMoved, "the tag moved")
		v1.SetCondition(&s, v1.Served, served, servedReason, "as read")
		v1.SetReady(&s)
		c, _ := v1.GetCondition(s.Conditions, v1.Ready)
		return c.Status == "True"
	}
	if !readyWith(true, v1.ReasonServed) || readyWith(false, v1.ReasonKubevipMissing) {
		t.Fatal("Ready does not follow Served beside KubevipInstalled=False; the page's claim must change with it")
	}
	section, err := rig.DocSection("docs/airgap.md", "## Pinned by digest")
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(section), " ")
	for _, want := range []string{"stays `Ready`", "`" + v1.ReasonKubevipMissing + "`", "not `Ready`"} {
		if !strings.Contains(flat, want) {
			t.Errorf("airgap.md's Pinned by digest does not say %q", want)
		}
	}
	if strings.Contains(flat, "Either makes the FloatingIP not `Ready`") {
		t.Error("airgap.md says a moved tag or a missing image makes the FloatingIP not Ready; Ready follows the served state")
	}
}
