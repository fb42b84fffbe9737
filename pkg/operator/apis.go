package operator

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// requiredAPI is an API the operator cannot start without, and where it comes from.
type requiredAPI struct {
	gvr  schema.GroupVersionResource
	from string
}

// requiredAPIs are Rancher's and the CRD chart's: without them the caches never sync, and the
// informers' own errors name neither the group nor what to install.
func requiredAPIs() []requiredAPI {
	return []requiredAPI{
		{schema.GroupVersionResource{Group: "provisioning.cattle.io", Version: "v1", Resource: "clusters"}, "Rancher (the operator runs in Rancher's local cluster)"},
		{schema.GroupVersionResource{Group: "management.cattle.io", Version: "v3", Resource: "clusters"}, "Rancher (the operator runs in Rancher's local cluster)"},
		{schema.GroupVersionResource{Group: "kubefip.k8s.binbash.org", Version: "v1", Resource: "floatingips"}, "the kube-fip-operator-crd chart"},
		{schema.GroupVersionResource{Group: "kubefip.k8s.binbash.org", Version: "v1", Resource: "floatingipranges"}, "the kube-fip-operator-crd chart"},
		{schema.GroupVersionResource{Group: "kubefip.k8s.binbash.org", Version: "v1", Resource: "floatingipallocations"}, "the kube-fip-operator-crd chart"},
	}
}

// waitForAPIs waits until the API server serves every required API, saying every minute which
// are missing and what installs them; until then the operator is not ready.
func waitForAPIs(ctx context.Context, served discovery.ServerResourcesInterface, every time.Duration) error {
	var last time.Time
	for {
		var missing []string
		for _, api := range requiredAPIs() {
			ok, err := isServed(served, api.gvr)
			switch {
			case err != nil:
				missing = append(missing, fmt.Sprintf("%s (%v)", api.gvr.GroupResource(), err))
			case !ok:
				missing = append(missing, fmt.Sprintf("%s.%s/%s, which %s provides", api.gvr.Resource, api.gvr.Group, api.gvr.Version, api.from))
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if time.Since(last) >= time.Minute {
			logrus.Errorf("the API server does not serve %s: waiting until it does", strings.Join(missing, "; "))
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the API server does not serve %s", strings.Join(missing, "; "))
		case <-time.After(every):
		}
	}
}
