// Package operator wires the operator together: clients, the shared lasso controller factory, the
// configuration store, metrics and every controller's Register, started under leader election.
package operator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rancher/wrangler/v2/pkg/leader"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/kubefip/kube-fip-operator/pkg/admission"
	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/controllers"
	"github.com/kubefip/kube-fip-operator/pkg/controllers/configmap"
	"github.com/kubefip/kube-fip-operator/pkg/controllers/discovery"
	"github.com/kubefip/kube-fip-operator/pkg/controllers/dns"
	"github.com/kubefip/kube-fip-operator/pkg/controllers/floatingip"
	"github.com/kubefip/kube-fip-operator/pkg/controllers/floatingiprange"
	"github.com/kubefip/kube-fip-operator/pkg/controllers/guestcluster"
	"github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/harvesterview"
	"github.com/kubefip/kube-fip-operator/pkg/helminstall"
	"github.com/kubefip/kube-fip-operator/pkg/imagedigest"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartarchive"
	"github.com/kubefip/kube-fip-operator/pkg/metawrite"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
	"github.com/kubefip/kube-fip-operator/pkg/outbound"
)

// LeaseName is the leader-election Lease in the operator's namespace.
const LeaseName = "kube-fip-operator"

// Options are the operator's command-line settings.
type Options struct {
	// Namespace holds kube-fip-config, the Lease and the operator's Events.
	Namespace string
	// Threads is the number of workers per controller.
	Threads int
	// LeaderElection runs the controllers only in the replica holding the Lease.
	LeaderElection bool
	// MetricsBind is the address the metrics server binds to ("" for every interface).
	MetricsBind string
	// MetricsPort, when not zero, overrides the metricsPort option.
	MetricsPort int
	// FleetNamespace is Rancher's provisioning namespace: provisioning clusters and their
	// kubeconfig Secrets.
	FleetNamespace string
	// GlobalDataNamespace is Rancher's namespace of cloud credentials.
	GlobalDataNamespace string
	// GuestWorkers bounds the guest clusters operated on at once.
	GuestWorkers int
	// GuestTimeout bounds every request to a guest cluster.
	GuestTimeout time.Duration
	// DNSEndpoints lets the operator publish the DNS names ranges ask for (spec.dns) as
	// external-dns DNSEndpoints; off, a FloatingIP of such a range says so (the chart's
	// dns.enabled, which grants the rights on dnsendpoints).
	DNSEndpoints bool
	// ServeGracePeriod is how long kube-vip has to bind an address a guest asks for before the
	// FloatingIP says it is not served.
	ServeGracePeriod time.Duration
	// OrphanGracePeriod is how old an allocation whose FloatingIP is gone must be before the
	// repair releases it.
	OrphanGracePeriod time.Duration
	// HelmCacheDir is a writable directory for Helm's caches.
	HelmCacheDir string
	// ChartPolicy is what kube-fip-config may install into guest clusters: chart sources,
	// plain http, images. Set at deployment level; the zero Policy allows nothing.
	ChartPolicy installpolicy.Policy
	// PolicySettings are the settings ChartPolicy was built from.
	PolicySettings installpolicy.Settings
	// SecuritySecret, when set, names the Secret in Namespace that holds the deployment's security
	// settings (installpolicy.Deployment): ChartPolicy was built from it at start, and the webhook
	// judges every write of kube-fip-config by its settings at that time.
	SecuritySecret string
	// GuestChartsDir holds the pinned chart archives the image ships; GuestCharts are those of
	// them loaded and checked at start (installpolicy.Policy.LoadBundle).
	GuestChartsDir string
	GuestCharts    chartarchive.Bundle
	// ChartCredentialsSecret, when set, names a Secret in Namespace whose username and password
	// authenticate to the one chart source its key source names.
	ChartCredentialsSecret string
	// ImagePullSecret, when set, names the kubernetes.io/dockerconfigjson Secret in Namespace the
	// guests pull the charts' images with (ChartPolicy's PullSecret is set with it): copied into
	// each guest's release namespace, and used to check digests at the registry.
	ImagePullSecret string
	// ImageRegistryPlainHTTP reaches the guest image registry over http when checking digests.
	ImageRegistryPlainHTTP bool
	// Network is what the calls out of the cluster go through, the registry digest checks and the
	// chart sources: the CAs they trust and their proxy. The zero Network trusts the system's
	// roots and uses no proxy.
	Network outbound.Network
	// KubeAPIQPS limits the requests per second to the management cluster's API server, shared
	// by every client of the process; 0 sets no client-side limit (the API server's Priority and
	// Fairness protects it). KubeAPIBurst is the burst above it (0: twice the QPS).
	KubeAPIQPS   float32
	KubeAPIBurst int
	// HarvesterReadInterval is how often each Harvester cluster a range names is read through
	// Rancher for its networks, pools and VM addresses; negative reads none.
	HarvesterReadInterval time.Duration
	// Webhook is the admission webhook every replica serves, leader or not.
	Webhook WebhookOptions
}

