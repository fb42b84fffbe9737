package leastprivilege

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
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
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
	a, b    rancher.Guest
	token   string
	renewed time.Time
}

// newWorld names the run's objects after the test's tag and its range after the test's octet.
func (e *lpEnv) newWorld() *lpWorld {
	g := func(which string) rancher.Guest {
		return rancher.Guest{Name: fmt.Sprintf("lp%s%s", e.tag, which), ID: fmt.Sprintf("c-m-lp%s%s", e.tag, which),
			Harvester: "c-m-lph" + e.tag, Display: "harv-lp" + e.tag, Network: rancher.Network("vlan10")}
	}
	return &lpWorld{e: e, rangeName: "lp" + e.tag, cidr: fmt.Sprintf("10.%d.0.0/28", e.octet),
		a: g("a"), b: g("b"), token: "token-lp" + e.tag, contended: "lp" + e.tag + "-c"}
}

// contenders is how many FloatingIPs wait for the contended range: more than the operator's
// workers, so that claims and status writes race.
const contenders = 8

// createContended creates the contended range and its waiting FloatingIPs, before the operator
// starts. Each names a guest cluster that does not exist, so guest operations write their status
// too.
func (w *lpWorld) createContended() error {
	api := w.e.r.FIPs
	_, err := api.FloatingIPRange().Create(&v1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: w.contended, Annotations: map[string]string{
			v1.AnnotationHarvesterClusterName: "harv-lp-contended", v1.AnnotationHarvesterNetworkName: "vlan10"}},
		Spec: v1.FloatingIPRangeSpec{IPRange: fmt.Sprintf("10.%d.128.0/28", w.e.octet), AllowedNamespaces: []string{w.e.ns}},
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
	_, err := r.FIPs.FloatingIPRange().Create(&v1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: w.rangeName, Annotations: map[string]string{
			v1.AnnotationHarvesterClusterName: w.a.Display, v1.AnnotationHarvesterNetworkName: "vlan10"}},
		Spec: v1.FloatingIPRangeSpec{IPRange: w.cidr, AllowedNamespaces: []string{w.e.ns}},
	})
	if err != nil {
		return err
	}
	if err := r.AddManagementCluster(w.a.Harvester, w.a.Display); err != nil {
		return err
	}
	for _, g := range []rancher.Guest{w.a, w.b} {
		if err := r.AddMachineConfig(g.ConfigName(), g.Network); err != nil {
			return err
		}
		if err := r.AddNamespace(g.ID); err != nil {
			return err
		}
		m := &mgmtv3.Cluster{ObjectMeta: metav1.ObjectMeta{Name: g.ID}, Spec: mgmtv3.ClusterSpec{DisplayName: g.Name}}
		m.Status.Conditions = []mgmtv3.ClusterCondition{{Type: "Connected", Status: corev1.ConditionTrue}}
		if err := r.CreateManagementCluster(m); err != nil {
			return err
		}
	}
	if err := e.proxy.Register(w.a.ID, e.guest, w.token); err != nil {
		return err
	}
	kc, err := e.proxy.Kubeconfig(w.a.ID, w.token)
	if err != nil {
		return err
	}
	if err := r.AddKubeconfigSecret(w.a.SecretName(), kc); err != nil {
		return err
	}
	for _, g := range []rancher.Guest{w.a, w.b} {
		c := &provv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: g.Name, Namespace: rancher.FleetNamespace}}
		c.Spec.CloudCredentialSecretName = g.CredentialName()
		if g.Name == w.a.Name {
			c.Spec.CloudCredentialSecretName = rancher.GlobalNamespace + ":" + g.CredentialName()
		}
		c.Spec.RKEConfig = &provv1.RKEConfig{MachinePools: []provv1.RKEMachinePool{rancher.HarvesterPool(g.ConfigName())}}
		secret := ""
		if g.Name == w.a.Name {
			secret = g.SecretName()
		}
		if err := r.AddProvisioningCluster(c, g.ID, secret); err != nil {
			return err
		}
	}
	if err := r.AddCredential(w.a.CredentialName(), rancher.HarvesterCredential(w.a.Harvester)); err != nil {
		return err
	}
	_, err = e.kube.CoreV1().Secrets(rancher.FleetNamespace).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: w.b.CredentialName(), Namespace: rancher.FleetNamespace},
		StringData: rancher.HarvesterCredential(w.b.Harvester), Type: "provisioning.cattle.io/cloud-credential",
	}, metav1.CreateOptions{})
	return err
}

// cleanup deletes the run's objects as the administrator once its operator has stopped, taking
// off the finalizers a crippled operator could not process.
func (w *lpWorld) cleanup() {
	r, ctx, del := w.e.r, context.Background(), metav1.DeleteOptions{}
	for _, g := range []rancher.Guest{w.a, w.b} {
		_ = r.Prov.Delete(rancher.FleetNamespace, g.Name, nil)
		if list, err := r.FIPs.FloatingIP().List(g.ID, metav1.ListOptions{}); err == nil {
			for i := range list.Items {
				x := &list.Items[i]
				if len(x.Finalizers) > 0 {
					x.Finalizers = nil
					_, _ = r.FIPs.FloatingIP().Update(x)
				}
				_ = r.FIPs.FloatingIP().Delete(g.ID, x.Name, nil)
			}
		}
		_ = r.Mgmt.Delete(g.ID, nil)
		_ = r.Dyn.Resource(discovery.HarvesterConfigResource()).Namespace(rancher.FleetNamespace).Delete(ctx, g.ConfigName(), del)
		_ = r.Kube.CoreV1().Namespaces().Delete(ctx, g.ID, del)
	}
	_ = r.Kube.CoreV1().Secrets(rancher.FleetNamespace).Delete(ctx, w.a.SecretName(), del)
	_ = r.Kube.CoreV1().Secrets(rancher.GlobalNamespace).Delete(ctx, w.a.CredentialName(), del)
	_ = r.Kube.CoreV1().Secrets(rancher.FleetNamespace).Delete(ctx, w.b.CredentialName(), del)
	_ = r.Mgmt.Delete(w.a.Harvester, nil)
	for _, name := range append(append([]string(nil), w.contenders...), w.late...) {
		if x, err := r.FIPs.FloatingIP().Get(w.e.ns, name, metav1.GetOptions{}); err == nil && len(x.Finalizers) > 0 {
			x.Finalizers = nil
			_, _ = r.FIPs.FloatingIP().Update(x)
		}
		_ = r.FIPs.FloatingIP().Delete(w.e.ns, name, nil)
	}
	for _, name := range []string{w.rangeName, w.contended} {
		if x, err := r.FIPs.FloatingIPRange().Get(name, metav1.GetOptions{}); err == nil && len(x.Finalizers) > 0 {
			x.Finalizers = nil
			_, _ = r.FIPs.FloatingIPRange().Update(x)
		}
		_ = r.FIPs.FloatingIPRange().Delete(name, nil)
	}
}
