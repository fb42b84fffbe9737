package guest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The kube-vip ConfigMap kube-vip-cloud-provider reads, and the one key of it the operator owns.
const (
	KubevipConfigMap = "kubevip"
	GlobalCIDRKey    = "cidr-global"
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

// Connection says how a guest answered.
type Connection int

const (
	// Connected: the guest answered.
	Connected Connection = iota
	// Provisioning: Rancher answered Forbidden — the cluster is still being set up, not down.
	Provisioning
	// Unreachable: no answer, a timeout or an error from the proxy.
	Unreachable
)

// Check asks the guest for its version, the cheapest request any account may make.
func (c *Client) Check(ctx context.Context) (Connection, error) {
	_, err := c.Kube.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	switch {
	case err == nil:
		return Connected, nil
	case apierrors.IsForbidden(err):
		return Provisioning, err
	default:
		return Unreachable, err
	}
}

// CIDR renders addr as the single-address CIDR kube-vip-cloud-provider expects.
func CIDR(addr netip.Addr) string {
	return netip.PrefixFrom(addr, addr.BitLen()).String()
}

// ConfigMapResult says what EnsureConfigMap did.
type ConfigMapResult int

const (
	ConfigMapUnchanged ConfigMapResult = iota
	ConfigMapCreated
	ConfigMapUpdated
	// ConfigMapLeftAlone: it exists with another value and updateConfigMap is not "true".
	ConfigMapLeftAlone
)

// EnsureConfigMap makes namespace/kubevip carry cidr-global for addr: created when missing; when
// present, changed only if update is true. Only the operator's key is written, with a merge patch,
// so keys a person added survive.
func (c *Client) EnsureConfigMap(ctx context.Context, namespace string, addr netip.Addr, update bool) (ConfigMapResult, error) {
	want := CIDR(addr)
	cms := c.Kube.CoreV1().ConfigMaps(namespace)
	cm, err := cms.Get(ctx, KubevipConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: KubevipConfigMap, Namespace: namespace},
			Data:       map[string]string{GlobalCIDRKey: want},
		}, metav1.CreateOptions{})
		if err != nil {
			return ConfigMapUnchanged, fmt.Errorf("creating %s/%s: %w", namespace, KubevipConfigMap, err)
		}
		return ConfigMapCreated, nil
	}
	if err != nil {
		return ConfigMapUnchanged, fmt.Errorf("reading %s/%s: %w", namespace, KubevipConfigMap, err)
	}
	if cm.Data[GlobalCIDRKey] == want {
		return ConfigMapUnchanged, nil
	}
	if !update {
		return ConfigMapLeftAlone, nil
	}
	patch, err := json.Marshal(map[string]interface{}{"data": map[string]string{GlobalCIDRKey: want}})
	if err != nil {
		return ConfigMapUnchanged, err
	}
	if _, err := cms.Patch(ctx, KubevipConfigMap, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return ConfigMapUnchanged, fmt.Errorf("updating %s/%s: %w", namespace, KubevipConfigMap, err)
	}
	return ConfigMapUpdated, nil
}

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
)

// DisableHarvesterKubevip gives the Harvester cloud provider's kube-vip DaemonSet a node selector
// that matches no node, once. A kube-vip DaemonSet of anyone else is left alone.
func (c *Client) DisableHarvesterKubevip(ctx context.Context) (DaemonSetResult, error) {
	dss := c.Kube.AppsV1().DaemonSets(HarvesterDaemonSetNamespace)
	ds, err := dss.Get(ctx, HarvesterDaemonSetName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return DaemonSetAbsent, nil
	}
	if err != nil {
		return DaemonSetAbsent, fmt.Errorf("reading %s/%s: %w", HarvesterDaemonSetNamespace, HarvesterDaemonSetName, err)
	}
	if ds.Annotations[HarvesterReleaseAnnotation] != HarvesterReleaseName {
		return DaemonSetNotHarvesters, nil
	}
	if ds.Spec.Template.Spec.NodeSelector[DisabledNodeSelectorKey] == "true" {
		return DaemonSetAlreadyDisabled, nil
	}
	patch, err := json.Marshal(map[string]interface{}{"spec": map[string]interface{}{"template": map[string]interface{}{
		"spec": map[string]interface{}{"nodeSelector": map[string]string{DisabledNodeSelectorKey: "true"}},
	}}})
	if err != nil {
		return DaemonSetAbsent, err
	}
	if _, err := dss.Patch(ctx, HarvesterDaemonSetName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return DaemonSetAbsent, fmt.Errorf("patching %s/%s: %w", HarvesterDaemonSetNamespace, HarvesterDaemonSetName, err)
	}
	return DaemonSetDisabled, nil
}
