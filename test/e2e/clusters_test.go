package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/externaldns"
	"github.com/kubefip/kube-fip-operator/test/rig/guests"
	"github.com/kubefip/kube-fip-operator/test/rig/node"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
	"github.com/kubefip/kube-fip-operator/test/rig/registry"
)

// The guest's node is labelled and tainted as an RKE2 server (control plane and etcd) is.
func guestLabels() map[string]string {
	return map[string]string{"node-role.kubernetes.io/control-plane": "true", "node-role.kubernetes.io/master": "true", "node-role.kubernetes.io/etcd": "true"}
}

func guestTaints() []string {
	return []string{"node-role.kubernetes.io/control-plane=true:NoSchedule"}
}

// startClusters starts the management cluster (where Rancher and the operator run) and the guest
// cluster together.
func (s *suite) startClusters(ctx context.Context) error {
	type result struct {
		c   *node.Cluster
		err error
	}
	mgmt, guest := make(chan result, 1), make(chan result, 1)
	go func() {
		c, err := node.Start(ctx, node.Options{Name: "e2e-mgmt", Index: mgmtIndex, Registry: registryHost})
		mgmt <- result{c, err}
	}()
	go func() {
		c, err := node.Start(ctx, node.Options{Name: "e2e-guest", Index: guestIndex, Labels: guestLabels(), Taints: guestTaints(),
			Registry: registryHost})
		guest <- result{c, err}
	}()
	m, g := <-mgmt, <-guest
	s.mgmt, s.guest = m.c, g.c
	if m.err != nil {
		return fmt.Errorf("the management cluster: %w", m.err)
	}
	if g.err != nil {
		return fmt.Errorf("the guest cluster: %w", g.err)
	}
	s.mgmtKube = kubernetes.NewForConfigOrDie(s.mgmt.Config)
	s.guestKube = kubernetes.NewForConfigOrDie(s.guest.Config)
	f, err := kubefip.NewFactoryFromConfig(s.mgmt.Config)
	if err != nil {
		return err
	}
	s.fips = f.Kubefip().V1()
	return nil
}

// startRancher makes the management cluster a Rancher one for the operator: Rancher's CRDs and
// namespaces, the guest as Rancher knows it (a Harvester guest labelled kube-vip=true), its
// kubeconfig through a cluster proxy that the operator's pod reaches on the host, and a chart
// repository with the guest charts, there too.
func (s *suite) startRancher() error {
	crds, err := rancher.CRDs()
	if err != nil {
		return err
	}
	if err := controlplane.UpgradeCRDs(s.mgmt.Config, crds); err != nil {
		return err
	}
	if s.world, err = rancher.NewWorld(s.mgmt.Config); err != nil {
		return err
	}
	host := s.mgmt.HostAddr.String()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return err
	}
	cert, err := s.mgmt.ServingCert()
	if err != nil {
		return err
	}
	s.proxy = guests.StartClusterProxyOn(l, cert, s.mgmt.CAPEM())
	if _, err := rancher.PublishRancherAddress(s.mgmt.Config, s.proxy.URL); err != nil {
		return err
	}
	const token = "token-e2e-guest"
	if err := s.proxy.RegisterConfig(guestID, guestName, s.guest.Config, token); err != nil {
		return err
	}
	kc, err := s.proxy.Kubeconfig(guestID, token)
	if err != nil {
		return err
	}
	if err := s.world.AddGuest(rancher.Guest{Name: guestName, ID: guestID, Harvester: "c-m-e2eharv", Display: "harvester-e2e",
		Network: rancher.Network("vlan12"), Labels: map[string]string{config.ClusterLabel: "true"}, Kubeconfig: kc}); err != nil {
		return err
	}
	s.repo, err = chartrepo.StartChartRepoOn(host, chartrepo.KubevipChart(config.DefaultKubevipChartVersion),
		chartrepo.KubevipCloudProviderChart(config.DefaultKubevipCloudProviderChartVersion))
	return err
}

// helm is a Helm action configuration for namespace of cluster c, as the Helm CLI has it.
func helm(c *node.Cluster, namespace string) (*action.Configuration, error) {
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &c.Kubeconfig, &namespace
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, namespace, "secret", func(string, ...interface{}) {}); err != nil {
		return nil, err
	}
	return cfg, nil
}

// operatorValues are the values Rancher's form gives the operator chart by default, and what the
// test world needs besides: Rancher's system default registry (the test's, where every image
// comes from), the guest charts' repository on the host (over http, which the deployment then
// allows), and, with update, the guests' releases upgraded when what the operator would install
// changes. kube-vip's values are the chart's own: the guest node's interface is named as the
// default names it.
func (s *suite) operatorValues(update bool) (map[string]interface{}, error) {
	values := map[string]interface{}{}
	text := fmt.Sprintf(`global:
  cattle:
    systemDefaultRegistry: %s
security:
  allowedChartSources: http://%s:*
  allowHTTPChartSources: true
config:
  kubevipChartRepoUrl: %s
  operateGuestClusterInterval: "3"
  kubevipUpdate: "%t"
`, registryHost, s.mgmt.HostAddr, s.repo.URL, update)
	return values, yaml.Unmarshal([]byte(text), &values)
}

