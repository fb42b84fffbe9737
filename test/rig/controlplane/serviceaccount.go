package controlplane

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ServiceAccountKubeconfig writes to path a kubeconfig that authenticates to admin's API server as
// the ServiceAccount namespace/name, with a bound token from the TokenRequest API — what a pod of
// that ServiceAccount is given — so the API server's RBAC authorizer judges every request by the
// roles bound to that ServiceAccount alone. The ServiceAccount must exist. The file is written
// with mode 0600 and holds the token: never print it.
func ServiceAccountKubeconfig(admin *rest.Config, namespace, name, path string, ttl time.Duration) error {
	client, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return err
	}
	seconds := int64(ttl / time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr, err := client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	tlsFiles := rest.CopyConfig(admin)
	if err := rest.LoadTLSFiles(tlsFiles); err != nil { // the CA as data, where admin names a file
		return err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: tlsFiles.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: name, Namespace: namespace}
	kc.CurrentContext = "test"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return fmt.Errorf("rendering the kubeconfig of ServiceAccount %s/%s: %w", namespace, name, err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// RESTConfigOf loads the kubeconfig file at path.
func RESTConfigOf(t testing.TB, path string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
