package floatingip

import (
	"testing"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// TestFinalizerIsTheHandlers: wrangler's OnRemove puts "wrangler.cattle.io/" and the handler's
// name on every FloatingIP; v1.FloatingIPFinalizer, which discovery and the uninstall cleanup
// name, must be that very string.
func TestFinalizerIsTheHandlers(t *testing.T) {
	if want := "wrangler.cattle.io/" + HandlerName; v1.FloatingIPFinalizer != want {
		t.Errorf("v1.FloatingIPFinalizer = %q; the handler %s puts %q", v1.FloatingIPFinalizer, HandlerName, want)
	}
}
