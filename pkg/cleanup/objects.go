package cleanup

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
)

// cleanKind releases or deletes every object of one kind, in every namespace.
func cleanKind(ctx context.Context, dyn dynamic.Interface, k kind, mode Mode, res *Result) error {
	if k.finalizer == "" && mode == ModeKeep {
		return nil // nothing of the operator's on it to remove
	}
	list, err := dyn.Resource(k.resource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing %s: %w", k.resource.Resource, err)
	}
	for i := range list.Items {
		obj := &list.Items[i]
		client := dyn.Resource(k.resource).Namespace(obj.GetNamespace())
		what := describe(k, obj)
		if mode == ModeDelete {
			uid := obj.GetUID()
			err := client.Delete(ctx, obj.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			switch {
			case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
				// Gone already, or replaced by a newer object of the same name after the list.
				continue
			case err != nil:
				return fmt.Errorf("deleting %s: %w", what, err)
			}
			res.Deleted++
			logrus.Infof("deleted %s", what)
			if k.finalizer == "" {
				continue
			}
		}
		start := obj
		if mode == ModeDelete {
			start = nil // the delete changed it: read it again
		}
		left, removed, err := removeFinalizer(ctx, client, obj.GetName(), start, k.finalizer)
		if err != nil {
			return fmt.Errorf("removing finalizer %s from %s: %w", k.finalizer, what, err)
		}
		if removed {
			res.Released++
			if mode == ModeKeep {
				logrus.Infof("released %s: kept for a reinstall, without the operator's finalizer", what)
			}
		}
		if mode == ModeDelete && len(left) > 0 {
			res.Blocked = append(res.Blocked, what)
		}
	}
	return nil
}

// removeFinalizer takes finalizer off the object called name, starting from start when given and
// reading the object again otherwise and after a conflict. It returns the finalizers left and
// whether it removed one. An object that is gone has none left.
func removeFinalizer(ctx context.Context, client dynamic.ResourceInterface, name string, start *unstructured.Unstructured, finalizer string) ([]string, bool, error) {
	var left []string
	removed := false
	current := start
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if current == nil {
			got, err := client.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			current = got
		}
		keep := slices.DeleteFunc(slices.Clone(current.GetFinalizers()), func(f string) bool { return f == finalizer })
		left = keep
		if len(keep) == len(current.GetFinalizers()) {
			return nil
		}
		obj := current.DeepCopy()
		obj.SetFinalizers(keep)
		current = nil // read again should this write conflict
		updated, err := client.Update(ctx, obj, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		removed, left = true, updated.GetFinalizers()
		return nil
	})
	if apierrors.IsNotFound(err) {
		return nil, removed, nil
	}
	return left, removed, err
}

// describe names an object for a person: "FloatingIP c-m-abc/demo-kubevip (10.0.0.5)".
func describe(k kind, obj *unstructured.Unstructured) string {
	name := cache.MetaObjectToName(obj).String()
	kindName := cmp.Or(obj.GetKind(), k.resource.Resource)
	if addr, _, _ := unstructured.NestedString(obj.Object, "status", "ipaddress"); addr != "" {
		return fmt.Sprintf("%s %s (%s)", kindName, name, addr)
	}
	return kindName + " " + name
}