// airGapValues are what this release's form is given besides, for the test's registry: it serves
// plain http, and the guests' images are pinned to the digests of the images built here (the
// default values' own, with the tag's digest replaced), as an administrator pins images they
// reviewed (docs/airgap.md). Digests are required, the default with a registry.
func (s *suite) airGapValues(values map[string]interface{}) {
	values["guestImages"] = map[string]interface{}{"plainHTTP": true}
	cfg, _ := values["config"].(map[string]interface{})
	cfg["kubevipChartValues"] = strings.Replace(config.DefaultKubevipChartValues, config.DefaultKubevipImageTag, s.pinned(kubevipImage), 1)
	cfg["kubevipCloudProviderChartValues"] = strings.Replace(config.DefaultKubevipCloudProviderChartValues,
		config.DefaultKubevipCloudProviderImageTag, s.pinned(providerImage), 1)
}

// kubevipImage and providerImage are the pinned pair as the registry serves them.
var (
	kubevipImage  = registry.MirrorPath(config.DefaultKubevipImageRepository) + ":" + kubevipTag
	providerImage = registry.MirrorPath(config.DefaultKubevipCloudProviderImageRepository) + ":" + providerTag
)

// pinned is the tag of ref (repository:tag) pinned to the digest the registry serves it with.
func (s *suite) pinned(ref string) string {
	_, tag, _ := strings.Cut(ref, ":")
	return tag + "@" + s.digestOf(ref)
}

// previousTag is the tag of the previous release's image as the suite imports it: the chart of the
// previous release, from Git, names the tag dev, so its install sets image.tag.
const previousTag = "e2e-previous"

// installCharts installs the previous release as Apps & Marketplace does: the CRD chart first, then
// the operator chart into kube-fip, waiting for its pods; TestUpgradeFromThePreviousRelease (or
// the first test that needs this release, through current) upgrades it. The guests' range is
// created once the operator runs.
func (s *suite) installCharts(ctx context.Context) error {
	crd, err := controlplane.ReleaseChart(controlplane.PreviousRelease, "kube-fip-operator-crd")
	if err != nil {
		return err
	}
	op, err := controlplane.ReleaseChart(controlplane.PreviousRelease, "kube-fip-operator")
	if err != nil {
		return err
	}
	values, err := s.operatorValues(false)
	if err != nil {
		return err
	}
	values["image"] = map[string]interface{}{"tag": previousTag}
	for _, r := range []struct {
		name   string
		chart  *chart.Chart
		values map[string]interface{}
	}{{"kube-fip-operator-crd", crd, nil}, {"kube-fip-operator", op, values}} {
		cfg, err := helm(s.mgmt, operatorNS)
		if err != nil {
			return err
		}
		install := action.NewInstall(cfg)
		install.ReleaseName, install.Namespace, install.CreateNamespace = r.name, operatorNS, true
		install.Wait, install.Timeout = true, 3*time.Minute
		if _, err := install.RunWithContext(ctx, r.chart, r.values); err != nil {
			return fmt.Errorf("installing %s of the previous release: %w", r.name, err)
		}
	}
	// The guest's VM network, as a FloatingIPRange of its Harvester cluster and network.
	_, err = s.fips.FloatingIPRange().Create(&v1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-guests", Annotations: map[string]string{v1.AnnotationHarvesterClusterName: "harvester-e2e",
			v1.AnnotationHarvesterNetworkName: "default/vlan12"}},
		Spec: v1.FloatingIPRangeSpec{IPRange: fmt.Sprintf("198.18.%d.96/28", guestIndex)}})
	return err
}

// upgradeToThisRelease upgrades both releases to this build's charts, as Apps & Marketplace does:
// the values a person gave are kept, the image is the new chart's own.
func (s *suite) upgradeToThisRelease(ctx context.Context) error {
	values, err := s.operatorValues(true)
	if err != nil {
		return err
	}
	values["image"] = map[string]interface{}{"tag": ""}
	s.airGapValues(values)
	// This release installs only chart archives it knows by digest: the stand-ins the guests' chart
	// repository serves are allowed, as a deployment allows the archives it reviewed.
	security, _ := values["security"].(map[string]interface{})
	security["allowedChartDigests"] = strings.Join(chartrepo.DigestEntries(controlplane.PinnedStandIns()...), ",")
	// The uninstall at the end (zz_uninstall_test.go) takes the operator's changes out of the guest.
	values["cleanup"] = map[string]interface{}{"guests": "clean"}
	// The Harvester cluster's changes a test makes are seen within seconds.
	values["harvesterReadInterval"] = "10s"
	// The README's last step names a guest through external-dns (docs/names.md): its CRD is in the
	// local cluster, as its chart installs it, and the operator may write DNSEndpoints.
	values["dns"] = map[string]interface{}{"enabled": true}
	if err := externaldns.InstallCRD(s.mgmt.Config); err != nil {
		return err
	}
	if err := s.upgrade(ctx, "kube-fip-operator-crd", s.crdChart, nil, false); err != nil {
		return err
	}
	return s.upgrade(ctx, "kube-fip-operator", s.operatorChart, values, false)
}

// upgrade upgrades release of the operator's namespace to the chart archive with values, on top
// of those it has with reuse (as the README's --reset-then-reuse-values: the values given before,
// the new chart's defaults for the rest), and waits for its pods.
func (s *suite) upgrade(ctx context.Context, release, archive string, values map[string]interface{}, reuse bool) error {
	ch, err := loader.Load(archive)
	if err != nil {
		return err
	}
	cfg, err := helm(s.mgmt, operatorNS)
	if err != nil {
		return err
	}
	up := action.NewUpgrade(cfg)
	up.Namespace, up.ResetThenReuseValues, up.Wait, up.Timeout = operatorNS, reuse, true, 3*time.Minute
	if _, err := up.RunWithContext(ctx, release, ch, values); err != nil {
		return fmt.Errorf("upgrading %s: %w", release, err)
	}
	return nil
}
