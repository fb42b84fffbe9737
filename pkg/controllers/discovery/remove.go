package discovery

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// remove deletes the FloatingIPs of a provisioning cluster that is being deleted (c carries a
// deletionTimestamp) or is gone (c is nil). The FloatingIP's finalizer releases the address;
// nothing here holds up the deletion of the cluster or of its namespace, since discovery never
// puts a finalizer on either.
//
// A gone cluster is known only by its key, so its FloatingIPs are found by the annotation
// discovery put on them. While the cluster still exists, any FloatingIP of its namespace annotated
// with its name goes too (one made by hand, or by the original operator): the namespace goes next.
func (h *handler) remove(key string, c *provv1.Cluster) error {
	h.forget(key)
	targets := map[string]*v1.FloatingIP{}
	add := func(index, value string) error {
		fips, err := h.fips.Cache().GetByIndex(index, value)
		for _, f := range fips {
			targets[f.Namespace+"/"+f.Name] = f
		}
		return err
	}
	err := add(fipByProvisioningCluster, key)
	if c != nil && c.Status.ClusterName != "" {
		err = errors.Join(err, add(fipByGuestCluster, c.Status.ClusterName+"/"+c.Name))
	}
	if err != nil {
		return err
	}

	names := slices.Sorted(maps.Keys(targets))
	var errs []error
	retention := h.store.Get().AddressRetention
	for _, name := range names {
		f := targets[name]
		if f.DeletionTimestamp != nil {
			continue
		}
		cluster, ours := v1.ProvisioningClusterOf(f)
		retains := ours && retention > 0 && cluster.Namespace+"/"+cluster.Name == key
		// The UID precondition deletes exactly the FloatingIP seen, never a newer one of that name.
		uid := f.UID
		err := h.fips.Delete(f.Namespace, f.Name, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		switch {
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			continue // gone already, or replaced by another object of that name
		case err != nil:
			errs = append(errs, fmt.Errorf("deleting FloatingIP %s of removed guest cluster %s: %w", name, key, err))
			continue
		}
		msg := "deleted FloatingIP " + name + " of the removed guest cluster"
		switch {
		case f.Status.IPAddress == "":
		case retains:
			// The FloatingIP's finalizer keeps it for the cluster's return (see floatingip).
			msg += fmt.Sprintf("; its finalizer retains %s for a cluster re-created as %s, for %s", f.Status.IPAddress, key, retention)
		default:
			msg += "; its finalizer releases " + f.Status.IPAddress
		}
		logrus.Infof("guest cluster %s: %s", key, msg)
		if c != nil {
			h.recorder.Event(c, v1.EventType(v1.ReasonFloatingIPDeleted), v1.ReasonFloatingIPDeleted, msg)
		}
	}
	return errors.Join(errs...)
}
