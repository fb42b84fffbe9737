package charts

import (
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	kubefipv1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
)

// renderNotes returns the NOTES.txt Helm prints after an install of the operator chart with values.
func renderNotes(t *testing.T, values map[string]interface{}) string {
	t.Helper()
	rel, err := renderRelease(t, values)
	if err != nil {
		t.Fatal(err)
	}
	if rel.Info == nil || rel.Info.Notes == "" {
		t.Fatal("the install printed no NOTES")
	}
	return rel.Info.Notes
}

// TestNotes: the notes after an install name the release namespace and its kube-fip-config, the
// option that chooses guest clusters with the value in force, as the operator reads it, and the
// cluster label of clusterlabel, in the fleet namespace the values name.
func TestNotes(t *testing.T) {
	notes := renderNotes(t, nil)
	for _, want := range []string{
		"installed in the namespace " + testNamespace,
		testNamespace + "/" + config.ConfigMapName,
		config.KeyKubevipGuestInstall,
		`now "` + string(config.Default().KubevipGuestInstall) + `"`,
		"kubectl label clusters.provisioning.cattle.io -n fleet-default <cluster> " + config.ClusterLabel + "=true",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES lack %q:\n%s", want, notes)
		}
	}

	// The values in force show, as the operator reads them.
	notes = renderNotes(t, map[string]interface{}{
		"rancher": map[string]interface{}{"fleetNamespace": "fleet-other"},
		"config":  map[string]interface{}{"kubevipGuestInstall": " Enabled "},
	})
	for _, want := range []string{`now "enabled"`, "-n fleet-other <cluster>", "network in fleet-other"} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES with other values lack %q:\n%s", want, notes)
		}
	}
}

// TestNotesRangeExample: the FloatingIPRange in the notes is one the API accepts: it decodes
// strictly into the Go type, with both annotations the operator matches ranges by and a CIDR.
func TestNotesRangeExample(t *testing.T) {
	notes := renderNotes(t, nil)
	start := strings.Index(notes, "   apiVersion: kubefip.k8s.binbash.org/v1")
	if start < 0 {
		t.Fatalf("no FloatingIPRange in the NOTES:\n%s", notes)
	}
	var lines []string
	for _, line := range strings.Split(notes[start:], "\n") {
		if !strings.HasPrefix(line, "   ") {
			break
		}
		lines = append(lines, strings.TrimPrefix(line, "   "))
	}
	var r kubefipv1.FloatingIPRange
	if err := yaml.UnmarshalStrict([]byte(strings.Join(lines, "\n")), &r); err != nil {
		t.Fatalf("the NOTES' FloatingIPRange: %v\n%s", err, strings.Join(lines, "\n"))
	}
	switch {
	case r.Kind != "FloatingIPRange" || r.Name == "":
		t.Errorf("kind %q, name %q", r.Kind, r.Name)
	case r.Annotations[kubefipv1.AnnotationHarvesterClusterName] == "" || r.Annotations[kubefipv1.AnnotationHarvesterNetworkName] == "":
		t.Errorf("annotations %v; want %s and %s", r.Annotations, kubefipv1.AnnotationHarvesterClusterName, kubefipv1.AnnotationHarvesterNetworkName)
	case !regexp.MustCompile(`^[0-9.]+/[0-9]+$`).MatchString(r.Spec.IPRange):
		t.Errorf("spec.iprange %q; want a CIDR", r.Spec.IPRange)
	}
}

// TestNotesShortNames: the kubectl commands of the notes use short names the CRD chart declares.
func TestNotesShortNames(t *testing.T) {
	declared := map[string]bool{}
	for _, crd := range crdChartCRDs(t) {
		for _, n := range crd.Spec.Names.ShortNames {
			declared[n] = true
		}
	}
	if len(declared) == 0 {
		t.Fatal("the CRD chart declares no short names")
	}
	notes := renderNotes(t, nil)
	for _, m := range regexp.MustCompile(`kubectl get (\w+)`).FindAllStringSubmatch(notes, -1) {
		if !declared[m[1]] {
			t.Errorf("NOTES run kubectl get %s; the CRDs declare only %v", m[1], declared)
		}
	}
}

// TestNotesWarnOfTheGitChartsImage: installed as committed in Git (appVersion dev, which no build
// publishes), the notes say the pods will not find their image and what to set; with image.tag
// set, or as a build packages it, they do not.
func TestNotesWarnOfTheGitChartsImage(t *testing.T) {
	if notes := renderNotes(t, nil); !strings.Contains(notes, `appVersion "dev" names no`) || !strings.Contains(notes, "image.tag") {
		t.Errorf("the notes of the Git chart do not warn of its image:\n%s", notes)
	}
	if notes := renderNotes(t, map[string]interface{}{"image": map[string]interface{}{"tag": "v1.2.3"}}); strings.Contains(notes, "WARNING") {
		t.Errorf("the notes warn with image.tag set:\n%s", notes)
	}
}
