// Package controllers is what every controller of the operator registers with: one Context, built
// once by pkg/operator with every default already applied, and one Register signature.
package controllers

import (
	"context"
	"time"

	corecontrollers "github.com/rancher/wrangler/v2/pkg/generated/controllers/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	mgmtcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/management.cattle.io/v3"
	provcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/provisioning.cattle.io/v1"
	"github.com/kubefip/kube-fip-operator/pkg/harvesterview"
	"github.com/kubefip/kube-fip-operator/pkg/helminstall"
	"github.com/kubefip/kube-fip-operator/pkg/imagedigest"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartarchive"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
	"github.com/kubefip/kube-fip-operator/pkg/outbound"
)

// Register is the one signature of every controller's registration: handlers and watches are
// added before the caches start; work that must wait for synced caches and repaired allocations
// is handed to Context.OnStart.
type Register func(ctx context.Context, c *Context) error

// Context is what the controllers read, write and report through.
type Context struct {
	// Namespace holds kube-fip-config, the Lease and the operator's Events.
	Namespace string
	// FleetNamespace holds the provisioning clusters, their HarvesterConfigs and kubeconfig
	// Secrets.
	FleetNamespace string
	// GlobalDataNamespace holds the cloud credentials.
	GlobalDataNamespace string

	FloatingIPs kubefipcontrollers.FloatingIPController
	Ranges      kubefipcontrollers.FloatingIPRangeController
	ConfigMaps  corecontrollers.ConfigMapController
	Namespaces  corecontrollers.NamespaceController
	// ProvisioningClusters are Rancher's provisioning clusters (provisioning.cattle.io/v1), in
	// FleetNamespace; ManagementClusters its management clusters (management.cattle.io/v3), one per
	// guest and Harvester cluster, named c-m-*.
	ProvisioningClusters provcontrollers.ClusterController
	ManagementClusters   mgmtcontrollers.ClusterController
	// Secrets reads one Secret at a time with a GET by name. The operator never lists or watches
	// Secrets: those verbs would return every cloud credential and kubeconfig in full, whatever a
	// client asks for, so its RBAC grants get only.
	Secrets typedcorev1.SecretsGetter
	// RestConfig builds the clients of watches the shared controller factory does not serve.
	RestConfig *rest.Config
	// DNSEndpoints: the operator may write external-dns DNSEndpoints (the chart's dns.enabled).
	DNSEndpoints bool

	Alloc    *allocation.Manager
	Store    *config.Store
	Metrics  *metrics.Metrics
	Recorder record.EventRecorder
	// FirstGuest is filled in by the guest controller and applied by the allocator.
	FirstGuest *FirstGuestStatus

	Guest GuestOptions
	// Harvester tunes the reading of the Harvester clusters the ranges name; Harvesters are those
	// clusters as last read, set by the range controller, which reads them (nil: none is read).
	Harvester  harvesterview.Options
	Harvesters *harvesterview.Views

	starters  []func(context.Context)
	informers []Informer
}

// Informer is a watch the shared controller factory does not serve. A controller builds it
// (unstarted) and hands it to AddOptionalInformer; the operator runs it beside the
// shared caches and waits for it to sync before the allocation repair and before any worker.
type Informer struct {
	// Name says which watch it is in logs and in the error of a sync that did not complete.
	Name     string
	Informer cache.SharedIndexInformer
	// Optional, when set, is the resource the informer watches and the informer is waited for
	// only if the API server serves it at start-up. It is run either way, so that a resource
	// installed later is still seen.
	Optional *schema.GroupVersionResource
}

// GuestOptions tune the guest operations.
type GuestOptions struct {
	// Workers bounds the guest clusters operated on at once.
	Workers int
	// Timeout bounds every request to a guest.
	Timeout time.Duration
	// HelmCacheDir is a writable directory for Helm's short-lived files.
	HelmCacheDir string
	// ChartLimits bound every chart fetch.
	ChartLimits helminstall.Limits
	// Network is what chart fetches and registry digest checks go through: the CAs they trust and
	// their proxy.
	Network outbound.Network
	// ChartPolicy decides which chart sources and values may be installed; set at deployment
	// level, so that editing kube-fip-config cannot choose the code that runs in every guest.
	ChartPolicy installpolicy.Policy
	// GuestCharts are the pinned charts the image ships, installed without a fetch.
	GuestCharts chartarchive.Bundle
	// ChartCredentialsSecret, when set, names the Secret in Namespace (keys username, password
	// and source) that authenticates to the one chart source its key source names.
	ChartCredentialsSecret string
	// ServeGracePeriod is how long kube-vip has to start and to bind an address a Service asks for
	// before the FloatingIP says it is not served.
	ServeGracePeriod time.Duration
	// ImagePullSecret, when set, names the kubernetes.io/dockerconfigjson Secret in Namespace the
	// guests pull the charts' images with: the operator copies it into the releases' namespace of
	// every guest (imagepolicy.GuestPullSecretName) and checks digests with it.
	ImagePullSecret string
	// Images checks images pinned by digest at their registry, where ChartPolicy requires digests.
	Images *imagedigest.Checker
}

// AddOptionalInformer hands the operator an unstarted informer a controller reads, outside the
// shared caches, of a resource that may not exist, such as a CRD another component installs: the
// operator starts it with the shared caches and waits for it to sync before the allocation repair
// and the workers, unless the API server does not serve gvr at start-up; the controller reading
// it must then treat it as possibly empty.
func (c *Context) AddOptionalInformer(name string, gvr schema.GroupVersionResource, informer cache.SharedIndexInformer) {
	c.informers = append(c.informers, Informer{Name: name, Informer: informer, Optional: &gvr})
}

// Informers is what AddOptionalInformer was given, in order.
func (c *Context) Informers() []Informer { return append([]Informer(nil), c.informers...) }

// OnStart asks for fn to run once the caches are synced and the allocations repaired, just
// before the controllers' workers start.
func (c *Context) OnStart(fn func(context.Context)) { c.starters = append(c.starters, fn) }

// Start runs what OnStart was given, in order.
func (c *Context) Start(ctx context.Context) {
	for _, fn := range c.starters {
		fn(ctx)
	}
}
