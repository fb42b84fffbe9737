package discovery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/harvester"
	"github.com/kubefip/kube-fip-operator/pkg/problem"
)

// credentialTimeout bounds one read of a cloud credential, so that a slow API server holds a
// worker for seconds, not forever.
const credentialTimeout = 15 * time.Second

// credentialReuse is how long the Harvester cluster id read from a cloud credential serves the
// other clusters of that credential. Clusters are created in batches with one credential (the
// Harvester cluster they run on); sharing the read saves the API server a GET per cluster, a
// third of discovery's requests in a backlog. Credentials are not watched, so a change to one
// was only ever seen by the clusters that passed after it: a few seconds more change nothing.
// Only the Harvester cluster id is kept, never the Secret: it holds a kubeconfig.
const credentialReuse = 5 * time.Second

// harvesterCluster follows the pool's cloud credential to the Harvester cluster's management
// cluster and returns its display name, the name ranges are annotated with.
func (h *handler) harvesterCluster(key string, cp harvester.ControlPlane) (string, error) {
	clusterNamespace, _ := splitKey(key)
	ns, name, p := harvester.ParseCredentialRef(cp.Credential, clusterNamespace, h.globalDataNamespace)
	if p != nil {
		return "", p
	}
	credential := ns + "/" + name
	id, err := h.credentialIDs.Get(credential, func() (string, error) {
		ctx, cancel := context.WithTimeout(h.ctx, credentialTimeout)
		defer cancel()
		secret, err := h.secrets.Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		id, p := harvester.ClusterID(secret.Data)
		if p != nil {
			return "", p.In("cloud credential " + credential)
		}
		return id, nil
	})
	switch {
	case apierrors.IsNotFound(err):
		h.retryCredential(key)
		return "", waitFor("cloud credential %s", credential)
	case errors.As(err, &p):
		h.retryCredential(key)
		return "", p
	case err != nil:
		return "", fmt.Errorf("reading cloud credential %s: %w", credential, err)
	}
	h.credentials.forget(key)

	h.waiters.add(key, managementDep(id))
	mc, err := h.mgmt.Cache().Get(id)
	switch {
	case apierrors.IsNotFound(err):
		return "", waitFor("Harvester management cluster %s (from cloud credential %s)", id, credential)
	case err != nil:
		return "", err
	}
	display := strings.TrimSpace(mc.Spec.DisplayName)
	if display == "" {
		return "", problem.New(v1.ReasonInvalidHarvesterCluster,
			"Harvester management cluster %s (from cloud credential %s) has no spec.displayName to match ranges by", id, credential)
	}
	return display, nil
}

// retryCredential brings the cluster key back to read its credential again: nothing else would
// tell discovery that a credential arrived or was fixed.
func (h *handler) retryCredential(key string) {
	ns, name := splitKey(key)
	h.prov.EnqueueAfter(ns, name, h.credentials.next(key))
}

// network reads the VM network from the control-plane pool's HarvesterConfig.
func (h *handler) network(cp harvester.ControlPlane) (harvester.Choice, error) {
	ref := "HarvesterConfig " + cp.ConfigNamespace + "/" + cp.ConfigName
	if cp.ConfigNamespace != h.fleetNamespace {
		return harvester.Choice{}, problem.New(v1.ReasonNoMachineConfigRef,
			"control-plane machine pool %s names %s outside %s, where Rancher keeps machine configurations", cp.Pool, ref, h.fleetNamespace)
	}
	obj, err := h.machineConfigs.ByNamespace(cp.ConfigNamespace).Get(cp.ConfigName)
	switch {
	case apierrors.IsNotFound(err):
		return harvester.Choice{}, waitFor("%s", ref)
	case err != nil:
		return harvester.Choice{}, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return harvester.Choice{}, fmt.Errorf("%s: unexpected %T in the cache", ref, obj)
	}
	choice, p := harvester.NetworkOf(u.Object)
	if p != nil {
		return harvester.Choice{}, p.In(ref)
	}
	choice.Note = choice.Note.In(ref)
	return choice, nil
}
