package kubevipconfig

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// The Harvester cloud provider's kube-vip DaemonSet and the node selector that keeps it off every
// node, so that it does not fight our kube-vip over the address.
const (
	HarvesterDaemonSetNamespace = "kube-system"
	HarvesterDaemonSetName      = "kube-vip"
	HarvesterReleaseAnnotation  = "meta.helm.sh/release-name"
	HarvesterReleaseName        = "harvester-cloud-provider"
	DisabledNodeSelectorKey     = "node-role.kubernetes.io/harvester-kube-vip-disabled"
)

// DaemonSetResult says what DisableHarvesterKubevip did.
type DaemonSetResult int

const (
	// DaemonSetAbsent: there is no kube-system/kube-vip DaemonSet.
	DaemonSetAbsent DaemonSetResult = iota
	// DaemonSetNotHarvesters: there is one, but the Harvester cloud provider did not install it.
	DaemonSetNotHarvesters
	// DaemonSetAlreadyDisabled: it already carries the node selector.
	DaemonSetAlreadyDisabled
	// DaemonSetDisabled: the node selector was added now.
	DaemonSetDisabled
	// DaemonSetNotDisabled: it does not carry the node selector (RestoreHarvesterKubevip).
	DaemonSetNotDisabled
	// DaemonSetRestored: the node selector was removed now.
	DaemonSetRestored
)

// readHarvesterDaemonSet reads the Harvester cloud provider's kube-vip DaemonSet; nil, with what was
// found instead, when it is absent or not the Harvester release's.
func readHarvesterDaemonSet(ctx context.Context, dss appsv1client.DaemonSetInterface) (*appsv1.DaemonSet, DaemonSetResult, error) {
	ds, err := dss.Get(ctx, HarvesterDaemonSetName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, DaemonSetAbsent, nil
	}
	if err != nil {
		return nil, DaemonSetAbsent, fmt.Errorf("reading %s/%s: %w", HarvesterDaemonSetNamespace, HarvesterDaemonSetName, err)
	}
	if ds.Annotations[HarvesterReleaseAnnotation] != HarvesterReleaseName {
		return nil, DaemonSetNotHarvesters, nil
	}
	return ds, DaemonSetAbsent, nil
}

// DisableHarvesterKubevip gives the Harvester cloud provider's kube-vip DaemonSet a node selector
// that matches no node, once. A kube-vip DaemonSet of anyone else is left alone.
func DisableHarvesterKubevip(ctx context.Context, apps appsv1client.DaemonSetsGetter) (DaemonSetResult, error) {
	dss := apps.DaemonSets(HarvesterDaemonSetNamespace)
	ds, res, err := readHarvesterDaemonSet(ctx, dss)
	if ds == nil {
		return res, err
	}
	if ds.Spec.Template.Spec.NodeSelector[DisabledNodeSelectorKey] == "true" {
		return DaemonSetAlreadyDisabled, nil
	}
	patch := []byte(`{"spec":{"template":{"spec":{"nodeSelector":{"` + DisabledNodeSelectorKey + `":"true"}}}}}`)
	if _, err := dss.Patch(ctx, HarvesterDaemonSetName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return DaemonSetAbsent, fmt.Errorf("patching %s/%s: %w", HarvesterDaemonSetNamespace, HarvesterDaemonSetName, err)
	}
	return DaemonSetDisabled, nil
}

// RestoreHarvesterKubevip removes the node selector DisableHarvesterKubevip gave the Harvester
// cloud provider's kube-vip DaemonSet, and nothing else: the DaemonSet is as the Harvester cloud
// provider's chart made it again. A DaemonSet of anyone else, or one without the selector, is left
// alone.
func RestoreHarvesterKubevip(ctx context.Context, apps appsv1client.DaemonSetsGetter) (DaemonSetResult, error) {
	dss := apps.DaemonSets(HarvesterDaemonSetNamespace)
	ds, res, err := readHarvesterDaemonSet(ctx, dss)
	if ds == nil {
		return res, err
	}
	if _, ok := ds.Spec.Template.Spec.NodeSelector[DisabledNodeSelectorKey]; !ok {
		return DaemonSetNotDisabled, nil
	}
	// A JSON patch that tests the resourceVersion read: a DaemonSet changed meanwhile is left for
	// the next pass rather than patched blind.
	patch, err := json.Marshal([]map[string]interface{}{
		{"op": "test", "path": "/metadata/resourceVersion", "value": ds.ResourceVersion},
		{"op": "remove", "path": "/spec/template/spec/nodeSelector/" + jsonPointerEscape(DisabledNodeSelectorKey)},
	})
	if err != nil {
		return DaemonSetAbsent, err
	}
	if _, err := dss.Patch(ctx, HarvesterDaemonSetName, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		return DaemonSetAbsent, fmt.Errorf("patching %s/%s: %w", HarvesterDaemonSetNamespace, HarvesterDaemonSetName, err)
	}
	return DaemonSetRestored, nil
}

