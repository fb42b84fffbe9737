package backup

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// BackupResourceSet does what a rancher-backup Backup naming set does, and writes an unencrypted
// backup into dir in rancher-backup's layout: filters/filters.json holds the ResourceSet, and each
// object is <resource>.<group>#<version>/[<namespace>/]<name>.json. Like the real collector it
// keeps the whole object, status and finalizers included, drops only the metadata the API server
// assigns (uid, creationTimestamp, deletionTimestamp, selfLink, resourceVersion,
// deletionGracePeriodSeconds), and skips objects being deleted that have no finalizer left. It
// returns the files written, relative to dir.
func BackupResourceSet(ctx context.Context, cfg *rest.Config, set ResourceSet, dir string) ([]string, error) {
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	filters, err := json.Marshal(set)
	if err != nil {
		return nil, err
	}
	if err := writeBackupFile(dir, filepath.Join("filters", "filters.json"), filters); err != nil {
		return nil, err
	}

	var written []string
	for _, sel := range set.ResourceSelectors {
		gv, err := schema.ParseGroupVersion(sel.APIVersion)
		if err != nil {
			return nil, err
		}
		resources, err := disc.ServerResourcesForGroupVersion(sel.APIVersion)
		if apierrors.IsNotFound(err) {
			continue // rancher-backup skips a group/version the cluster does not serve
		}
		if err != nil {
			return nil, fmt.Errorf("discovering %s: %w", sel.APIVersion, err)
		}
		matched, err := matchKinds(sel, resources.APIResources)
		if err != nil {
			return nil, err
		}
		for _, res := range matched {
			if strings.Contains(res.Name, "/") || !slices.Contains(res.Verbs, "list") {
				continue // subresources; the stand-in needs no get-only resources
			}
			objs, err := listSelected(ctx, dyn.Resource(gv.WithResource(res.Name)), sel)
			if err != nil {
				return nil, err
			}
			for _, obj := range objs {
				if !sel.SelectsObject(res, obj.GetNamespace(), obj.GetName()) {
					continue
				}
				file, err := writeBackupObject(dir, gv, res, obj)
				if err != nil {
					return nil, err
				}
				if file != "" {
					written = append(written, file)
				}
			}
		}
	}
	return written, nil
}

// Selects reports whether any selector of the set picks the object namespace/name (namespace
// empty for a cluster-scoped one) of resource res in group/version apiVersion, leaving label and
// field selectors aside: those only the API server applies.
func (set ResourceSet) Selects(apiVersion string, res metav1.APIResource, namespace, name string) (bool, error) {
	for _, sel := range set.ResourceSelectors {
		if sel.APIVersion != apiVersion {
			continue
		}
		kinds, err := matchKinds(sel, []metav1.APIResource{res})
		if err != nil {
			return false, err
		}
		if len(kinds) == 1 && sel.SelectsObject(res, namespace, name) {
			return true, nil
		}
	}
	return false, nil
}

// SelectsObject reports whether the selector's name and namespace rules pick the object
// namespace/name of res.
func (sel ResourceSelector) SelectsObject(res metav1.APIResource, namespace, name string) bool {
	return matchName(sel, name) && (!res.Namespaced || matchNamespace(sel, namespace))
}

// matchKinds: a resource whose Kind or plural name is listed in kinds, or matches kindsRegexp
// and is not excluded.
func matchKinds(sel ResourceSelector, resources []metav1.APIResource) ([]metav1.APIResource, error) {
	if sel.KindsRegexp == "" && len(sel.Kinds) == 0 {
		return resources, nil
	}
	var re *regexp.Regexp
	if sel.KindsRegexp != "" {
		var err error
		if re, err = regexp.Compile(sel.KindsRegexp); err != nil {
			return nil, fmt.Errorf("kindsRegexp %q: %w", sel.KindsRegexp, err)
		}
	}
	var out []metav1.APIResource
	for _, r := range resources {
		switch {
		case slices.Contains(sel.Kinds, r.Kind) || slices.Contains(sel.Kinds, r.Name):
			out = append(out, r)
		case re != nil && (sel.KindsRegexp == "." || re.MatchString(r.Kind) || re.MatchString(r.Name)) &&
			!slices.Contains(sel.ExcludeKinds, r.Kind) && !slices.Contains(sel.ExcludeKinds, r.Name):
			out = append(out, r)
		}
	}
	return out, nil
}

