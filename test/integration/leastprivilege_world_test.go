package integration

import (
	"context"
	"fmt"
	"time"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/controllers/discovery"
)

// lpWorld is what one run creates once the operator runs, so that each watch the operator needs
// has something to deliver: a range and two Harvester guest clusters whose cloud credential
// arrives last — "a" with it in cattle-global-data and reachable through the cluster proxy, "b"
// with it in fleet-default (a bare name) and no kubeconfig.
type lpWorld struct {
	e         *lpEnv
	rangeName string
	cidr      string
	// contended is a second range with contenders FloatingIPs waiting for it when the operator
	// starts: their claims race for one range, as after an outage.
	contended  string
	contenders []string
	// late are FloatingIPs a scenario creates in rangeName once the operator runs.
	late    []string
	a, b    guest
	token   string
	renewed time.Time
}

func (e *lpEnv) newWorld(k int) *lpWorld {
	harvID, display := fmt.Sprintf("c-m-lph%s%03d", e.tag, k), fmt.Sprintf("harv-lp%s-%02d", e.tag, k)
	g := func(which string) guest {
		return guest{name: fmt.Sprintf("lp%s%s-%02d", e.tag, which, k), id: fmt.Sprintf("c-m-lp%s%s%03d", e.tag, which, k),
			harvester: harvID, display: display, network: vlan("vlan10")}
	}
	return &lpWorld{e: e, rangeName: fmt.Sprintf("lp%s-%02d", e.tag, k), cidr: fmt.Sprintf("10.%d.%d.0/28", e.octet, k),
		a: g("a"), b: g("b"), token: fmt.Sprintf("token-lp%s-%02d", e.tag, k), contended: fmt.Sprintf("lp%s-%02d-c", e.tag, k)}
}

// contenders is how many FloatingIPs wait for the contended range: more than the operator's
// workers, so that claims and status writes race.
const contenders = 8

// createContended creates the contended range and its waiting FloatingIPs, before the operator
// starts. Each names a guest cluster that does not exist, so guest operations write their status
// too.
func (w *lpWorld) createContended(k int) error {
	api := w.e.r.fips
	_, err := api.FloatingIPRange().Create(&v1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: w.contended, Annotations: map[string]string{
			v1.AnnotationHarvesterClusterName: "harv-lp-contended", v1.AnnotationHarvesterNetworkName: "vlan10"}},
		Spec: v1.FloatingIPRangeSpec{IPRange: fmt.Sprintf("10.%d.%d.0/28", w.e.octet, 128+k), AllowedNamespaces: []string{w.e.ns}},
	})
	if err != nil {
		return err
	}
	for i := 0; i < contenders; i++ {
		name := fmt.Sprintf("%s%d", w.contended, i)
		_, err := api.FloatingIP().Create(&v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.e.ns,
			Annotations: map[string]string{v1.AnnotationClusterName: name, v1.AnnotationFloatingIPRange: w.contended}}})
		if err != nil {
			return err
		}
		w.contenders = append(w.contenders, name)
	}
	return nil
}

