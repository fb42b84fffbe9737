package backup

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kubefip/kube-fip-operator/test/rig"
)

// BackupObject is one object of a backup, as its file holds it.
type BackupObject struct {
	// File is the object's path in the backup.
	File string
	GVR  schema.GroupVersionResource
	// Namespace is empty for a cluster-scoped object.
	Namespace, Name string
	Object          *unstructured.Unstructured
}

var crdGVR = apiextv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

// ReadBackup reads the objects of a backup written in rancher-backup's layout, in file order.
func ReadBackup(dir string) ([]BackupObject, error) {
	var out []BackupObject
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if parts[0] == "filters" {
			return nil
		}
		// parts[0] is <resource>.<group>#<version>: plural names have no dot, groups may have many.
		resourceGroup, version, ok := strings.Cut(parts[0], "#")
		if !ok || len(parts) < 2 || len(parts) > 3 {
			return fmt.Errorf("backup file %s is not <resource>.<group>#<version>/[<namespace>/]<name>.json", rel)
		}
		resource, group, _ := strings.Cut(resourceGroup, ".")
		o := BackupObject{File: rel, GVR: schema.GroupVersionResource{Group: group, Version: version, Resource: resource}}
		o.Name = strings.TrimSuffix(parts[len(parts)-1], ".json")
		if len(parts) == 3 {
			o.Namespace = parts[1]
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		o.Object = &unstructured.Unstructured{}
		if err := json.Unmarshal(data, &o.Object.Object); err != nil {
			return fmt.Errorf("backup file %s: %w", rel, err)
		}
		out = append(out, o)
		return nil
	})
	return out, err
}

// RestoreOptions are the parts of a restore a test chooses.
type RestoreOptions struct {
	// Keep, when set, limits the restore to the objects it accepts.
	Keep func(BackupObject) bool
	// ScaledDown, when set, runs once the ResourceSet's controllerReferences are scaled to 0 and
	// before anything is written: it plays the cluster's part, the pods of those workloads
	// stopping.
	ScaledDown func(ctx context.Context) error
}

// RestoreBackup does what a rancher-backup Restore of the backup in dir does, with prune off,
// writing with cfg (rancher-backup writes as its own ServiceAccount: ServiceAccountConfig). It
// scales every workload the backup's ResourceSet names in controllerReferences to 0 replicas,
// remembering each count (one that is missing is skipped), as rancher-backup does before it
// writes, without waiting for the pods; then it restores: first the CRDs, each waited for until
// Established; then the cluster-scoped objects; then the namespaced ones. Each object is created,
// or updated over the live one; its status is then written through the status subresource, but
// only when the object's CRD is itself in the backup and has that subresource, as rancher-backup
// decides. Last, also when a write failed, each workload is scaled back to its count. The
// stand-in refuses objects with ownerReferences, which the real restore re-points at the restored
// owners.
func RestoreBackup(ctx context.Context, cfg *rest.Config, dir string, opts RestoreOptions) (err error) {
	keep := opts.Keep
	objs, err := ReadBackup(dir)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	set, err := readFilters(dir)
	if err != nil {
		return err
	}
	scaled, err := scaleDown(ctx, dyn, set.ControllerReferences)
	defer func() {
		if upErr := scaleUp(context.WithoutCancel(ctx), dyn, scaled); err == nil {
			err = upErr
		}
	}()
	if err != nil {
		return err
	}
	if opts.ScaledDown != nil {
		if err := opts.ScaledDown(ctx); err != nil {
			return err
		}
	}
	var crds, clusterScoped, namespaced []BackupObject
	withStatus := map[string]bool{}
	for _, o := range objs {
		if o.GVR == crdGVR {
			// Every CRD of the backup says which resources get their status back, kept or not.
			for _, v := range statusVersions(o.Object) {
				withStatus[v] = true
			}
		}
		if keep != nil && !keep(o) {
			continue
		}
		if len(o.Object.GetOwnerReferences()) > 0 {
			return fmt.Errorf("backup file %s: the stand-in restore does not re-point ownerReferences", o.File)
		}
		switch {
		case o.GVR == crdGVR:
			crds = append(crds, o)
		case o.Namespace == "":
			clusterScoped = append(clusterScoped, o)
		default:
			namespaced = append(namespaced, o)
		}
	}
	for _, o := range crds {
		if err := restoreObject(ctx, dyn, o, false); err != nil {
			return err
		}
		if err := waitEstablished(ctx, dyn, o.Name); err != nil {
			return err
		}
	}
	for _, group := range [][]BackupObject{clusterScoped, namespaced} {
		for _, o := range group {
			key := o.GVR.Resource + "." + o.GVR.GroupVersion().String()
			if err := restoreObject(ctx, dyn, o, withStatus[key]); err != nil {
				return err
			}
		}
	}
	return nil
}

// statusVersions returns "<crd name>/<version>" for every version of a backed-up CRD with a status
// subresource, e.g. "floatingips.kubefip.k8s.binbash.org/v1".
func statusVersions(obj *unstructured.Unstructured) []string {
	versions, _, _ := unstructured.NestedSlice(obj.Object, "spec", "versions")
	var out []string
	for _, v := range versions {
		m, _ := v.(map[string]interface{})
		if _, ok, _ := unstructured.NestedMap(m, "subresources", "status"); ok {
			out = append(out, fmt.Sprintf("%s/%v", obj.GetName(), m["name"]))
		}
	}
	sort.Strings(out)
	return out
}

func restoreObject(ctx context.Context, dyn dynamic.Interface, o BackupObject, status bool) error {
	client := dyn.Resource(o.GVR).Namespace(o.Namespace)
	obj := o.Object.DeepCopy()
	live, err := client.Get(ctx, o.Name, metav1.GetOptions{})
	var written *unstructured.Unstructured
	switch {
	case apierrors.IsNotFound(err):
		written, err = client.Create(ctx, obj, metav1.CreateOptions{})
	case err == nil:
		obj.SetResourceVersion(live.GetResourceVersion())
		written, err = client.Update(ctx, obj, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("restoring %s: %w", o.File, err)
	}
	if s, ok := o.Object.Object["status"]; ok && status && s != nil {
		written.Object["status"] = runtime.DeepCopyJSONValue(s)
		if _, err := client.UpdateStatus(ctx, written, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("restoring the status of %s: %w", o.File, err)
		}
	}
	return nil
}

func waitEstablished(ctx context.Context, dyn dynamic.Interface, name string) error {
	return rig.Until(time.Minute, fmt.Sprintf("CRD %s Established", name), ctx.Err, func() (bool, error) {
		u, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		var def apiextv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &def); err != nil {
			return false, err
		}
		for _, c := range def.Status.Conditions {
			if c.Type == apiextv1.Established && c.Status == apiextv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}
