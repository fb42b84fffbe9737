package charts

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// secretGrant is the Secrets one rule lets the operator read: in a namespace, one by name or
// (name empty) any it names.
type secretGrant struct{ namespace, name string }

// operatorSecretGrants renders the chart with values and returns every Secret its Roles and
// ClusterRoles bound to the operator's ServiceAccount let it read.
func operatorSecretGrants(t *testing.T, values map[string]interface{}) []secretGrant {
	t.Helper()
	objs := renderOperator(t, values)
	sa := "kube-fip-operator"
	bound := map[string]bool{} // "<namespace>/<role>", namespace empty for a ClusterRole
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		for _, o := range ofKind(objs, kind) {
			var b rbacv1.RoleBinding
			convert(t, o, &b)
			for _, s := range b.Subjects {
				if s.Kind == rbacv1.ServiceAccountKind && s.Name == sa && s.Namespace == testNamespace {
					ns := b.Namespace
					if b.RoleRef.Kind == "ClusterRole" {
						ns = ""
					}
					bound[ns+"/"+b.RoleRef.Name] = true
				}
			}
		}
	}
	var out []secretGrant
	for _, kind := range []string{"Role", "ClusterRole"} {
		for _, o := range ofKind(objs, kind) {
			var r rbacv1.Role
			convert(t, o, &r)
			if !bound[r.Namespace+"/"+r.Name] {
				continue
			}
			for _, rule := range r.Rules {
				if !slices.Contains(rule.APIGroups, "") || !slices.Contains(rule.Resources, "secrets") {
					continue
				}
				if len(rule.ResourceNames) == 0 {
					out = append(out, secretGrant{r.Namespace, ""})
				}
				for _, name := range rule.ResourceNames {
					out = append(out, secretGrant{r.Namespace, name})
				}
			}
		}
	}
	return out
}

// secretClaimFiles are the texts a person reads about the chart's access to Secrets.
func secretClaimFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	dir := chartDir(OperatorChart)
	return append(docs, filepath.Join(repoRoot, "README.md"), filepath.Join(dir, "README.md"), filepath.Join(dir, "app-readme.md"),
		filepath.Join(dir, "questions.yaml"), filepath.Join(dir, "values.yaml"))
}

// exclusiveSecretClaims returns the sentences (a table row is one) that say which Secrets the
// operator reads and that it reads no others: they speak of Secrets with "only", or of a Secret
// followed by "no other(s)". A sentence of one Secret with "only" ("reads only that Secret") says what is
// done with it, not which are read.
func exclusiveSecretClaims(text string) []string {
	plural, only := regexp.MustCompile(`\bSecrets\b`), regexp.MustCompile(`(?i)\bonly\b`)
	noOther := regexp.MustCompile(`(?i)\bSecrets?\b[^.;:]{0,40}\bno others?\b|\bno Secrets?\b[^.;:]{0,10}\b(but|besides|other than)\b`)
	var out []string
	for _, s := range sentences(text) {
		if plural.MatchString(s) && only.MatchString(s) || noOther.MatchString(s) {
			out = append(out, s)
		}
	}
	return out
}

// sentences splits a document into its sentences, each on one line: paragraphs (and each row of a
// Markdown table) are split where a full stop ends a sentence, not at the dot of a key such as
// guestImages.pullSecret; the # of comment lines (values.yaml) is dropped, and so are fenced code
// blocks, which end a paragraph.
func sentences(text string) []string {
	text = regexp.MustCompile("(?s)\n\\s*```.*?\n\\s*```[^\n]*").ReplaceAllString(text, "\n\n")
	var out []string
	for _, block := range regexp.MustCompile(`\n\s*\n|\n\|`).Split(text, -1) {
		flat := strings.Join(strings.Fields(regexp.MustCompile(`\n\s*#`).ReplaceAllString("\n"+block, "\n")), " ")
		for _, s := range regexp.MustCompile(`.*?(\.\s|\.$|$)`).FindAllString(flat, -1) {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// TestSecretClaimsMatchTheRoles: every sentence of the README, docs/, the chart's README,
// app-readme, form and values that says which Secrets the operator reads, and no others, names
// each Secret the chart's roles let it read: any Secret, by name, of Rancher's provisioning and
// global data namespaces; in its own namespace the security settings' Secret, the webhook
// certificate Secret, the chart credentials Secret and the guests' image pull Secret. A Secret the roles grant and the test does not know fails it, so a new
// grant is documented before it passes.
func TestSecretClaimsMatchTheRoles(t *testing.T) {
	grants := operatorSecretGrants(t, map[string]interface{}{"security": map[string]interface{}{"chartCredentialsSecret": "chart-credentials"},
		"guestImages": map[string]interface{}{"pullSecret": "registry-pull"}})
	// How the texts may name each grant: the value that sets it, its default, what it is.
	names := map[secretGrant][]string{
		{"fleet-default", ""}:                            {"rancher.fleetNamespace", "fleet-default", "provisioning namespace"},
		{"cattle-global-data", ""}:                       {"rancher.globalDataNamespace", "cattle-global-data", "global data namespace"},
		{testNamespace, "kube-fip-operator-webhook-tls"}: {"kube-fip-operator-webhook-tls", "webhook certificate"},
		{testNamespace, "kube-fip-operator-security"}:    {"kube-fip-operator-security", "security settings"},
		{testNamespace, "chart-credentials"}:             {"security.chartCredentialsSecret", "chart credentials"},
		{testNamespace, "registry-pull"}:                 {"guestImages.pullSecret", "pull Secret"},
	}
	for _, g := range grants {
		if _, ok := names[g]; !ok {
			t.Errorf("the chart lets the operator read Secret %q in namespace %s, which the test does not know: document it and add it here", g.name, g.namespace)
		}
	}
	for g := range names {
		if !slices.Contains(grants, g) {
			t.Errorf("the chart no longer grants Secret %q in namespace %s: take it out of the test and the texts", g.name, g.namespace)
		}
	}
	claims := 0
	for _, f := range secretClaimFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, f)
		for _, sentence := range exclusiveSecretClaims(string(data)) {
			claims++
			for g, aliases := range names {
				if !slices.ContainsFunc(aliases, func(a string) bool { return strings.Contains(sentence, a) }) {
					t.Errorf("%s: %q leaves out %s (one of %q)", rel, sentence, describeGrant(g), aliases)
				}
			}
		}
	}
	if claims == 0 {
		t.Error("no text says which Secrets the operator reads; the chart's README should")
	}
	t.Logf("%d sentences say which Secrets the operator reads", claims)
}

func describeGrant(g secretGrant) string {
	if g.name == "" {
		return "the Secrets of namespace " + g.namespace
	}
	return "Secret " + g.namespace + "/" + g.name
}
