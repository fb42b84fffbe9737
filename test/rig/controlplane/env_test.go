package controlplane

import (
	"context"
	"testing"

	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// TestEnvironmentAndGuest starts the real control plane and one guest API server and checks that
// both report the pinned Kubernetes version and that the main one has every CRD installed.
func TestEnvironmentAndGuest(t *testing.T) {
	env, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
	})

	guest, err := env.StartGuest("guest-one")
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]*rest.Config{"main": env.Config, "guest": guest.Config} {
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		v, err := dc.ServerVersion()
		if err != nil {
			t.Fatal(err)
		}
		if v.GitVersion != "v1.30.14" || v.Major != "1" || v.Minor != "30" {
			t.Errorf("%s server version = %s (major %q minor %q), want v1.30.14", name, v.GitVersion, v.Major, v.Minor)
		}
	}

	cs := apiextclient.NewForConfigOrDie(env.Config)
	for _, name := range []string{
		"floatingips.kubefip.k8s.binbash.org",
		"floatingipranges.kubefip.k8s.binbash.org",
		"floatingipallocations.kubefip.k8s.binbash.org",
		"clusters.provisioning.cattle.io",
		"clusters.management.cattle.io",
		"harvesterconfigs.rke-machine-config.cattle.io",
	} {
		if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			t.Errorf("CRD %s: %v", name, err)
		}
	}
}
