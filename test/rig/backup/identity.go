package backup

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Who a restore writes as. The rancher-backup chart (charts/rancher-backup of
// rancher/backup-restore-operator, unchanged from v4.0.4 to v11.0.1) names its ServiceAccount after
// the chart, in its release namespace, binds it to cluster-admin, and runs the operator with it, no
// impersonation; Rancher installs the chart in cattle-resources-system (its
// catalog.cattle.io/namespace). The API server therefore names a restore's writes
// system:serviceaccount:cattle-resources-system:rancher-backup.
const (
	ServiceAccountNamespace = "cattle-resources-system"
	ServiceAccountName      = "rancher-backup"
)

// ServiceAccountConfig creates rancher-backup's namespace, ServiceAccount and cluster-admin
// binding in the API server of admin, as installing the chart does, and returns a client config
// that authenticates with a token of that ServiceAccount, as the operator's pod does. Calling it
// again is harmless.
func ServiceAccountConfig(ctx context.Context, admin *rest.Config) (*rest.Config, error) {
	kube, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ServiceAccountNamespace}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ServiceAccountName, Namespace: ServiceAccountNamespace}}
	if _, err := kube.CoreV1().ServiceAccounts(ServiceAccountNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ServiceAccountName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ServiceAccountName, Namespace: ServiceAccountNamespace}},
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	seconds := int64(time.Hour / time.Second)
	tr, err := kube.CoreV1().ServiceAccounts(ServiceAccountNamespace).CreateToken(ctx, ServiceAccountName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", ServiceAccountNamespace, ServiceAccountName, err)
	}
	cfg := rest.AnonymousClientConfig(admin)
	cfg.BearerToken = tr.Status.Token
	return cfg, nil
}
