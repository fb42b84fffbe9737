package harvester

import (
	"strings"
	"testing"

	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	rkev1 "github.com/rancher/rancher/pkg/apis/rke.cattle.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

func pool(name string, controlPlane bool, kind, config, credential string) provv1.RKEMachinePool {
	p := provv1.RKEMachinePool{Name: name, ControlPlaneRole: controlPlane,
		RKECommonNodeConfig: rkev1.RKECommonNodeConfig{CloudCredentialSecretName: credential}}
	if kind != "" {
		p.NodeConfig = &corev1.ObjectReference{Kind: kind, Name: config}
	}
	return p
}

func cluster(credential string, pools ...provv1.RKEMachinePool) *provv1.Cluster {
	c := &provv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "fleet-default"}}
	c.Spec.CloudCredentialSecretName = credential
	if pools != nil {
		c.Spec.RKEConfig = &provv1.RKEConfig{MachinePools: pools}
	}
	return c
}

func TestControlPlaneOf(t *testing.T) {
	t.Parallel()
	const cc = "cattle-global-data:cc-abc"
	tests := []struct {
		name    string
		cluster *provv1.Cluster
		ok      bool
		want    ControlPlane
		problem string
	}{
		{name: "imported", cluster: cluster("")},
		{name: "custom (rkeConfig without pools)", cluster: func() *provv1.Cluster {
			c := cluster("")
			c.Spec.RKEConfig = &provv1.RKEConfig{}
			return c
		}()},
		{name: "another node driver", cluster: cluster("cattle-global-data:cc-aws", pool("cp", true, "Amazonec2Config", "nc-1", ""))},
		{name: "another node driver without control plane", cluster: cluster("", pool("w", false, "Amazonec2Config", "nc-1", ""))},
		{name: "harvester", cluster: cluster(cc, pool("workers", false, MachineConfigKind, "nc-w", ""), pool("cp", true, MachineConfigKind, "nc-cp", "")),
			ok: true, want: ControlPlane{Pool: "cp", ConfigNamespace: "fleet-default", ConfigName: "nc-cp", Credential: cc}},
		{name: "the pool's credential overrides the cluster's",
			cluster: cluster(cc, pool("cp", true, MachineConfigKind, "nc-cp", "cattle-global-data:cc-pool")),
			ok:      true, want: ControlPlane{Pool: "cp", ConfigNamespace: "fleet-default", ConfigName: "nc-cp", Credential: "cattle-global-data:cc-pool"}},
		{name: "first control-plane pool", cluster: cluster(cc, pool("cp1", true, MachineConfigKind, "nc-1", ""), pool("cp2", true, MachineConfigKind, "nc-2", "")),
			ok: true, want: ControlPlane{Pool: "cp1", ConfigNamespace: "fleet-default", ConfigName: "nc-1", Credential: cc}},
		{name: "no control-plane pool", cluster: cluster(cc, pool("workers", false, MachineConfigKind, "nc-w", "")), problem: v1.ReasonNoControlPlanePool},
		{name: "pool without machineConfigRef", cluster: cluster(cc, pool("cp", true, "", "", "")), problem: v1.ReasonNoMachineConfigRef},
		{name: "machineConfigRef without name", cluster: cluster(cc, pool("cp", true, MachineConfigKind, "", "")), problem: v1.ReasonNoMachineConfigRef},
		{name: "no credential", cluster: cluster("", pool("cp", true, MachineConfigKind, "nc-cp", "")), problem: v1.ReasonNoCloudCredential},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, p := ControlPlaneOf(tt.cluster)
			if tt.problem != "" {
				if p == nil || p.Reason != tt.problem || ok {
					t.Fatalf("ControlPlaneOf = %+v, %v, %v; want problem %s", got, ok, p, tt.problem)
				}
				return
			}
			if p != nil || ok != tt.ok || got != tt.want {
				t.Fatalf("ControlPlaneOf = %+v, %v, %v; want %+v, %v", got, ok, p, tt.want, tt.ok)
			}
		})
	}
}

func TestParseCredentialRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ref, ns, name string
		bad           bool
	}{
		{ref: "cattle-global-data:cc-abc", ns: "cattle-global-data", name: "cc-abc"},
		// A bare name is in the cluster's own namespace, as Rancher resolves it.
		{ref: "cc-abc", ns: "fleet-default", name: "cc-abc"},
		{ref: " cattle-global-data:cc-1 ", ns: "cattle-global-data", name: "cc-1"},
		// Rancher understands no other namespace prefix.
		{ref: "other:cc-1", bad: true},
		{ref: "", bad: true},
		{ref: ":cc-abc", bad: true},
		{ref: "cattle-global-data:", bad: true},
		{ref: "a:b:c", bad: true},
		{ref: "Upper:cc", bad: true},
		{ref: "ns/name", bad: true},
	}
	for _, tt := range tests {
		ns, name, p := ParseCredentialRef(tt.ref, "fleet-default", "cattle-global-data")
		if tt.bad {
			if p == nil || p.Reason != v1.ReasonInvalidCloudCredential {
				t.Errorf("ParseCredentialRef(%q) = %s, %s, %v; want a problem", tt.ref, ns, name, p)
			}
			continue
		}
		if p != nil || ns != tt.ns || name != tt.name {
			t.Errorf("ParseCredentialRef(%q) = %s, %s, %v; want %s, %s", tt.ref, ns, name, p, tt.ns, tt.name)
		}
	}
}

func TestClusterID(t *testing.T) {
	t.Parallel()
	const secretValue = "apiVersion: v1\nkind: Config\ntoken: s3cr3t"
	tests := []struct {
		data    map[string][]byte
		want    string
		problem bool
	}{
		{data: map[string][]byte{ClusterIDKey: []byte("c-m-harv1234"), "harvestercredentialConfig-kubeconfigContent": []byte(secretValue)}, want: "c-m-harv1234"},
		{data: map[string][]byte{ClusterIDKey: []byte(" c-m-harv1234\n")}, want: "c-m-harv1234"},
		{data: map[string][]byte{"amazonec2credentialConfig-accessKey": []byte(secretValue)}, problem: true},
		{data: map[string][]byte{ClusterIDKey: []byte("")}, problem: true},
		{data: map[string][]byte{ClusterIDKey: []byte(secretValue)}, problem: true},
		{data: nil, problem: true},
	}
	for i, tt := range tests {
		got, p := ClusterID(tt.data)
		if tt.problem {
			if p == nil {
				t.Errorf("%d: ClusterID = %q, want a problem", i, got)
			} else if strings.Contains(p.Message, "s3cr3t") {
				t.Errorf("%d: the problem repeats the credential's data: %s", i, p.Message)
			}
			continue
		}
		if p != nil || got != tt.want {
			t.Errorf("%d: ClusterID = %q, %v; want %q", i, got, p, tt.want)
		}
	}
}
