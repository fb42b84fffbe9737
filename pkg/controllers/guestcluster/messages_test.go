package guestcluster

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/guest"
)

func TestKubeconfigOutcomeReasons(t *testing.T) {
	const token = "kubeconfig-u-x:t0ps3cr3tvalue"
	kubeconfig := []byte("apiVersion: v1\nclusters:\n- name: cluster\n  cluster:\n    server: https://admin:" + token +
		"@rancher.example.com/k8s/clusters/c-m-abc\ncontexts:\n- name: default\n  context: {cluster: cluster, user: user}\n" +
		"current-context: default\nusers:\n- name: user\n  user:\n    token: " + token + "\n")
	target := func(kubeconfig []byte) guest.Target {
		return guest.Target{Name: "guest", ClusterID: "c-m-abc", Kubeconfig: kubeconfig, Rancher: []string{"https://rancher.example.com"}}
	}
	_, refused := guest.NewClient(nil, target(kubeconfig), 0)
	_, invalid := guest.NewClient(nil, target([]byte("{not yaml: [")), 0)
	_, missing := guest.NewClient(nil, target(nil), 0)
	for _, tc := range []struct {
		err    error
		reason string
	}{
		{refused, v1.ReasonKubeconfigRefused},
		{invalid, v1.ReasonKubeconfigInvalid},
		{missing, v1.ReasonKubeconfigMissing},
		{fmt.Errorf("wrapped: %w", guest.ErrKubeconfigRefused), v1.ReasonKubeconfigRefused},
	} {
		out := kubeconfigOutcome(tc.err, "fleet-default", "guest-kubeconfig")
		if out.ok || out.reason != tc.reason {
			t.Errorf("kubeconfigOutcome(%v) = %s, want %s", tc.err, out.reason, tc.reason)
		}
		if !strings.Contains(out.message, "fleet-default/guest-kubeconfig") || strings.Contains(out.message, "t0ps3cr3t") {
			t.Errorf("kubeconfigOutcome(%v) says %q: want the Secret named and no token", tc.err, out.message)
		}
	}
	if !errors.Is(refused, guest.ErrKubeconfigRefused) {
		t.Fatalf("a server URL with credentials was not refused: %v", refused)
	}
}

func TestPassRedactsItsCredentials(t *testing.T) {
	p := &pass{credentials: []string{"kubeconfig-u-x:t0ps3cr3tvalue", "t0ps3cr3tvalue"}}
	for _, in := range []string{
		`kube-vip: fetching chart https://u:pw0rd1234@charts.example.com/x 0.6.4: Get "https://u:***@charts.example.com/x/index.yaml": EOF`,
		"the guest cluster does not answer: token t0ps3cr3tvalue rejected",
		strings.Repeat("x", 5000),
	} {
		out := p.redact(in)
		if strings.Contains(out, "pw0rd1234") || strings.Contains(out, "t0ps3cr3t") || len(out) > 1024 {
			t.Errorf("redact(%.60q...) = %.200q (%d bytes)", in, out, len(out))
		}
	}
}
