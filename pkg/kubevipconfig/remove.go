package kubevipconfig

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// RemoveAddresses takes out of the ConfigMap ref what the operator wrote there and nothing else,
// in one merge patch that carries the resourceVersion it was decided on: cidr-global when every
// address it holds is one of ours (the guest's FloatingIPs'), every cidr-<namespace> key the
// owned-keys annotation lists, and the annotation. Keys a person wrote stay, and so does the
// ConfigMap. It reports the keys removed; none when the ConfigMap is not there.
func RemoveAddresses(ctx context.Context, core corev1client.ConfigMapsGetter, ref ConfigMapRef, ours []netip.Addr) ([]string, error) {
	cms := core.ConfigMaps(ref.Namespace)
	cm, err := cms.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", ref, err)
	}
	data := map[string]interface{}{}
	var removed []string
	if value, ok := cm.Data[GlobalCIDRKey]; ok && onlyOurs(value, ours) {
		data[GlobalCIDRKey] = nil
		removed = append(removed, GlobalCIDRKey)
	}
	for _, key := range ParseOwnedKeys(cm.Annotations[OwnedKeysAnnotation]) {
		if _, ok := cm.Data[key]; ok {
			data[key] = nil
			removed = append(removed, key)
		}
	}
	meta := map[string]interface{}{"resourceVersion": cm.ResourceVersion}
	if _, ok := cm.Annotations[OwnedKeysAnnotation]; ok {
		meta["annotations"] = map[string]interface{}{OwnedKeysAnnotation: nil}
	}
	if len(data) == 0 && len(meta) == 1 {
		return nil, nil
	}
	body, err := json.Marshal(map[string]interface{}{"metadata": meta, "data": data})
	if err != nil {
		return nil, err
	}
	if _, err := cms.Patch(ctx, ref.Name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		return nil, fmt.Errorf("updating %s: %w", ref, err)
	}
	slices.Sort(removed)
	return removed, nil
}

// onlyOurs reports whether every part of a cidr value is the single-address CIDR of one of ours.
func onlyOurs(value string, ours []netip.Addr) bool {
	if strings.TrimSpace(value) == "" {
		return false
	}
	for _, part := range strings.Split(value, ",") {
		p, err := netip.ParsePrefix(strings.TrimSpace(part))
		if err != nil || p.Bits() != p.Addr().BitLen() || !slices.Contains(ours, p.Addr()) {
			return false
		}
	}
	return true
}
