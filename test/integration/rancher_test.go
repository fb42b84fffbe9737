package integration

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// createRangeFor creates a range of the fixture for a Harvester cluster and network.
func (f *fixture) createRangeFor(name, cidr, harvesterName, network string) {
	f.t.Helper()
	_, err := f.api.FloatingIPRange().Create(&v1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			v1.AnnotationHarvesterClusterName: harvesterName,
			v1.AnnotationHarvesterNetworkName: network,
		}},
		Spec: v1.FloatingIPRangeSpec{IPRange: cidr},
	})
	if err != nil {
		f.t.Fatalf("creating range %s: %v", name, err)
	}
	f.ranges = append(f.ranges, name)
}

// errorLinesAbout returns the operator's error-level log lines that mention any of words.
func errorLinesAbout(logs string, words ...string) []string {
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		if !strings.Contains(line, "level=error") {
			continue
		}
		for _, w := range words {
			if strings.Contains(line, w) {
				out = append(out, line)
				break
			}
		}
	}
	return out
}