// WebhookOptions configure the admission webhook. Port 0 serves none.
type WebhookOptions struct {
	// Port is the HTTPS port; the webhook binds to MetricsBind's address.
	Port int
	// Service is the webhook's Service in Namespace: the certificate is for its DNS names.
	Service string
	// Hosts are further names and addresses the certificate is for.
	Hosts []string
	// Secret is the Secret in Namespace that keeps the CA and the serving certificate.
	Secret string
	// Configuration is the ValidatingWebhookConfiguration whose caBundle the operator keeps.
	Configuration string
	// CertLifetime is the serving certificate's life (0: admission.DefaultCertLifetime).
	CertLifetime time.Duration
}

// hosts are the names the webhook's certificate must be valid for.
func (w WebhookOptions) hosts(namespace string) []string {
	var out []string
	if w.Service != "" {
		svc := w.Service + "." + namespace
		out = append(out, w.Service, svc, svc+".svc", svc+".svc.cluster.local")
	}
	return append(out, w.Hosts...)
}

// Operator is one running instance.
type Operator struct {
	opts     Options
	rest     *rest.Config
	scheme   *runtime.Scheme
	client   kubernetes.Interface
	metrics  *metrics.Metrics
	server   *metrics.Server
	store    *config.Store
	recorder record.EventRecorder
}

// DefaultOptions are the settings of an operator started with no flags: the one place every
// default lives (the flags show them; New fills in whatever an Options leaves zero).
func DefaultOptions() Options {
	return Options{
		Namespace:             "kube-fip",
		Threads:               5,
		LeaderElection:        true,
		FleetNamespace:        "fleet-default",
		GlobalDataNamespace:   "cattle-global-data",
		GuestWorkers:          10,
		GuestTimeout:          guest.DefaultTimeout,
		ServeGracePeriod:      2 * time.Minute,
		OrphanGracePeriod:     allocation.DefaultOrphanGracePeriod,
		HelmCacheDir:          filepath.Join(os.TempDir(), "kube-fip-operator-helm"),
		ChartPolicy:           installpolicy.Default(),
		GuestChartsDir:        chartarchive.DefaultGuestChartsDir,
		HarvesterReadInterval: harvesterview.DefaultInterval,
		Webhook: WebhookOptions{
			Service:       "kube-fip-operator-webhook",
			Secret:        "kube-fip-operator-webhook-tls",
			Configuration: "kube-fip-operator",
			CertLifetime:  admission.DefaultCertLifetime,
		},
	}
}

