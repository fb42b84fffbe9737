// Package controllers is what every controller of the operator registers with: one Context, built
// once by pkg/operator with every default already applied, and one Register signature.
package controllers

import (
	"context"
	"time"

	corecontrollers "github.com/rancher/wrangler/v2/pkg/generated/controllers/core/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	mgmtcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/management.cattle.io/v3"
	provcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/provisioning.cattle.io/v1"
	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
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
	Clusters    provcontrollers.ClusterController
	Management  mgmtcontrollers.ClusterController
	// Secrets reads one Secret at a time with a GET by name. The operator never lists or watches
	// Secrets: those verbs would return every cloud credential and kubeconfig in full, whatever a
	// client asks for, so its RBAC grants get only.
	Secrets typedcorev1.SecretsGetter
	// RestConfig builds the clients of watches the shared controller factory does not serve.
	RestConfig *rest.Config

	Alloc    *allocation.Manager
	Store    *config.Store
	Metrics  *metrics.Metrics
	Recorder record.EventRecorder

	Guest GuestOptions

	starters []func(context.Context)
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
	ChartLimits guest.Limits
	// ChartPolicy decides which chart sources and values may be installed; set at deployment
	// level, so that editing kube-fip-config cannot choose the code that runs in every guest.
	ChartPolicy config.Policy
	// ChartCredentialsSecret, when set, names the Secret in Namespace (keys username, password
	// and source) that authenticates to the one chart source its key source names.
	ChartCredentialsSecret string
}

// OnStart asks for fn to run once the caches are synced and the allocations repaired, just
// before the controllers' workers start.
func (c *Context) OnStart(fn func(context.Context)) { c.starters = append(c.starters, fn) }

// Start runs what OnStart was given, in order.
func (c *Context) Start(ctx context.Context) {
	for _, fn := range c.starters {
		fn(ctx)
	}
}
