package operator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"

	"github.com/kubefip/kube-fip-operator/pkg/controllers"
)

// startInformers starts every informer of the process — the shared caches and the informers the
// controllers handed over — and waits until all of them synced: no handler, repair pass or guest
// pass reads a cache still filling. An optional informer whose resource the API server does not
// serve runs unwaited for. The error names each informer that did not sync before ctx ended.
func startInformers(ctx context.Context, shared sharedCaches, served discovery.ServerResourcesInterface, informers []controllers.Informer) error {
	// Decided before anything starts, so that an optional resource is waited for exactly when it
	// is there to be listed.
	waitFor := make([]controllers.Informer, 0, len(informers))
	for _, inf := range informers {
		if inf.Optional != nil {
			ok, err := isServed(served, *inf.Optional)
			if err != nil {
				return fmt.Errorf("finding whether %s are served: %w", inf.Name, err)
			}
			if !ok {
				logrus.Infof("%s are not served by the API server: running without them until they are", inf.Name)
				continue
			}
		}
		waitFor = append(waitFor, inf)
	}
	if err := shared.Start(ctx); err != nil {
		return fmt.Errorf("starting caches: %w", err)
	}
	for _, inf := range informers {
		go inf.Informer.Run(ctx.Done())
	}

	var unsynced []string
	for gvk, ok := range shared.WaitForCacheSync(ctx) {
		if !ok {
			unsynced = append(unsynced, gvk.String())
		}
	}
	for _, inf := range waitFor {
		// Asked once more when the wait ends with ctx, so that an informer that synced by then is
		// not named.
		if !cache.WaitForCacheSync(ctx.Done(), inf.Informer.HasSynced) && !inf.Informer.HasSynced() {
			unsynced = append(unsynced, inf.Name)
		}
	}
	if len(unsynced) > 0 {
		slices.Sort(unsynced)
		return fmt.Errorf("the caches did not sync: %s", strings.Join(unsynced, ", "))
	}
	return nil
}

// sharedCaches is what startInformers uses of lasso's shared cache factory.
type sharedCaches interface {
	Start(ctx context.Context) error
	WaitForCacheSync(ctx context.Context) map[schema.GroupVersionKind]bool
}

// isServed reports whether the API server serves resource gvr.
func isServed(served discovery.ServerResourcesInterface, gvr schema.GroupVersionResource) (bool, error) {
	list, err := served.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == gvr.Resource }), nil
}
