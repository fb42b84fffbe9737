package externaldns

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
)

// binaryEnv names the directory scripts/build-externaldns built external-dns into, instead of
// building it.
const binaryEnv = "KUBE_FIP_EXTERNALDNS"

// Binary returns the external-dns program of Version: in KUBE_FIP_EXTERNALDNS when set, otherwise
// what scripts/build-externaldns reports, building it on first use (its progress goes to stderr).
func Binary() (string, error) {
	dir, err := rig.BuiltDir(binaryEnv, "build-externaldns")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "external-dns")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%s holds no external-dns built by scripts/build-externaldns: %w", dir, err)
	}
	return bin, nil
}

// serviceAccount is who external-dns runs as, with the rights its own chart gives it for the crd
// source (external-dns's charts/external-dns, templates/clusterrole.yaml of Version): reading
// DNSEndpoints and writing their status.
const serviceAccount = "external-dns"

// Run starts external-dns of Version as one local cluster runs it for the operator (docs/names.md):
// the crd source reading the DNSEndpoints of every namespace of the API server admin reaches, as
// the ServiceAccount external-dns with its chart's rights for that source; the TXT registry under
// owner; the rfc2136 provider writing to server's zone with its key, which reaches external-dns in
// its environment, not its command line; --policy=sync, so that records it wrote go when their
// DNSEndpoint does. It runs until the test ends.
func Run(t testing.TB, admin *rest.Config, server *Server, owner string) *controlplane.Process {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	grant(t, admin)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	rig.Must(t, controlplane.ServiceAccountKubeconfig(admin, "kube-system", serviceAccount, kubeconfig, time.Hour))
	host, port, _ := net.SplitHostPort(server.Addr)
	cmd := exec.Command(bin,
		"--kubeconfig="+kubeconfig,
		"--source=crd", "--crd-source-apiversion=externaldns.k8s.io/v1alpha1", "--crd-source-kind=DNSEndpoint",
		"--provider=rfc2136", "--rfc2136-host="+host, "--rfc2136-port="+port, "--rfc2136-zone="+server.Zone,
		"--rfc2136-tsig-keyname="+server.KeyName, "--rfc2136-tsig-secret-alg="+KeyAlgorithm, "--rfc2136-axfr",
		"--registry=txt", "--txt-owner-id="+owner, "--domain-filter="+server.Zone, "--policy=sync",
		"--events", "--interval=2s", "--min-event-sync-interval=1s",
		fmt.Sprintf("--metrics-address=127.0.0.1:%d", rig.FreePort(t)))
	cmd.Env = append(os.Environ(), "EXTERNAL_DNS_RFC2136_TSIG_SECRET="+server.Secret)
	proc, err := controlplane.StartProcess(cmd, nil, cmd.Start)
	if err != nil {
		t.Fatalf("starting external-dns: %v", err)
	}
	t.Cleanup(func() {
		_ = proc.Stop(5 * time.Second)
		if t.Failed() {
			t.Logf("external-dns:\n%s\nnamed:\n%s", rig.LastLines(proc.Logs(), 60), rig.LastLines(server.Logs(), 30))
		}
	})
	return proc
}

// grant makes the ServiceAccount external-dns with its chart's rights for the crd source; what an
// earlier test of the same API server made of it is kept, as it is the same.
func grant(t testing.TB, admin *rest.Config) {
	t.Helper()
	client, err := kubernetes.NewForConfig(admin)
	rig.Must(t, err)
	ctx := context.Background()
	made := func(_ interface{}, err error) {
		t.Helper()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	made(client.CoreV1().ServiceAccounts("kube-system").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: serviceAccount}}, metav1.CreateOptions{}))
	made(client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: serviceAccount},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"externaldns.k8s.io"}, Resources: []string{"dnsendpoints"}, Verbs: []string{"get", "watch", "list"}},
			{APIGroups: []string{"externaldns.k8s.io"}, Resources: []string{"dnsendpoints/status"}, Verbs: []string{"update"}},
		},
	}, metav1.CreateOptions{}))
	made(client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: serviceAccount},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: serviceAccount},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: serviceAccount}},
	}, metav1.CreateOptions{}))
}
