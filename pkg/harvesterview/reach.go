// Package harvesterview reads the Harvester clusters the ranges name, through Rancher's cluster
// proxy as the operator reaches a guest, and judges each range against what Harvester itself hands
// out or uses on the range's layer-2 segment: its load balancer and DHCP pools and the addresses
// its virtual machines report. Nothing is ever written into Harvester. The reading is
// pkg/segments'; this package reaches the cluster, keeps the last view of each, and turns a view
// into what a range withholds and says.
package harvesterview

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
	"github.com/kubefip/kube-fip-operator/pkg/segments"
)

// ClusterGetter reads one provisioning cluster by namespace and name: from a cache, or a live
// GET.
type ClusterGetter func(namespace, name string) (*provv1.Cluster, error)

// Reacher reaches a Harvester cluster by the name a range gives it (harvesterClusterName, the
// display name of its management cluster) as Rancher serves it: an imported Harvester is a
// provisioning cluster of that name in the fleet namespace, whose kubeconfig Secret Rancher keeps
// (status.clientSecretName) with a token for its cluster proxy. That is the very path and Secret
// the operator reaches each guest with, vetted the same way (guest.CheckKubeconfig: Rancher's proxy
// URL of that cluster and a token, nothing else), rather than the kubeconfig a person put in a
// Harvester cloud credential: that one acts as the person who made it, with whatever rights they
// had, and would add a second way in to vet.
type Reacher struct {
	Clusters ClusterGetter
	Secrets  typedcorev1.SecretsGetter
	// Settings reads Rancher's address settings, which the kubeconfig's server must name.
	Settings guest.SettingsGetter
	// FleetNamespace holds the provisioning clusters and their kubeconfig Secrets.
	FleetNamespace string
	// Timeout bounds each request.
	Timeout time.Duration
}

// ErrNotReachable wraps every reason a Harvester cluster cannot be reached: its message says
// which, and never quotes a credential.
var ErrNotReachable = errors.New("the Harvester cluster cannot be reached through Rancher")

// Reach returns a getter of the Harvester cluster named display, and its management cluster id.
// Every request of the getter ends with pass and is bounded like a guest's.
func (r *Reacher) Reach(pass context.Context, display string) (segments.Getter, string, error) {
	c, err := r.Clusters(r.FleetNamespace, display)
	switch {
	case apierrors.IsNotFound(err):
		return nil, "", fmt.Errorf("%w: Rancher has no provisioning cluster %s/%s", ErrNotReachable, r.FleetNamespace, redact.Quote(display, redact.MaxValue))
	case err != nil:
		return nil, "", fmt.Errorf("%w: reading provisioning cluster %s/%s: %s", ErrNotReachable, r.FleetNamespace, redact.Quote(display, redact.MaxValue), redact.Error(err))
	}
	id, secretName := strings.TrimSpace(c.Status.ClusterName), strings.TrimSpace(c.Status.ClientSecretName)
	if id == "" || secretName == "" {
		return nil, "", fmt.Errorf("%w: provisioning cluster %s/%s has no management cluster or kubeconfig Secret yet", ErrNotReachable, r.FleetNamespace, c.Name)
	}
	secret, err := r.Secrets.Secrets(r.FleetNamespace).Get(pass, secretName, metav1.GetOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("%w: reading its kubeconfig Secret %s/%s: %s", ErrNotReachable, r.FleetNamespace, secretName, redact.Error(err))
	}
	rancher, err := guest.RancherAddresses(pass, r.Settings)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s", ErrNotReachable, redact.Error(err))
	}
	client, err := guest.NewClient(pass, guest.Target{Name: c.Name, ClusterID: id, Kubeconfig: secret.Data[guest.KubeconfigKey], Rancher: rancher}, r.Timeout)
	if err != nil {
		return nil, "", fmt.Errorf("%w: kubeconfig Secret %s/%s: %s", ErrNotReachable, r.FleetNamespace, secretName, redact.Error(err))
	}
	return restGetter{rest: client.Core.RESTClient(), redact: client.Redact}, id, nil
}

// restGetter does the GETs of a read over a guest client's REST client.
type restGetter struct {
	rest   rest.Interface
	redact func(string) string
}

// Get reads the API path (with its query) and returns the body. A status error is returned as the
// client decodes it, so that apierrors.IsNotFound tells an API the cluster does not serve.
func (g restGetter) Get(ctx context.Context, pathAndQuery string) ([]byte, error) {
	body, err := g.rest.Get().RequestURI(pathAndQuery).Do(ctx).Raw()
	if err != nil && !apierrors.IsNotFound(err) {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			return nil, err
		}
		// The text may carry what the transport saw; the budget's error stays wrapped, so that a
		// read can ask again for a smaller page.
		if errors.Is(err, guest.ErrGuestResponseTooLarge) {
			return nil, fmt.Errorf("%w: %s", guest.ErrGuestResponseTooLarge, g.redact(err.Error()))
		}
		return nil, errors.New(g.redact(err.Error()))
	}
	return body, err
}
