package harvester

import (
	"cmp"
	"strings"

	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/problem"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// MachineConfigKind is the kind of the Harvester node driver's machine configuration
// (rke-machine-config.cattle.io/v1).
const MachineConfigKind = "HarvesterConfig"

// ClusterIDKey is the key of a Harvester cloud credential holding the Harvester cluster's Rancher
// management cluster id (c-m-xxxxxxxx).
const ClusterIDKey = "harvestercredentialConfig-clusterId"

// ControlPlane is what discovery needs of a guest cluster's control-plane machine pool: kube-vip
// floats the address between the control-plane nodes, so their network and Harvester cluster decide.
type ControlPlane struct {
	// Pool is the machine pool's name.
	Pool string
	// ConfigNamespace and ConfigName name the pool's HarvesterConfig.
	ConfigNamespace, ConfigName string
	// Credential is the cloud credential reference in force for the pool: its own, else the
	// cluster's ("cattle-global-data:cc-xxxxx").
	Credential string
}

// ControlPlaneOf finds the control-plane pool of a cluster provisioned by Rancher with the
// Harvester node driver. ok is false, with no problem, for every cluster discovery has nothing to do
// with: imported and custom clusters (no machine pools) and clusters of other node drivers. The first
// control-plane pool in the cluster's order is used, so the answer never depends on map order.
func ControlPlaneOf(c *provv1.Cluster) (cp ControlPlane, ok bool, p *problem.Problem) {
	if c.Spec.RKEConfig == nil || len(c.Spec.RKEConfig.MachinePools) == 0 {
		return ControlPlane{}, false, nil
	}
	pools := c.Spec.RKEConfig.MachinePools
	onHarvester := false
	var pool *provv1.RKEMachinePool
	for i := range pools {
		if ref := pools[i].NodeConfig; ref != nil && ref.Kind == MachineConfigKind {
			onHarvester = true
		}
		if pool == nil && pools[i].ControlPlaneRole {
			pool = &pools[i]
		}
	}
	switch {
	case pool == nil && onHarvester:
		return ControlPlane{}, false, problem.New(v1.ReasonNoControlPlanePool,
			"no machine pool has controlPlaneRole: true, so there is no network to take the floating IP from")
	case pool == nil:
		return ControlPlane{}, false, nil
	case pool.NodeConfig == nil || pool.NodeConfig.Name == "":
		return ControlPlane{}, false, problem.New(v1.ReasonNoMachineConfigRef,
			"control-plane machine pool %s has no machineConfigRef naming its %s", redact.Quote(pool.Name, MaxQuoted), MachineConfigKind)
	case pool.NodeConfig.Kind != MachineConfigKind:
		return ControlPlane{}, false, nil
	}
	cp = ControlPlane{
		Pool:            pool.Name,
		ConfigNamespace: cmp.Or(pool.NodeConfig.Namespace, c.Namespace),
		ConfigName:      pool.NodeConfig.Name,
		Credential:      cmp.Or(strings.TrimSpace(pool.CloudCredentialSecretName), strings.TrimSpace(c.Spec.CloudCredentialSecretName)),
	}
	if cp.Credential == "" {
		return ControlPlane{}, false, problem.New(v1.ReasonNoCloudCredential,
			"neither control-plane machine pool %s nor the cluster names a cloudCredentialSecretName", redact.Quote(pool.Name, MaxQuoted))
	}
	return cp, true, nil
}

// ParseCredentialRef resolves a credential reference as Rancher does (rancher/rancher
// pkg/controllers/capr/machineprovision GetCloudCredentialSecret): "<globalNamespace>:<name>" is
// the Secret <name> in globalNamespace (cattle-global-data); anything else is a Secret of that very
// name in the cluster's own namespace, so a bare name is found there and another "ns:" prefix never.
func ParseCredentialRef(ref, clusterNamespace, globalNamespace string) (namespace, name string, p *problem.Problem) {
	ref = strings.TrimSpace(ref)
	namespace, name = clusterNamespace, ref
	if prefix, rest, ok := strings.Cut(ref, ":"); ok {
		if prefix != globalNamespace {
			return "", "", problem.New(v1.ReasonInvalidCloudCredential,
				"cloudCredentialSecretName %s names a namespace other than %s, which Rancher does not read credentials from", redact.Quote(ref, MaxQuoted), globalNamespace)
		}
		namespace, name = prefix, rest
	}
	if len(validation.IsDNS1123Label(namespace)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return "", "", problem.New(v1.ReasonInvalidCloudCredential,
			"cloudCredentialSecretName %s is neither %s:<name> nor a Secret name in the cluster's namespace", redact.Quote(ref, MaxQuoted), globalNamespace)
	}
	return namespace, name, nil
}

// ClusterID reads the Harvester cluster's management cluster id from a cloud credential's data.
// The messages name the key, never a value: the same Secret holds the Harvester kubeconfig.
func ClusterID(data map[string][]byte) (string, *problem.Problem) {
	raw, ok := data[ClusterIDKey]
	if !ok {
		return "", problem.New(v1.ReasonInvalidCloudCredential, "has no %s key: it is not a Harvester cloud credential", ClusterIDKey)
	}
	id := strings.TrimSpace(string(raw))
	if id == "" {
		return "", problem.New(v1.ReasonInvalidCloudCredential, "key %s is empty", ClusterIDKey)
	}
	if len(validation.IsDNS1123Subdomain(id)) > 0 {
		return "", problem.New(v1.ReasonInvalidCloudCredential, "key %s does not hold a management cluster id (as in c-m-abcde123)", ClusterIDKey)
	}
	return id, nil
}