// withDefaults fills every zero setting of opts from DefaultOptions. The namespace has no
// fallback here: an operator started from code must name it.
func (opts Options) withDefaults() Options {
	d := DefaultOptions()
	opts.Threads = positiveOr(opts.Threads, d.Threads)
	opts.FleetNamespace = cmp.Or(opts.FleetNamespace, d.FleetNamespace)
	opts.GlobalDataNamespace = cmp.Or(opts.GlobalDataNamespace, d.GlobalDataNamespace)
	opts.GuestWorkers = positiveOr(opts.GuestWorkers, d.GuestWorkers)
	opts.ServeGracePeriod = positiveOr(opts.ServeGracePeriod, d.ServeGracePeriod)
	opts.GuestTimeout = positiveOr(opts.GuestTimeout, d.GuestTimeout)
	opts.OrphanGracePeriod = positiveOr(opts.OrphanGracePeriod, d.OrphanGracePeriod)
	opts.HelmCacheDir = cmp.Or(opts.HelmCacheDir, d.HelmCacheDir)
	if opts.HarvesterReadInterval == 0 {
		opts.HarvesterReadInterval = d.HarvesterReadInterval
	}
	return opts
}

// positiveOr is v when it is above zero, else def: a negative count or duration is no setting.
func positiveOr[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// New prepares an operator for the cluster behind restConfig.
func New(restConfig *rest.Config, opts Options) (*Operator, error) {
	if opts.Namespace == "" {
		return nil, errors.New("the operator namespace must be set")
	}
	opts = opts.withDefaults()
	// client-go's default of 5 requests a second would make a burst of cluster creations or
	// deletions crawl; the API server's own Priority and Fairness protects it. One limiter for
	// every client of the process, when one is asked for.
	restConfig = rest.CopyConfig(restConfig)
	restConfig.RateLimiter = rateLimiter(opts.KubeAPIQPS, opts.KubeAPIBurst)
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	logrus.Infof("registry digest checks and chart sources trust %s", opts.Network)
	scheme := newScheme()
	broadcaster := newBroadcaster(client.CoreV1().Events(""))
	m := metrics.New()
	return &Operator{
		opts:     opts,
		rest:     restConfig,
		scheme:   scheme,
		client:   client,
		metrics:  m,
		server:   metrics.NewServer(m, opts.MetricsBind),
		store:    config.NewStore(config.Default()),
		recorder: newBudgetRecorder(broadcaster.NewRecorder(scheme, corev1.EventSource{Component: "kube-fip-operator"}), m, time.Now),
	}, nil
}

// Run serves metrics and health at once, then runs the controllers — under leader election when
// enabled — until ctx ends.
func (o *Operator) Run(ctx context.Context) error {
	o.loadInitialConfig(ctx)
	o.store.Subscribe(o.applyConfig)
	o.applyConfig(config.Config{}, o.store.Get())
	if err := o.serveWebhook(ctx); err != nil {
		return err
	}
	go o.server.Run(ctx)

	if !o.opts.LeaderElection {
		logrus.Warn("leader election is disabled: run only one replica like this")
		if err := o.start(ctx); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	}
	// A standby replica is healthy and ready to take over; it is not ready only while it leads
	// and its caches are still syncing.
	o.server.SetReady(true)
	logrus.Infof("waiting to acquire the leader Lease %s/%s", o.opts.Namespace, LeaseName)
	leader.RunOrDie(ctx, o.opts.Namespace, LeaseName, o.client, func(ctx context.Context) {
		logrus.Infof("acquired the leader Lease %s/%s", o.opts.Namespace, LeaseName)
		if err := o.start(ctx); err != nil {
			logrus.Fatalf("starting controllers: %v", err)
		}
	})
	return nil
}

// serveWebhook starts the admission webhook, when a port is set, in every replica: admission does
// not wait for the leader Lease, nor stop while it changes hands.
func (o *Operator) serveWebhook(ctx context.Context) error {
	w := o.opts.Webhook
	if w.Port == 0 {
		return nil
	}
	clients, err := kubefip.NewFactoryFromConfig(o.rest)
	if err != nil {
		return fmt.Errorf("creating the webhook's clients: %w", err)
	}
	api := clients.Kubefip().V1()
	certs := admission.NewCerts(o.client.CoreV1().Secrets(o.opts.Namespace), o.client.AdmissionregistrationV1().ValidatingWebhookConfigurations(),
		admission.CertOptions{Namespace: o.opts.Namespace, SecretName: w.Secret, Hosts: w.hosts(o.opts.Namespace), Lifetime: w.CertLifetime, Webhook: w.Configuration})
	deps := admission.Deps{
		Ranges: api.FloatingIPRange(), FloatingIPs: api.FloatingIP(), Allocations: api.FloatingIPAllocation(),
		Namespace: o.opts.Namespace, Policy: o.admissionPolicy,
	}
	if o.opts.HarvesterReadInterval >= 0 {
		if deps.Harvester, err = o.harvesterReader(); err != nil {
			return err
		}
	}
	v := admission.NewValidator(deps)
	server := admission.NewServer(o.opts.MetricsBind, w.Port, certs, v)
	o.server.AlsoReadyWhen(server.Ready)
	go func() {
		if err := server.Run(ctx); err != nil {
			logrus.Fatalf("serving the admission webhook: %v", err)
		}
	}()
	return nil
}

// loadInitialConfig reads kube-fip-config once before anything starts, so that the log level and
// the metrics port are right from the first line. The controller takes over from here.
func (o *Operator) loadInitialConfig(ctx context.Context) {
	getCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cm, err := o.client.CoreV1().ConfigMaps(o.opts.Namespace).Get(getCtx, config.ConfigMapName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		logrus.Infof("%s/%s not found: using the defaults", o.opts.Namespace, config.ConfigMapName)
	case err != nil:
		logrus.Warnf("reading %s/%s: %v; using the defaults until it can be read", o.opts.Namespace, config.ConfigMapName, err)
	default:
		cfg, problems := config.Parse(cm.Data, config.Default())
		for _, p := range problems {
			logrus.Warnf("%s/%s: %v", o.opts.Namespace, config.ConfigMapName, p)
		}
		o.store.Set(cfg)
	}
}

// applyConfig applies the options that act on the process itself.
func (o *Operator) applyConfig(old, updated config.Config) {
	if old.LogLevel != updated.LogLevel {
		logrus.SetLevel(updated.LogLevel)
		logrus.Infof("log level is %s", updated.LogLevel)
	}
	port := updated.MetricsPort
	if o.opts.MetricsPort != 0 {
		port = o.opts.MetricsPort
	}
	o.server.SetPort(port)
}

// start registers every controller on one shared controller factory and starts it.
func (o *Operator) start(ctx context.Context) error {
	o.server.SetReady(false)
	f, err := o.newFactories()
	if err != nil {
		return err
	}
	scf := f.Shared
	// The writes every new cluster makes (its FloatingIP, its allocation object, the FloatingIP's
	// status) read back only the metadata the API server gave the object.
	w, err := metawrite.New(o.rest)
	if err != nil {
		return err
	}
	ranges := f.Kubefip.Kubefip().V1().FloatingIPRange()
	fips := metawrite.FloatingIPs{FloatingIPController: f.Kubefip.Kubefip().V1().FloatingIP(), W: w}
	alloc := allocation.NewManager(allocation.Deps{
		Allocations: metawrite.Allocations{FloatingIPAllocationController: f.Kubefip.Kubefip().V1().FloatingIPAllocation(), W: w},
		Ranges:      ranges, FloatingIPs: fips, Metrics: o.metrics,
	}, allocation.Options{OrphanGracePeriod: o.opts.OrphanGracePeriod})
	if err := alloc.Register(); err != nil {
		return err
	}
	c := o.context(f, fips, alloc)
	for _, register := range []controllers.Register{
		configmap.Register, floatingiprange.Register, floatingip.Register, discovery.Register, guestcluster.Register, dns.Register,
	} {
		if err := register(ctx, c); err != nil {
			return err
		}
	}

	// Caches first, then the repair pass, then the workers: no FloatingIP is handled before every
	// address held is recorded by an allocation object, so that no worker claims ahead of an older
	// rightful holder, and no handler or guest pass reads a cache that is still filling.
	if err := waitForAPIs(ctx, o.client.Discovery(), 5*time.Second); err != nil {
		return err
	}
	if err := startInformers(ctx, scf.SharedCacheFactory(), o.client.Discovery(), c.Informers()); err != nil {
		return err
	}
	if !alloc.WaitForIndex(ctx) {
		return fmt.Errorf("the allocation index did not sync")
	}
	logrus.Info("caches synced")
	report, err := alloc.Repair(ctx)
	if err != nil {
		return fmt.Errorf("repairing allocations: %w", err)
	}
	report.Log()
	// The repair pass is repeated every operateGuestClusterInterval; with traceIpamData on, the
	// allocation table is logged after each.
	go alloc.Run(ctx, func() time.Duration { return o.store.Get().OperateGuestClusterInterval }, func() {
		if o.store.Get().TraceIPAMData {
			logrus.Infof("allocation table:\n%s", alloc.Table())
		}
	})

	if err := scf.Start(ctx, o.opts.Threads); err != nil {
		return fmt.Errorf("starting controllers: %w", err)
	}
	c.Start(ctx)
	logrus.Info("controllers running")
	o.server.SetReady(true)
	return nil
}

// context is what every controller registers with.
func (o *Operator) context(f *factories, fips kubefipcontrollers.FloatingIPController, alloc *allocation.Manager) *controllers.Context {
	return &controllers.Context{
		Namespace:           o.opts.Namespace,
		FleetNamespace:      o.opts.FleetNamespace,
		GlobalDataNamespace: o.opts.GlobalDataNamespace,

		FloatingIPs:          fips,
		Ranges:               f.Kubefip.Kubefip().V1().FloatingIPRange(),
		ConfigMaps:           f.Core.Core().V1().ConfigMap(),
		Namespaces:           f.Core.Core().V1().Namespace(),
		ProvisioningClusters: f.Provisioning.Provisioning().V1().Cluster(),
		ManagementClusters:   f.Management.Management().V3().Cluster(),
		Secrets:              o.client.CoreV1(),
		RestConfig:           o.rest,
		DNSEndpoints:         o.opts.DNSEndpoints,

		Alloc:    alloc,
		Store:    o.store,
		Metrics:  o.metrics,
		Recorder: o.recorder,

		FirstGuest: &controllers.FirstGuestStatus{},

		Guest: controllers.GuestOptions{
			Workers:                o.opts.GuestWorkers,
			Timeout:                o.opts.GuestTimeout,
			HelmCacheDir:           o.opts.HelmCacheDir,
			ChartLimits:            helminstall.DefaultLimits(),
			ChartPolicy:            o.opts.ChartPolicy,
			GuestCharts:            o.opts.GuestCharts,
			ChartCredentialsSecret: o.opts.ChartCredentialsSecret,
			ServeGracePeriod:       o.opts.ServeGracePeriod,
			ImagePullSecret:        o.opts.ImagePullSecret,
			Network:                o.opts.Network,
			Images:                 imagedigest.New(o.opts.Network, o.opts.ImageRegistryPlainHTTP, imagedigest.DefaultTimeout),
		},
		Harvester: o.harvesterOptions(),
	}
}

// rateLimiter is the one client-side limit every client of the process shares (rest.CopyConfig
// keeps the same limiter): none when qps is 0, so that a burst of new clusters is not throttled
// by the operator itself.
func rateLimiter(qps float32, burst int) flowcontrol.RateLimiter {
	if qps <= 0 {
		return flowcontrol.NewFakeAlwaysRateLimiter()
	}
	if burst <= 0 {
		burst = max(int(2*qps), 1)
	}
	return flowcontrol.NewTokenBucketRateLimiter(qps, burst)
}
