package kubevipconfig

import (
	"bytes"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// The label that marks the one Secret the operator writes into a guest, its copy of the
// deployment's image pull Secret: a Secret of that name without it is someone else's, and never
// written over or deleted.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "kube-fip-operator"
)

// PullSecretResult says what EnsurePullSecret did.
type PullSecretResult string

const (
	PullSecretUnchanged PullSecretResult = "unchanged"
	PullSecretCreated   PullSecretResult = "created"
	PullSecretUpdated   PullSecretResult = "updated"
)

// EnsurePullSecret keeps namespace/name a kubernetes.io/dockerconfigjson Secret holding
// dockerConfig, labelled as the operator's: created when missing, updated when its data differs.
// A Secret of that name the operator did not write is refused, as is one of another type; neither
// is touched. The data is never part of an error.
func EnsurePullSecret(ctx context.Context, core corev1client.SecretsGetter, namespace, name string, dockerConfig []byte) (PullSecretResult, error) {
	secrets := core.Secrets(namespace)
	want := map[string][]byte{corev1.DockerConfigJsonKey: dockerConfig}
	cur, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{ManagedByLabel: ManagedByValue}},
			Type:       corev1.SecretTypeDockerConfigJson,
			Data:       want,
		}
		if _, err := secrets.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return "", fmt.Errorf("creating the image pull Secret %s/%s: %w", namespace, name, err)
		}
		return PullSecretCreated, nil
	case err != nil:
		return "", fmt.Errorf("reading the image pull Secret %s/%s: %w", namespace, name, err)
	}
	if cur.Labels[ManagedByLabel] != ManagedByValue || cur.Type != corev1.SecretTypeDockerConfigJson {
		return "", fmt.Errorf("the Secret %s/%s is not the operator's (no label %s=%s, or not of type %s): it is left as it is, "+
			"and the charts' pods would pull with it; delete or rename it", namespace, name, ManagedByLabel, ManagedByValue, corev1.SecretTypeDockerConfigJson)
	}
	if len(cur.Data) == 1 && bytes.Equal(cur.Data[corev1.DockerConfigJsonKey], dockerConfig) {
		return PullSecretUnchanged, nil
	}
	next := cur.DeepCopy()
	next.Data = want
	if _, err := secrets.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		return "", fmt.Errorf("updating the image pull Secret %s/%s: %w", namespace, name, err)
	}
	return PullSecretUpdated, nil
}

// RemovePullSecret deletes namespace/name when it is the operator's (labelled so), guarded by its
// UID, and reports whether it did.
func RemovePullSecret(ctx context.Context, core corev1client.SecretsGetter, namespace, name string) (bool, error) {
	secrets := core.Secrets(namespace)
	cur, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the image pull Secret %s/%s: %w", namespace, name, err)
	}
	if cur.Labels[ManagedByLabel] != ManagedByValue {
		return false, nil
	}
	err = secrets.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("deleting the image pull Secret %s/%s: %w", namespace, name, err)
	}
	return err == nil, nil
}
