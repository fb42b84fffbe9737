package helminstall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/resource"

	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/approve"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
)

// Helm's ownership metadata, which it gives every object of a release it applies: an object put
// back carries it as Helm's own upgrade would.
const (
	helmReleaseNameAnnotation      = "meta.helm.sh/release-name"
	helmReleaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
	helmManagedByLabel             = "app.kubernetes.io/managed-by"
	helmManagedByValue             = "Helm"
	// maxDriftPaths bounds the fields an object's drift names.
	maxDriftPaths = 4
)

// restore keeps the deployed revision last of rel as it is and puts back what of it the guest
// lost: each object of its manifest is read (one GET each, the manifest's objects being those the
// policy approved), and one that is missing is created, and one where a field the manifest sets is
// not as the manifest sets it is replaced by the live object with those fields set back. Fields
// the manifest does not set (defaults, others' annotations) are left as they are; a list it sets
// is set whole, so that an item added to it (a container's variable) goes too. Nothing is restored
// from a record whose manifest the operator did not apply (trusted holds the digests it did). It
// returns what it put back, each object with how it had departed.
func (in *Installer) restore(c *guest.Client, rel Release, records *boundedSecrets, last *release.Release, trusted []string, result Result) ([]string, error) {
	view := newTrustView(records, rel.Name, trusted)
	if last.Manifest == "" || !view.trusts(last) {
		return nil, nil
	}
	// The approval of this very manifest when Ensure made one, else the record's own.
	approval := result.Approval
	if approval == nil || approval.Digest != guestchart.Digest([]byte(last.Manifest)) {
		var err error
		if approval, err = approve.Recorded(rel.Plan.Chart, rel.Namespace, last.Manifest); err != nil {
			return nil, err
		}
	}
	cfg, err := in.configuration(c, rel.Namespace, view, approval)
	if err != nil {
		return nil, err
	}
	objects, err := cfg.KubeClient.Build(bytes.NewBufferString(last.Manifest), false)
	if err != nil {
		return nil, fmt.Errorf("reading revision %d of release %s/%s: %w", last.Version, rel.Namespace, rel.Name, err)
	}
	var restored []string
	for _, o := range objects {
		what, err := restoreObject(o, rel)
		if err != nil {
			return restored, fmt.Errorf("restoring %s %s of revision %d of release %s/%s: %w",
				o.Mapping.GroupVersionKind.Kind, objectName(o), last.Version, rel.Namespace, rel.Name, err)
		}
		if what != "" {
			restored = append(restored, fmt.Sprintf("%s %s %s", o.Mapping.GroupVersionKind.Kind, objectName(o), what))
		}
	}
	return restored, nil
}

// restoreObject makes o's live object what o sets, with Helm's ownership metadata of rel, and
// says how it had departed: "(missing)", "(changed: <fields>)", or "" when it had not.
func restoreObject(o *resource.Info, rel Release) (string, error) {
	// What the manifest sets: the object as the policy serialised it (approve's canonical form).
	want, err := toMap(o.Object)
	if err != nil {
		return "", err
	}
	delete(want, "status")
	owned(want, rel)
	helper := resource.NewHelper(o.Client, o.Mapping)
	live, err := helper.Get(o.Namespace, o.Name)
	switch {
	case apierrors.IsNotFound(err):
		obj, err := typed(o.Object, want)
		if err != nil {
			return "", err
		}
		if _, err := helper.Create(o.Namespace, false, obj); err != nil {
			return "", err
		}
		return "(missing)", nil
	case err != nil:
		return "", err
	}
	current, err := toMap(live)
	if err != nil {
		return "", err
	}
	var paths []string
	setBack(want, current, "", &paths)
	if len(paths) == 0 {
		return "", nil
	}
	obj, err := typed(o.Object, current)
	if err != nil {
		return "", err
	}
	// current keeps the live resourceVersion: a change made meanwhile is a conflict, and the
	// next pass looks again.
	if _, err := helper.Replace(o.Namespace, o.Name, false, obj); err != nil {
		return "", err
	}
	if len(paths) > maxDriftPaths {
		paths = append(paths[:maxDriftPaths], fmt.Sprintf("and %d more", len(paths)-maxDriftPaths))
	}
	return "(changed: " + strings.Join(paths, ", ") + ")", nil
}

// setBack sets in live every field want sets that live does not hold as want sets it, and adds
// the path of each to paths. A map want sets is held when each of its keys is; a list, when it has
// as many items and each is held; anything else, when it is equal. An empty map or list want sets
// is held by its absence, as the API server drops them.
func setBack(want, live map[string]interface{}, prefix string, paths *[]string) {
	for _, k := range slices.Sorted(maps.Keys(want)) {
		w, l := want[k], live[k]
		if wm, ok := w.(map[string]interface{}); ok {
			lm, ok := l.(map[string]interface{})
			switch {
			case ok:
				setBack(wm, lm, prefix+k+".", paths)
				continue
			case l == nil && len(wm) == 0:
				continue
			}
		} else if holds(w, l) {
			continue
		}
		live[k] = w
		*paths = append(*paths, prefix+k)
	}
}

// holds reports whether live holds the value want as setBack judges it.
func holds(want, live interface{}) bool {
	switch w := want.(type) {
	case map[string]interface{}:
		l, ok := live.(map[string]interface{})
		if !ok {
			return live == nil && len(w) == 0
		}
		for k, x := range w {
			if !holds(x, l[k]) {
				return false
			}
		}
		return true
	case []interface{}:
		l, ok := live.([]interface{})
		if !ok {
			return live == nil && len(w) == 0
		}
		if len(l) != len(w) {
			return false
		}
		for i := range w {
			if !holds(w[i], l[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(want, live)
}

// toMap is obj as JSON reads it, numbers kept as written and nulls dropped (as the policy's
// canonical form drops them): the form in which what a manifest sets and a live object are
// compared.
func toMap(obj runtime.Object) (map[string]interface{}, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var out map[string]interface{}
	if err := d.Decode(&out); err != nil {
		return nil, err
	}
	approve.Prune(out)
	return out, nil
}

// typed is content in the form of like, the object the REST client encodes.
func typed(like runtime.Object, content map[string]interface{}) (runtime.Object, error) {
	if u, ok := like.(runtime.Unstructured); ok {
		out := u.NewEmptyInstance()
		out.SetUnstructuredContent(runtime.DeepCopyJSON(content))
		return out, nil
	}
	data, err := json.Marshal(content)
	if err != nil {
		return nil, err
	}
	out := reflect.New(reflect.TypeOf(like).Elem()).Interface().(runtime.Object)
	return out, json.Unmarshal(data, out)
}

// owned gives want, an object of rel's manifest, the ownership metadata Helm gives every object of
// a release it applies.
func owned(want map[string]interface{}, rel Release) {
	u := unstructured.Unstructured{Object: want}
	annotations := u.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[helmReleaseNameAnnotation], annotations[helmReleaseNamespaceAnnotation] = rel.Name, rel.Namespace
	u.SetAnnotations(annotations)
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[helmManagedByLabel] = helmManagedByValue
	u.SetLabels(labels)
}

// objectName is o's namespace/name, or its name when it has no namespace.
func objectName(o *resource.Info) string {
	if o.Namespace == "" {
		return o.Name
	}
	return o.Namespace + "/" + o.Name
}
