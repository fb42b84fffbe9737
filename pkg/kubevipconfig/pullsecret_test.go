package kubevipconfig

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestPullSecretRoundTrip: the operator's copy is created labelled as its own, updated only when
// the data changed, and removed again; a Secret of the same name it did not write is neither
// written over nor removed, and the refusal does not repeat its data.
func TestPullSecretRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kube := fake.NewSimpleClientset()
	first, second := []byte(`{"auths":{"r.example":{"auth":"UzNDUkVU"}}}`), []byte(`{"auths":{"r.example":{"auth":"TkVX"}}}`)
	for _, step := range []struct {
		data []byte
		want PullSecretResult
	}{{first, PullSecretCreated}, {first, PullSecretUnchanged}, {second, PullSecretUpdated}} {
		if res, err := EnsurePullSecret(ctx, kube.CoreV1(), "kube-system", "pull", step.data); err != nil || res != step.want {
			t.Fatalf("ensure = %v, %v; want %v", res, err, step.want)
		}
	}
	s, err := kube.CoreV1().Secrets("kube-system").Get(ctx, "pull", metav1.GetOptions{})
	if err != nil || s.Type != corev1.SecretTypeDockerConfigJson || s.Labels[ManagedByLabel] != ManagedByValue || string(s.Data[corev1.DockerConfigJsonKey]) != string(second) {
		t.Fatalf("the guest's Secret: %+v, %v", s, err)
	}
	if removed, err := RemovePullSecret(ctx, kube.CoreV1(), "kube-system", "pull"); err != nil || !removed {
		t.Fatalf("remove = %v, %v", removed, err)
	}
	if removed, err := RemovePullSecret(ctx, kube.CoreV1(), "kube-system", "pull"); err != nil || removed {
		t.Errorf("remove of nothing = %v, %v", removed, err)
	}

	theirs := fake.NewSimpleClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pull", Namespace: "kube-system"},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte("THEIRS")}})
	if _, err := EnsurePullSecret(ctx, theirs.CoreV1(), "kube-system", "pull", first); err == nil || !strings.Contains(err.Error(), "not the operator's") ||
		strings.Contains(err.Error(), "UzNDUkVU") || strings.Contains(err.Error(), "THEIRS") {
		t.Errorf("someone else's Secret: %v; want refused without the data", err)
	}
	if removed, err := RemovePullSecret(ctx, theirs.CoreV1(), "kube-system", "pull"); err != nil || removed {
		t.Errorf("remove of someone else's Secret = %v, %v", removed, err)
	}
	if s, _ := theirs.CoreV1().Secrets("kube-system").Get(ctx, "pull", metav1.GetOptions{}); string(s.Data[corev1.DockerConfigJsonKey]) != "THEIRS" {
		t.Error("someone else's Secret was changed")
	}
}
