package guest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The ConfigMap kube-vip-cloud-provider reads when its Deployment names none, and its global
// pool's key, which the operator writes (see also addresses.go).
const (
	KubevipConfigMapNamespace = "kube-system"
	KubevipConfigMap          = "kubevip"
	GlobalCIDRKey             = "cidr-global"
)

// ConfigMapRef names the ConfigMap the operator writes the address into.
type ConfigMapRef struct {
	Namespace string
	Name      string
}

func (r ConfigMapRef) String() string { return r.Namespace + "/" + r.Name }

// DefaultConfigMap is kube-system/kubevip: where a provider without KUBEVIP_NAMESPACE and
// KUBEVIP_CONFIG_MAP reads, and where the original operator always wrote.
func DefaultConfigMap() ConfigMapRef {
	return ConfigMapRef{Namespace: KubevipConfigMapNamespace, Name: KubevipConfigMap}
}

// The Harvester cloud provider's kube-vip DaemonSet and the node selector that keeps it off every
// node, so that it does not fight our kube-vip over the address.
const (
	HarvesterDaemonSetNamespace = "kube-system"
	HarvesterDaemonSetName      = "kube-vip"
	HarvesterReleaseAnnotation  = "meta.helm.sh/release-name"
	HarvesterReleaseName        = "harvester-cloud-provider"
	DisabledNodeSelectorKey     = "node-role.kubernetes.io/harvester-kube-vip-disabled"
)

// Connection says how a guest answered the probe.
type Connection int

const (
	// Connected: the guest answered and the token may act as the cluster's owner.
	Connected Connection = iota
	// Provisioning: Rancher answered 503 ClusterUnavailable — it has not provisioned the cluster
	// yet, so it is not down.
	Provisioning
	// Unreachable: Rancher answered 500 (the agent's tunnel or the dialer failed), or nothing
	// answered in time.
	Unreachable
	// Unauthorized: Rancher refused the kubeconfig's token (401).
	Unauthorized
	// Forbidden: the guest refused the token's Rancher user (403): it lacks the cluster-owner role.
	Forbidden
)

// ProbeNamespace is where the probe lists ConfigMaps: something only the cluster's owner may do.
// GET /version would not do: every authenticated user may read it.
const ProbeNamespace = "kube-system"

// Check lists one ConfigMap in kube-system through the proxy and says what the answer means.
func (c *Client) Check(ctx context.Context) (Connection, error) {
	_, err := c.Core.ConfigMaps(ProbeNamespace).List(ctx, metav1.ListOptions{Limit: 1})
	switch {
	case err == nil:
		return Connected, nil
	case apierrors.IsServiceUnavailable(err):
		return Provisioning, err
	case apierrors.IsUnauthorized(err):
		return Unauthorized, err
	case apierrors.IsForbidden(err):
		return Forbidden, err
	default:
		return Unreachable, err
	}
}

// CIDR renders addr as the single-address CIDR kube-vip-cloud-provider expects.
func CIDR(addr netip.Addr) string {
	return netip.PrefixFrom(addr, addr.BitLen()).String()
}

// ConfigMapResult says what EnsureAddresses did.
type ConfigMapResult int

const (
	ConfigMapUnchanged ConfigMapResult = iota
	ConfigMapCreated
	ConfigMapUpdated
	// ConfigMapLeftAlone: it exists with another value and updateConfigMap is not "true", or
	// (EnsureAddresses) a key the operator wants holds a person's value.
	ConfigMapLeftAlone
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
)

// DisableHarvesterKubevip gives the Harvester cloud provider's kube-vip DaemonSet a node selector
// that matches no node, once. A kube-vip DaemonSet of anyone else is left alone.
func (c *Client) DisableHarvesterKubevip(ctx context.Context) (DaemonSetResult, error) {
	dss := c.Apps.DaemonSets(HarvesterDaemonSetNamespace)
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
