package floatingip

import (
	"testing"

	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSelectionInputsChanged: only a change of a provisioning cluster's labels, or of the guest
// namespace it names, judges its waiting FloatingIPs again; a status heartbeat does not.
func TestSelectionInputsChanged(t *testing.T) {
	t.Parallel()
	cluster := func(labels map[string]string, ns, secret string) *provv1.Cluster {
		c := &provv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet-default", Name: "demo", Labels: labels}}
		c.Status.ClusterName, c.Status.ClientSecretName = ns, secret
		return c
	}
	base := cluster(map[string]string{"env": "dev"}, "c-m-1", "a")
	for _, tc := range []struct {
		what     string
		old, obj interface{}
		want     bool
	}{
		{"a status heartbeat", base, cluster(map[string]string{"env": "dev"}, "c-m-1", "b"), false},
		{"the same object handled again", base, base, false},
		{"a label changes", base, cluster(map[string]string{"env": "prod"}, "c-m-1", "a"), true},
		{"a label is added", base, cluster(map[string]string{"env": "dev", "tier": "1"}, "c-m-1", "a"), true},
		{"the labels go", base, cluster(nil, "c-m-1", "a"), true},
		{"it comes to name its namespace", cluster(map[string]string{"env": "dev"}, "", "a"), base, true},
		{"not a provisioning cluster before", "junk", base, true},
		{"not a provisioning cluster now", base, "junk", false},
	} {
		if got := selectionInputsChanged(tc.old, tc.obj); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.what, got, tc.want)
		}
	}
}
