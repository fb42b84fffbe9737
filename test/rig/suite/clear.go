package suite

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
)

// Clear removes every FloatingIP, FloatingIPAllocation and FloatingIPRange from the control
// plane, with their finalizers taken off (no operator runs to act on them), and waits until they
// are gone: the next test on it starts with none. It fails t with what is left after 30s.
func (s *Suite) Clear(t testing.TB) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(s.Env.Config)
	if err != nil {
		t.Error(err)
		return
	}
	ctx := context.Background()
	// The holders before what they hold.
	kubefipResources := []string{"floatingips", "floatingipallocations", "floatingipranges"}
	unfinalize := []byte(`{"metadata":{"finalizers":null}}`)
	for _, resource := range kubefipResources {
		client := dyn.Resource(v1.SchemeGroupVersion.WithResource(resource))
		list, err := client.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Errorf("clearing the control plane: %v", err)
			return
		}
		for _, o := range list.Items {
			objects := client.Namespace(o.GetNamespace())
			var err error
			if len(o.GetFinalizers()) > 0 {
				_, err = objects.Patch(ctx, o.GetName(), types.MergePatchType, unfinalize, metav1.PatchOptions{})
			}
			if err == nil {
				err = objects.Delete(ctx, o.GetName(), metav1.DeleteOptions{})
			}
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("clearing %s %s/%s: %v", resource, o.GetNamespace(), o.GetName(), err)
			}
		}
	}
	var left []string
	err = rig.Until(30*time.Second, "the kubefip objects gone", nil, func() (bool, error) {
		left = left[:0]
		for _, resource := range kubefipResources {
			list, err := dyn.Resource(v1.SchemeGroupVersion.WithResource(resource)).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			for _, o := range list.Items {
				left = append(left, fmt.Sprintf("%s %s/%s", resource, o.GetNamespace(), o.GetName()))
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		t.Errorf("clearing the control plane: %v; left: %s", err, strings.Join(left, ", "))
	}
}