// jsonPointerEscape escapes a key for a JSON pointer (RFC 6901): "~" as "~0", "/" as "~1".
func jsonPointerEscape(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// HarvesterKubevip says whether the Harvester cloud provider's kube-vip can take over announcing.
type HarvesterKubevip int

const (
	// HarvesterKubevipServes: it carries no node selector of the operator's, the DaemonSet
	// controller has seen its spec, and a pod of it is ready.
	HarvesterKubevipServes HarvesterKubevip = iota
	// HarvesterKubevipStarting: it is there but not yet so; expected soon.
	HarvesterKubevipStarting
	// HarvesterKubevipAbsent: the guest has none (or kube-system/kube-vip is another release's).
	HarvesterKubevipAbsent
)

// ReadHarvesterKubevip reads whether the Harvester cloud provider's kube-vip DaemonSet can take
// over announcing the addresses, and, when it cannot, what it lacks. A pod counts only when it is
// ready and not being deleted: the DaemonSet's status counts a ready pod that is terminating (one
// the operator's node selector sent away, when the selector goes again before it has exited), and
// that pod is about to stop announcing.
func ReadHarvesterKubevip(ctx context.Context, apps appsv1client.DaemonSetsGetter, core corev1client.PodsGetter) (HarvesterKubevip, string, error) {
	where := HarvesterDaemonSetNamespace + "/" + HarvesterDaemonSetName
	ds, res, err := readHarvesterDaemonSet(ctx, apps.DaemonSets(HarvesterDaemonSetNamespace))
	switch {
	case err != nil:
		return HarvesterKubevipStarting, "", err
	case res == DaemonSetNotHarvesters:
		return HarvesterKubevipAbsent, fmt.Sprintf("the guest's DaemonSet %s is not the %s release's", where, HarvesterReleaseName), nil
	case ds == nil:
		return HarvesterKubevipAbsent, fmt.Sprintf("the guest has no DaemonSet %s of the %s release", where, HarvesterReleaseName), nil
	case ds.Spec.Template.Spec.NodeSelector[DisabledNodeSelectorKey] == "true":
		return HarvesterKubevipStarting, fmt.Sprintf("the Harvester cloud provider's kube-vip %s still carries the operator's node selector", where), nil
	case ds.Status.ObservedGeneration < ds.Generation:
		return HarvesterKubevipStarting, fmt.Sprintf("the Harvester cloud provider's kube-vip %s is being rolled out", where), nil
	case ds.Status.NumberReady == 0:
		return HarvesterKubevipStarting, fmt.Sprintf("none of the %d pods of the Harvester cloud provider's kube-vip %s is ready", ds.Status.DesiredNumberScheduled, where), nil
	}
	ready, err := readyPodOf(ctx, core.Pods(HarvesterDaemonSetNamespace), ds)
	switch {
	case err != nil:
		return HarvesterKubevipStarting, "", err
	case !ready:
		return HarvesterKubevipStarting, fmt.Sprintf("none of the pods of the Harvester cloud provider's kube-vip %s is ready and not being deleted", where), nil
	}
	return HarvesterKubevipServes, "", nil
}

// readyPodOf says whether one of the first MaxPods pods that ds selects, and owns, is ready and
// not being deleted.
func readyPodOf(ctx context.Context, pods corev1client.PodInterface, ds *appsv1.DaemonSet) (bool, error) {
	if ds.Spec.Selector == nil || len(ds.Spec.Selector.MatchLabels) == 0 {
		return false, nil
	}
	sel := metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: ds.Spec.Selector.MatchLabels})
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel, Limit: MaxPods})
	if err != nil {
		return false, fmt.Errorf("reading the pods of %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	for i := range min(len(list.Items), MaxPods) {
		p := &list.Items[i]
		owned := slices.ContainsFunc(p.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == ds.UID })
		if owned && p.DeletionTimestamp == nil && slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		}) {
			return true, nil
		}
	}
	return false, nil
}
