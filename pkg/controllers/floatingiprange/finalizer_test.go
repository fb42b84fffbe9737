package floatingiprange

import (
	"testing"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// TestFinalizerIsTheHandlers: wrangler's OnRemove puts "wrangler.cattle.io/" and the handler's
// name on every FloatingIPRange; v1.RangeFinalizer, which the uninstall cleanup names, must be
// that very string.
func TestFinalizerIsTheHandlers(t *testing.T) {
	if want := "wrangler.cattle.io/" + HandlerName; v1.RangeFinalizer != want {
		t.Errorf("v1.RangeFinalizer = %q; the handler %s puts %q", v1.RangeFinalizer, HandlerName, want)
	}
}
