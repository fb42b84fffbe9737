package helminstall

import (
	"errors"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/approve"
)

// NewRESTClientGetter gives the Helm SDK a guest cluster: its config with namespace set
// explicitly, a fixed REST mapping of the kinds the install policy lets the charts render (see
// fixedRESTMapper), and a discovery client that reads the server's version and nothing else. A
// guest answers its API discovery as it likes (its owner controls its aggregated APIs, or its
// API server): a client that discovers starts a goroutine and a request for every API group the
// guest lists, and holds every answer, so the operator never asks.
func NewRESTClientGetter(config *rest.Config, namespace string) genericclioptions.RESTClientGetter {
	return &restClientGetter{config: config, namespace: namespace, mapper: fixedRESTMapper()}
}

// restClientGetter gives the Helm SDK a guest cluster's rest.Config with the namespace set
// explicitly; Helm would otherwise take the namespace from a kubeconfig context.
type restClientGetter struct {
	config    *rest.Config
	namespace string
	mapper    meta.RESTMapper
}

func (g *restClientGetter) ToRESTConfig() (*rest.Config, error) {
	return rest.CopyConfig(g.config), nil
}

// ToDiscoveryClient answers ServerVersion from the guest; every other question fails without a
// request.
func (g *restClientGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	guest, err := discovery.NewDiscoveryClientForConfig(rest.CopyConfig(g.config))
	if err != nil {
		return nil, err
	}
	return newVersionOnly(guest)
}

func (g *restClientGetter) ToRESTMapper() (meta.RESTMapper, error) {
	return g.mapper, nil
}

// ToRawKubeConfigLoader returns a loader whose only job is to answer the namespace.
func (g *restClientGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), &clientcmd.ConfigOverrides{
		Context: clientcmdapi.Context{Namespace: g.namespace},
	})
}

// fixedRESTMapper maps exactly the kinds the install policy lets the charts render, and the
// Namespace Helm creates for a release (CreateNamespace), at the versions they are rendered with;
// any other kind has no mapping (a *meta.NoKindMatchError). Release records are read and written
// by the release driver with a typed client, not through this mapping.
func fixedRESTMapper() meta.RESTMapper {
	kinds := approve.Kinds()
	kinds = append(kinds, approve.Kind{GroupVersionKind: corev1.SchemeGroupVersion.WithKind("Namespace"), Resource: "namespaces", ClusterScoped: true})
	var versions []schema.GroupVersion
	for _, k := range kinds {
		versions = append(versions, k.GroupVersion())
	}
	m := meta.NewDefaultRESTMapper(versions)
	for _, k := range kinds {
		scope := meta.RESTScopeNamespace
		if k.ClusterScoped {
			scope = meta.RESTScopeRoot
		}
		gv := k.GroupVersion()
		m.AddSpecific(k.GroupVersionKind, gv.WithResource(k.Resource), gv.WithResource(strings.ToLower(k.Kind)), scope)
	}
	return m
}

// ErrDiscoveryRefused is the answer to every question of a guest's API discovery but its version.
var ErrDiscoveryRefused = errors.New("the operator does not read a guest cluster's API discovery or OpenAPI documents")

// versionOnly is a guest's discovery as Helm is given it. The embedded client reaches nowhere:
// its transport refuses every request, so a list of API groups, a group's resources or an OpenAPI
// document is an error at once, without a request, a goroutine per group or an answer held.
type versionOnly struct {
	*discovery.DiscoveryClient
	guest discovery.ServerVersionInterface
}

func newVersionOnly(guest discovery.ServerVersionInterface) (*versionOnly, error) {
	nowhere, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: "https://discovery.invalid", Transport: refuse{ErrDiscoveryRefused}})
	if err != nil {
		return nil, err
	}
	return &versionOnly{DiscoveryClient: nowhere, guest: guest}, nil
}

// ServerVersion is the one question answered, by the guest: GET /version.
func (d *versionOnly) ServerVersion() (*version.Info, error) { return d.guest.ServerVersion() }

// Fresh: nothing is cached that could be stale.
func (d *versionOnly) Fresh() bool { return true }

// Invalidate: nothing is cached.
func (d *versionOnly) Invalidate() {}

// refuse is a transport that answers no request, with err.
type refuse struct{ err error }

func (r refuse) RoundTrip(*http.Request) (*http.Response, error) { return nil, r.err }
