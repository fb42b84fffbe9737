package guest

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Connection says how a guest answered the probe.
type Connection int

const (
	// Connected: the guest answered and the token may act as the cluster's owner.
	Connected Connection = iota
	// Provisioning: Rancher answered 503 ClusterUnavailable — it has not provisioned the cluster
	// yet, so it is not down.
	Provisioning
	// Unreachable: Rancher answered 500 (the agent's tunnel or the dialer failed), or nothing
	// answered in time.
	Unreachable
	// Unauthorized: Rancher refused the kubeconfig's token (401).
	Unauthorized
	// Forbidden: the guest refused the token's Rancher user (403): it lacks the cluster-owner role.
	Forbidden
)

// ProbeNamespace is where the probe lists ConfigMaps: something only the cluster's owner may do.
// GET /version would not do: every authenticated user may read it.
const ProbeNamespace = "kube-system"

// Check lists one ConfigMap in kube-system through the proxy and says what the answer means.
func (c *Client) Check(ctx context.Context) (Connection, error) {
	_, err := c.Core.ConfigMaps(ProbeNamespace).List(ctx, metav1.ListOptions{Limit: 1})
	switch {
	case err == nil:
		return Connected, nil
	case apierrors.IsServiceUnavailable(err):
		return Provisioning, err
	case apierrors.IsUnauthorized(err):
		return Unauthorized, err
	case apierrors.IsForbidden(err):
		return Forbidden, err
	default:
		return Unreachable, err
	}
}