// listSelected lists every page of a resource, with the selector's label and field selectors
// applied by the API server.
func listSelected(ctx context.Context, client dynamic.ResourceInterface, sel ResourceSelector) ([]unstructured.Unstructured, error) {
	opts := metav1.ListOptions{Limit: 500}
	if sel.LabelSelectors != nil {
		s, err := metav1.LabelSelectorAsSelector(sel.LabelSelectors)
		if err != nil {
			return nil, err
		}
		opts.LabelSelector = s.String()
	}
	if sel.FieldSelectors != nil {
		opts.FieldSelector = fields.SelectorFromSet(sel.FieldSelectors).String()
	}
	var out []unstructured.Unstructured
	for {
		list, err := client.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, list.Items...)
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
}

// matchName: with no name rule every name; else a listed name, or one matching resourceNameRegexp
// (or any, when only an exclusion is given) and not excludeResourceNameRegexp. Invalid
// expressions match nothing here; the chart tests compile them.
func matchName(sel ResourceSelector, name string) bool {
	if len(sel.ResourceNames) == 0 && sel.ResourceNameRegexp == "" && sel.ExcludeResourceNameRegexp == "" {
		return true
	}
	if slices.Contains(sel.ResourceNames, name) {
		return true
	}
	if sel.ResourceNameRegexp == "" && sel.ExcludeResourceNameRegexp == "" {
		return false
	}
	if sel.ResourceNameRegexp != "" {
		re, err := regexp.Compile(sel.ResourceNameRegexp)
		if err != nil || !re.MatchString(name) {
			return false
		}
	}
	if sel.ExcludeResourceNameRegexp != "" {
		re, err := regexp.Compile(sel.ExcludeResourceNameRegexp)
		if err != nil || re.MatchString(name) {
			return false
		}
	}
	return true
}

// matchNamespace: with no namespace rule every namespace; else a listed one or one matching
// namespaceRegexp ("." being every namespace).
func matchNamespace(sel ResourceSelector, ns string) bool {
	if len(sel.Namespaces) == 0 && sel.NamespaceRegexp == "" {
		return true
	}
	if slices.Contains(sel.Namespaces, ns) || sel.NamespaceRegexp == "." {
		return true
	}
	if sel.NamespaceRegexp == "" {
		return false
	}
	re, err := regexp.Compile(sel.NamespaceRegexp)
	return err == nil && re.MatchString(ns)
}

// writeBackupObject writes one object as rancher-backup does and returns its file, or "" when the
// object is not backed up (being deleted with no finalizer left).
func writeBackupObject(dir string, gv schema.GroupVersion, res metav1.APIResource, obj unstructured.Unstructured) (string, error) {
	obj = *obj.DeepCopy()
	if obj.GetDeletionTimestamp() != nil && len(obj.GetFinalizers()) == 0 {
		return "", nil
	}
	meta, _ := obj.Object["metadata"].(map[string]interface{})
	for _, field := range []string{"uid", "creationTimestamp", "deletionTimestamp", "selfLink", "resourceVersion", "deletionGracePeriodSeconds"} {
		delete(meta, field)
	}
	file := filepath.Join(res.Name+"."+gv.Group+"#"+gv.Version, obj.GetNamespace(), obj.GetName()+".json")
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return "", err
	}
	return file, writeBackupFile(dir, file, data)
}

func writeBackupFile(dir, file string, data []byte) error {
	path := filepath.Join(dir, file)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}