// create creates the range and both guest clusters, each one's cloud credential last.
func (w *lpWorld) create() error {
	r, e := w.e.r, w.e
	_, err := r.fips.FloatingIPRange().Create(&v1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: w.rangeName, Annotations: map[string]string{
			v1.AnnotationHarvesterClusterName: w.a.display, v1.AnnotationHarvesterNetworkName: "vlan10"}},
		Spec: v1.FloatingIPRangeSpec{IPRange: w.cidr, AllowedNamespaces: []string{w.e.ns}},
	})
	if err != nil {
		return err
	}
	if err := r.addManagementCluster(w.a.harvester, w.a.display); err != nil {
		return err
	}
	for _, g := range []guest{w.a, w.b} {
		if err := r.addMachineConfig(g.configName(), g.network); err != nil {
			return err
		}
		if err := r.addNamespace(g.id); err != nil {
			return err
		}
		m, err := r.mgmt.Create(&mgmtv3.Cluster{ObjectMeta: metav1.ObjectMeta{Name: g.id}, Spec: mgmtv3.ClusterSpec{DisplayName: g.name}})
		if err != nil {
			return err
		}
		r.remember(&r.managementClusters, g.id)
		m.Status.Conditions = []mgmtv3.ClusterCondition{{Type: "Connected", Status: corev1.ConditionTrue}}
		if _, err := r.mgmt.UpdateStatus(m); err != nil {
			return err
		}
	}
	if err := e.proxy.Register(w.a.id, e.guest, w.token); err != nil {
		return err
	}
	kc, err := e.proxy.Kubeconfig(w.a.id, w.token)
	if err != nil {
		return err
	}
	if _, err := e.kube.CoreV1().Secrets(fleetNS).Create(bg(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: w.a.name + "-kubeconfig", Namespace: fleetNS}, Data: map[string][]byte{"value": kc},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	for _, g := range []guest{w.a, w.b} {
		c := &provv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: g.name, Namespace: fleetNS}}
		c.Spec.CloudCredentialSecretName = g.credentialName()
		if g.name == w.a.name {
			c.Spec.CloudCredentialSecretName = globalNS + ":" + g.credentialName()
		}
		c.Spec.RKEConfig = &provv1.RKEConfig{MachinePools: []provv1.RKEMachinePool{harvesterPool(g.configName())}}
		created, err := r.prov.Create(c)
		if err != nil {
			return err
		}
		r.remember(&r.clusters, g.name)
		created.Status.ClusterName = g.id
		if g.name == w.a.name {
			created.Status.ClientSecretName = g.name + "-kubeconfig"
		}
		if _, err := r.prov.UpdateStatus(created); err != nil {
			return err
		}
	}
	if err := r.addCredential(w.a.credentialName(), harvesterCredential(w.a.harvester)); err != nil {
		return err
	}
	_, err = e.kube.CoreV1().Secrets(fleetNS).Create(bg(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: w.b.credentialName(), Namespace: fleetNS},
		StringData: harvesterCredential(w.b.harvester), Type: "provisioning.cattle.io/cloud-credential",
	}, metav1.CreateOptions{})
	return err
}

// cleanup deletes the run's objects as the administrator once its operator has stopped, taking
// off the finalizers a crippled operator could not process.
func (w *lpWorld) cleanup() {
	r, ctx, del := w.e.r, context.Background(), metav1.DeleteOptions{}
	for _, g := range []guest{w.a, w.b} {
		_ = r.prov.Delete(fleetNS, g.name, nil)
		if list, err := r.fips.FloatingIP().List(g.id, metav1.ListOptions{}); err == nil {
			for i := range list.Items {
				x := &list.Items[i]
				if len(x.Finalizers) > 0 {
					x.Finalizers = nil
					_, _ = r.fips.FloatingIP().Update(x)
				}
				_ = r.fips.FloatingIP().Delete(g.id, x.Name, nil)
			}
		}
		_ = r.mgmt.Delete(g.id, nil)
		_ = r.dyn.Resource(discovery.HarvesterConfigResource()).Namespace(fleetNS).Delete(ctx, g.configName(), del)
		_ = r.kube.CoreV1().Namespaces().Delete(ctx, g.id, del)
	}
	_ = r.kube.CoreV1().Secrets(fleetNS).Delete(ctx, w.a.name+"-kubeconfig", del)
	_ = r.kube.CoreV1().Secrets(globalNS).Delete(ctx, w.a.credentialName(), del)
	_ = r.kube.CoreV1().Secrets(fleetNS).Delete(ctx, w.b.credentialName(), del)
	_ = r.mgmt.Delete(w.a.harvester, nil)
	for _, name := range append(append([]string(nil), w.contenders...), w.late...) {
		if x, err := r.fips.FloatingIP().Get(w.e.ns, name, metav1.GetOptions{}); err == nil && len(x.Finalizers) > 0 {
			x.Finalizers = nil
			_, _ = r.fips.FloatingIP().Update(x)
		}
		_ = r.fips.FloatingIP().Delete(w.e.ns, name, nil)
	}
	for _, name := range []string{w.rangeName, w.contended} {
		if x, err := r.fips.FloatingIPRange().Get(name, metav1.GetOptions{}); err == nil && len(x.Finalizers) > 0 {
			x.Finalizers = nil
			_, _ = r.fips.FloatingIPRange().Update(x)
		}
		_ = r.fips.FloatingIPRange().Delete(name, nil)
	}
}
