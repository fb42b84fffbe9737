package charts

import (
	"strings"
	"testing"
)

// TestQuestionsGuide: the form guides. Fields that are easy to break and rarely changed are in
// the Advanced tab; the fields that act on every guest cluster at once or give addresses back
// carry a warning naming the value that does it; and fields that only work together say so: each
// chart version and its values' image tag, each chart source and the Security tab's allowed
// sources, each image and the allowed images.
func TestQuestionsGuide(t *testing.T) {
	questions, _ := loadQuestions(t)
	byVariable := map[string]*flatQuestion{}
	for _, q := range flattenQuestions(questions, nil) {
		byVariable[q.Variable] = q
	}
	group := func(q *flatQuestion) string {
		for ; q.parent != nil; q = q.parent {
		}
		return q.Group
	}
	for _, v := range []string{"leaderElection", "rancher.fleetNamespace", "rancher.globalDataNamespace", "config.traceIpamData",
		"threads", "guestWorkers", "guestTimeout", "helmCacheSizeLimit", "config.kubevipReleaseName",
		"config.kubevipCloudProviderReleaseName", "backup.rancherBackupNamespace"} {
		if q := byVariable[v]; q == nil || group(q) != "Advanced" {
			t.Errorf("%s: not in the Advanced tab", v)
		}
	}
	says := func(v string, parts ...string) {
		t.Helper()
		q := byVariable[v]
		if q == nil {
			t.Errorf("%s: no question", v)
			return
		}
		for _, p := range parts {
			if !strings.Contains(q.Description, p) {
				t.Errorf("%s: the description does not say %q: %q", v, p, q.Description)
			}
		}
	}
	// Warnings: what acts on every guest at once, what gives addresses back.
	says("config.kubevipGuestInstall", "WARNING:", "enabled", "every", "at once")
	says("config.kubevipUpdate", "WARNING:", "every guest", "at once")
	says("cleanup.onUninstall", "WARNING:", "delete", "address")
	// What goes together.
	for _, chart := range []string{"kubevip", "kubevipCloudProvider"} {
		says("config."+chart+"ChartVersion", "image.tag", "together")
		says("config."+chart+"ChartValues", "image.tag", "chart version", "image.repository", "Security tab")
		says("config."+chart+"ChartRef", "allowed chart source", "Security tab")
	}
	says("config.kubevipChartRepoUrl", "allowed chart source", "Security tab")
	says("security.allowedChartSources", "Helm repository", "OCI references")
	says("security.allowedImages.kubevip", "image.repository")
	says("security.allowedImages.kubevipCloudProvider", "image.repository")
}
