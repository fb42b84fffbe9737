// Package status is the one writer of FloatingIP and FloatingIPRange status. Every controller
// says what it decided as a mutation of the status; the writer applies it, derives what follows
// from it (a FloatingIP's Ready), skips a write that changes nothing, and settles a conflict the
// same way for both kinds.
//
// The conflict policy: a status write that meets a conflict reads the object afresh from the API
// server and applies the same mutation to it, for as long as retry.DefaultRetry lasts; a conflict
// still standing then is returned, and the caller's queue retries with its own backoff. The
// informer cache is not asked: it may lag the write that caused the conflict for as long as its
// watch does. A FloatingIP is read with a GET; a range with a LIST of its one name, since the
// chart's RBAC grants list, watch and update on FloatingIPRanges and no get. A mutation sets only
// the fields its caller owns, so that another writer's fields survive the retry.
package status

import (
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
)

// UpdateFloatingIP applies mutate to f's status, derives Ready from the conditions it then has
// (v1.SetReady), and writes the status when anything changed. It returns the object as written,
// or f when nothing needed writing or the write failed.
func UpdateFloatingIP(c kubefipcontrollers.FloatingIPController, f *v1.FloatingIP, mutate func(*v1.FloatingIPStatus)) (*v1.FloatingIP, error) {
	return updateFloatingIP(c, f, func(s *v1.FloatingIPStatus) {
		mutate(s)
		v1.SetReady(s)
	})
}

// MarkFloatingIPFailed shows on f that its handler failed for reason: Ready=False, so Stalled
// or Reconciling by the reason's class, whatever the other conditions say, and Allocated=False
// too while f holds no address yet. The next verdict of UpdateFloatingIP derives Ready again.
func MarkFloatingIPFailed(c kubefipcontrollers.FloatingIPController, f *v1.FloatingIP, reason, msg string) (*v1.FloatingIP, error) {
	return updateFloatingIP(c, f, func(s *v1.FloatingIPStatus) {
		if s.IPAddress == "" {
			v1.SetCondition(s, v1.Allocated, false, reason, msg)
		}
		v1.SetCondition(s, v1.Ready, false, reason, msg)
	})
}

func updateFloatingIP(c kubefipcontrollers.FloatingIPController, f *v1.FloatingIP, mutate func(*v1.FloatingIPStatus)) (*v1.FloatingIP, error) {
	return update(f, kind[*v1.FloatingIP, v1.FloatingIPStatus]{
		status: func(f *v1.FloatingIP) *v1.FloatingIPStatus { return &f.Status },
		mutate: mutate,
		write:  func(f *v1.FloatingIP) (*v1.FloatingIP, error) { return c.UpdateStatus(f) },
		fresh: func(f *v1.FloatingIP) (*v1.FloatingIP, error) {
			return c.Get(f.Namespace, f.Name, metav1.GetOptions{})
		},
	})
}

// UpdateRange applies mutate to r's status and writes it when anything changed. A range's Ready
// is the verdict its mutation sets with v1.SetCondition, which derives Reconciling and Stalled
// from it. It returns the object as written, or r when nothing needed writing or the write failed.
func UpdateRange(c kubefipcontrollers.FloatingIPRangeController, r *v1.FloatingIPRange, mutate func(*v1.FloatingIPRangeStatus)) (*v1.FloatingIPRange, error) {
	return update(r, kind[*v1.FloatingIPRange, v1.FloatingIPRangeStatus]{
		status: func(r *v1.FloatingIPRange) *v1.FloatingIPRangeStatus { return &r.Status },
		mutate: mutate,
		write:  func(r *v1.FloatingIPRange) (*v1.FloatingIPRange, error) { return c.UpdateStatus(r) },
		fresh: func(r *v1.FloatingIPRange) (*v1.FloatingIPRange, error) {
			list, err := c.List(metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", r.Name).String()})
			if err != nil {
				return nil, err
			}
			if len(list.Items) != 1 {
				return nil, apierrors.NewNotFound(v1.Resource("floatingipranges"), r.Name)
			}
			return &list.Items[0], nil
		},
	})
}

// object is what both kinds are: an API object that copies itself.
type object[T any] interface {
	metav1.Object
	DeepCopy() T
}

// kind is how the writer reaches one kind's status and its API.
type kind[T object[T], S any] struct {
	status func(T) *S
	mutate func(*S)
	write  func(T) (T, error)
	// fresh reads the object from the API server.
	fresh func(T) (T, error)
}

func update[T object[T], S any](obj T, k kind[T, S]) (T, error) {
	current, written := obj, obj
	var conflict error
	err := wait.ExponentialBackoff(retry.DefaultRetry, func() (bool, error) {
		if conflict != nil {
			fresh, err := k.fresh(current)
			switch {
			case err != nil:
				return false, err
			case fresh.GetUID() != current.GetUID():
				return false, conflict // another object under the name: its own handlers judge it
			case fresh.GetResourceVersion() == current.GetResourceVersion():
				return false, nil // nothing newer to write against yet
			}
			current = fresh
		}
		next := current.DeepCopy()
		k.mutate(k.status(next))
		if equality.Semantic.DeepEqual(k.status(current), k.status(next)) {
			written = current
			return true, nil
		}
		updated, err := k.write(next)
		if apierrors.IsConflict(err) {
			conflict = err
			return false, nil
		}
		if err != nil {
			return false, err
		}
		written = updated
		return true, nil
	})
	if wait.Interrupted(err) {
		err = conflict
	}
	if err != nil {
		return obj, err
	}
	return written, nil
}
