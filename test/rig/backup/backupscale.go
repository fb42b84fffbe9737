package backup

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// readFilters reads the ResourceSet a backup was taken with (filters/filters.json), whose
// controllerReferences a restore scales down.
func readFilters(dir string) (ResourceSet, error) {
	var set ResourceSet
	data, err := os.ReadFile(filepath.Join(dir, "filters", "filters.json"))
	if err != nil {
		return set, fmt.Errorf("reading the backup's ResourceSet: %w", err)
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return set, fmt.Errorf("backup file filters/filters.json: %w", err)
	}
	return set, nil
}

// controllerClient is the client of the workload ref names.
func controllerClient(dyn dynamic.Interface, ref ControllerReference) (dynamic.ResourceInterface, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("controllerReference %s: %w", ref.Name, err)
	}
	client := dyn.Resource(gv.WithResource(ref.Resource))
	if ref.Namespace != "" {
		return client.Namespace(ref.Namespace), nil
	}
	return client, nil
}

// scaleDown sets spec.replicas of each workload refs name to 0, as rancher-backup's restore does
// (pkg/controllers/restore/pause.go), and returns the references it scaled, each with the count it
// had. A workload that does not exist is skipped.
func scaleDown(ctx context.Context, dyn dynamic.Interface, refs []ControllerReference) ([]ControllerReference, error) {
	var scaled []ControllerReference
	for _, ref := range refs {
		client, err := controllerClient(dyn, ref)
		if err != nil {
			return scaled, err
		}
		obj, err := client.Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return scaled, fmt.Errorf("reading controllerReference %s/%s: %w", ref.Namespace, ref.Name, err)
		}
		replicas, found, err := unstructured.NestedInt64(obj.Object, "spec", "replicas")
		if err != nil || !found {
			continue // rancher-backup skips a workload without spec.replicas
		}
		ref.Replicas = int32(replicas)
		if err := unstructured.SetNestedField(obj.Object, int64(0), "spec", "replicas"); err != nil {
			return scaled, err
		}
		if _, err := client.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
			return scaled, fmt.Errorf("scaling down %s/%s: %w", ref.Namespace, ref.Name, err)
		}
		scaled = append(scaled, ref)
	}
	return scaled, nil
}

// scaleUp sets each workload scaleDown scaled back to the count it had.
func scaleUp(ctx context.Context, dyn dynamic.Interface, scaled []ControllerReference) error {
	for _, ref := range scaled {
		client, err := controllerClient(dyn, ref)
		if err != nil {
			return err
		}
		obj, err := client.Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading controllerReference %s/%s: %w", ref.Namespace, ref.Name, err)
		}
		if err := unstructured.SetNestedField(obj.Object, int64(ref.Replicas), "spec", "replicas"); err != nil {
			return err
		}
		if _, err := client.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("scaling %s/%s back to %d: %w", ref.Namespace, ref.Name, ref.Replicas, err)
		}
	}
	return nil
}
