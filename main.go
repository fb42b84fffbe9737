//go:generate go run ./pkg/codegen

// Command kube-fip-operator gives every Rancher guest cluster on Harvester a floating IP from a
// FloatingIPRange and configures kube-vip in the guest cluster to use it.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rancher/wrangler/v2/pkg/kubeconfig"
	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"
	"golang.org/x/net/http/httpproxy"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubefip/kube-fip-operator/pkg/cleanup"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartarchive"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartsource"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/imagepolicy"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/render"
	"github.com/kubefip/kube-fip-operator/pkg/memlimit"
	"github.com/kubefip/kube-fip-operator/pkg/operator"
	"github.com/kubefip/kube-fip-operator/pkg/outbound"
	"github.com/kubefip/kube-fip-operator/pkg/profiling"
	"github.com/kubefip/kube-fip-operator/pkg/version"
)

func main() {
	if err := newApp().Run(os.Args); err != nil {
		logrus.Fatal(err)
	}
}

// settings are the command line of the operator; every flag also reads an environment variable.
type settings struct {
	opts           operator.Options
	kubeconfig     string
	logLevel       string
	chartSources   string
	allowHTTP      bool
	imagePrefixes  string
	kubevipImages  string
	providerImages string
	kubevipModes   string
	guestNS        string
	chartDigests   string
	chartCreds     string
	guestCharts    string
	imageRegistry  string
	additionalCAs  string
	requireDigests bool
	kubeAPIQPS     float64
	webhookHosts   string
	containerLimit string
	memoryRatio    float64
	profiling      string
	renderRetry    time.Duration
	renderTime     time.Duration
}

// renderCommand is the hidden command that renders one guest chart in a process of its own.
const renderCommand = "render-chart"

// cleanupSettings are the command line of the cleanup command.
type cleanupSettings struct {
	opts       cleanup.Options
	guests     string
	kubeconfig string
	logLevel   string
	mode       string
}

func newApp() *cli.App {
	s := settings{opts: operator.DefaultOptions()}
	c := cleanupSettings{opts: cleanup.Options{Namespace: s.opts.Namespace}}
	return &cli.App{
		Name:    "kube-fip-operator",
		Usage:   "gives every Rancher guest cluster on Harvester a floating IP and makes kube-vip in it use that address",
		Version: fmt.Sprintf("%s (%s)", version.Version, version.GitCommit),
		Flags:   s.flags(),
		Action:  s.run,
		Commands: []*cli.Command{{
			Name:   "cleanup",
			Usage:  "stop the operator and release or delete its FloatingIPs and FloatingIPRanges (the chart's pre-delete hook)",
			Flags:  c.flags(),
			Action: c.run,
		}, {
			// The operator starts it for every render of a guest chart, so that a template's
			// memory and time are bounded by a process of their own (pkg/installpolicy).
			Name:   renderCommand,
			Usage:  "render one guest chart as the operator asks on stdin, within the memory it names",
			Hidden: true,
			Action: func(*cli.Context) error { return render.Serve(os.Stdin, os.Stdout) },
		}},
	}
}

func kubeconfigFlag(dest *string) cli.Flag {
	return &cli.StringFlag{Name: "kubeconfig", EnvVars: []string{"KUBECONFIG"}, Destination: dest,
		Usage: "kubeconfig of the Rancher management cluster; in-cluster configuration when empty"}
}

func logLevelFlag(dest *string) cli.Flag {
	return &cli.StringFlag{Name: "log-level", EnvVars: []string{"LOG_LEVEL"}, Value: "info", Destination: dest,
		Usage: "log level (the operator's kube-fip-config logLevel takes over once it is read)"}
}

func (s *settings) flags() []cli.Flag {
	o := &s.opts
	return []cli.Flag{
		kubeconfigFlag(&s.kubeconfig),
		logLevelFlag(&s.logLevel),
		&cli.StringFlag{Name: "namespace", EnvVars: []string{"NAMESPACE"}, Value: o.Namespace, Destination: &o.Namespace,
			Usage: "namespace of kube-fip-config, the leader Lease and the operator's Events"},
		&cli.IntFlag{Name: "threads", EnvVars: []string{"THREADS"}, Value: o.Threads, Destination: &o.Threads,
			Usage: "workers per controller"},
		&cli.BoolFlag{Name: "leader-election", EnvVars: []string{"LEADER_ELECTION"}, Value: o.LeaderElection, Destination: &o.LeaderElection,
			Usage: "run the controllers only in the replica holding the leader Lease"},
		&cli.StringFlag{Name: "metrics-bind-address", EnvVars: []string{"METRICS_BIND_ADDRESS"}, Destination: &o.MetricsBind,
			Usage: "address the metrics server binds to, all interfaces when empty"},
		&cli.IntFlag{Name: "metrics-port", EnvVars: []string{"METRICS_PORT"}, Destination: &o.MetricsPort,
			Usage: "port of /metrics, /healthz and /readyz, overriding the metricsPort option when set"},
		&cli.StringFlag{Name: "fleet-namespace", EnvVars: []string{"FLEET_NAMESPACE"}, Value: o.FleetNamespace, Destination: &o.FleetNamespace,
			Usage: "Rancher's namespace of provisioning clusters and their kubeconfig Secrets"},
		&cli.StringFlag{Name: "global-data-namespace", EnvVars: []string{"GLOBAL_DATA_NAMESPACE"}, Value: o.GlobalDataNamespace, Destination: &o.GlobalDataNamespace,
			Usage: "Rancher's namespace of cloud credentials"},
		&cli.IntFlag{Name: "guest-workers", EnvVars: []string{"GUEST_WORKERS"}, Value: o.GuestWorkers, Destination: &o.GuestWorkers,
			Usage: "guest clusters operated on at once"},
		&cli.DurationFlag{Name: "guest-timeout", EnvVars: []string{"GUEST_TIMEOUT"}, Value: o.GuestTimeout, Destination: &o.GuestTimeout,
			Usage: "timeout of every request to a guest cluster"},
		&cli.DurationFlag{Name: "harvester-read-interval", EnvVars: []string{"HARVESTER_READ_INTERVAL"}, Value: o.HarvesterReadInterval, Destination: &o.HarvesterReadInterval,
			Usage: "how often each Harvester cluster a range names is read through Rancher for its networks, load balancer and DHCP pools and VM addresses; a negative value reads none"},
		&cli.DurationFlag{Name: "serve-grace-period", EnvVars: []string{"SERVE_GRACE_PERIOD"}, Value: o.ServeGracePeriod, Destination: &o.ServeGracePeriod,
			Usage: "how long kube-vip has to start and to bind an address a guest asks for before the FloatingIP says it is not served"},
		&cli.StringFlag{Name: "helm-cache-dir", EnvVars: []string{"HELM_CACHE_HOME"}, Value: o.HelmCacheDir, Destination: &o.HelmCacheDir,
			Usage: "writable directory for Helm's repository and registry caches"},
		&cli.StringFlag{Name: "allowed-chart-sources", EnvVars: []string{"ALLOWED_CHART_SOURCES"}, Value: strings.Join(chartsource.DefaultChartSources(), ","), Destination: &s.chartSources,
			Usage: "chart repository URLs and oci:// prefixes that kube-fip-config may install from, comma-separated; a port of * matches any port"},
		&cli.BoolFlag{Name: "allow-http-chart-sources", EnvVars: []string{"ALLOW_HTTP_CHART_SOURCES"}, Destination: &s.allowHTTP,
			Usage: "allow plain http chart repositories and loopback OCI registries"},
		&cli.StringFlag{Name: "allowed-kubevip-images", EnvVars: []string{"ALLOWED_KUBEVIP_IMAGES"}, Value: strings.Join(imagepolicy.DefaultKubevipImages(), ","), Destination: &s.kubevipImages,
			Usage: "the exact image repositories (registry/path, no tag) kube-vip's DaemonSet may run, comma-separated"},
		&cli.StringFlag{Name: "allowed-cloud-provider-images", EnvVars: []string{"ALLOWED_CLOUD_PROVIDER_IMAGES"}, Value: strings.Join(imagepolicy.DefaultCloudProviderImages(), ","), Destination: &s.providerImages,
			Usage: "the exact image repositories kube-vip-cloud-provider's Deployment may run, comma-separated"},
		&cli.StringFlag{Name: "allowed-kubevip-modes", EnvVars: []string{"ALLOWED_KUBEVIP_MODES"}, Destination: &s.kubevipModes,
			Usage: "kube-vip modes beyond ARP for Services whose variables kube-fip-config may set, comma-separated: bgp, routingtable, dhcp, controlplane"},
		&cli.StringFlag{Name: "allowed-guest-namespaces", EnvVars: []string{"ALLOWED_GUEST_NAMESPACES"}, Value: strings.Join(installpolicy.DefaultNamespaces(), ","), Destination: &s.guestNS,
			Usage: "guest namespaces kubevipNamespace may name, comma-separated: kube-vip runs there host-networked with NET_ADMIN"},
		&cli.StringFlag{Name: "allowed-chart-digests", EnvVars: []string{"ALLOWED_CHART_DIGESTS"}, Destination: &s.chartDigests,
			Usage: "chart archives, beyond the pinned ones, that may be installed: <chart>@sha256:<hex>, comma-separated"},
		&cli.DurationFlag{Name: "render-time", EnvVars: []string{"RENDER_TIME"}, Value: render.DefaultBudget().Time, Destination: &s.renderTime,
			Usage: "how long the render of a guest chart may take before its process is ended and the chart refused for those values"},
		&cli.DurationFlag{Name: "render-retry", EnvVars: []string{"RENDER_RETRY"}, Value: render.DefaultBudget().Retry, Destination: &s.renderRetry,
			Usage: "how long a guest chart whose render overran its budget is refused for the same values before it is rendered again; doubles while it keeps overrunning"},
		&cli.StringFlag{Name: "guest-charts-dir", EnvVars: []string{"GUEST_CHARTS_DIR"}, Value: chartarchive.DefaultGuestChartsDir, Destination: &s.guestCharts,
			Usage: "directory of the pinned chart archives the image ships, installed without fetching; missing: they are fetched"},
		&cli.StringFlag{Name: "allowed-image-prefixes", EnvVars: []string{"ALLOWED_IMAGE_PREFIXES"}, Destination: &s.imagePrefixes, Hidden: true,
			Usage: "replaced by --allowed-kubevip-images and --allowed-cloud-provider-images"},
		&cli.StringFlag{Name: "security-secret", EnvVars: []string{"SECURITY_SECRET"}, Destination: &o.SecuritySecret,
			Usage: "Secret in --namespace that holds the deployment's security settings (the chart's security.*, key " + installpolicy.SecretKey + "), " +
				"read at start and at every write of kube-fip-config the webhook judges; it replaces the " + strings.Join(securityFlags(), ", ") + " flags"},
		&cli.StringFlag{Name: "chart-credentials-secret", EnvVars: []string{"CHART_CREDENTIALS_SECRET"}, Destination: &s.chartCreds,
			Usage: "Secret in --namespace with the keys username, password and source (the one chart source, scheme://host[:port], they are sent to)"},
		&cli.StringFlag{Name: "guest-image-registry", EnvVars: []string{"GUEST_IMAGE_REGISTRY"}, Destination: &s.imageRegistry,
			Usage: "registry (host[:port][/path]) every guest image comes from, as Rancher's system default registry prefixes its charts' images: " +
				"the allowed images are then the pinned ones under it, and the allowed-*-images lists are not read; empty: the upstream registries"},
		&cli.BoolFlag{Name: "require-image-digests", EnvVars: []string{"REQUIRE_IMAGE_DIGESTS"}, Destination: &s.requireDigests,
			Usage: "refuse a guest image not pinned by a digest, and check at the registry, before anything reaches a guest, that its tag still names that digest"},
		&cli.StringFlag{Name: "guest-image-pull-secret", EnvVars: []string{"GUEST_IMAGE_PULL_SECRET"}, Destination: &o.ImagePullSecret,
			Usage: "kubernetes.io/dockerconfigjson Secret in --namespace the guests pull the charts' images with: copied into each guest's release namespace as " +
				imagepolicy.GuestPullSecretName + ", and used to check digests"},
		&cli.BoolFlag{Name: "guest-image-registry-plain-http", EnvVars: []string{"GUEST_IMAGE_REGISTRY_PLAIN_HTTP"}, Destination: &o.ImageRegistryPlainHTTP,
			Usage: "reach the guest image registry over plain http when checking digests (the guests' container runtime must be told so too)"},
		&cli.StringFlag{Name: "additional-trusted-cas", EnvVars: []string{"ADDITIONAL_TRUSTED_CAS"}, Destination: &s.additionalCAs,
			Usage: "PEM bundle of CA certificates trusted beside the system's roots by the calls out of the cluster (registry digest checks, chart sources); " +
				"their proxy is that of HTTP_PROXY, HTTPS_PROXY and NO_PROXY"},
		&cli.Float64Flag{Name: "kube-api-qps", EnvVars: []string{"KUBE_API_QPS"}, Destination: &s.kubeAPIQPS,
			Usage: "requests per second to the management cluster's API server, shared by all of the operator's clients; 0 for no client-side limit (the API server's Priority and Fairness protects it)"},
		&cli.IntFlag{Name: "kube-api-burst", EnvVars: []string{"KUBE_API_BURST"}, Destination: &o.KubeAPIBurst,
			Usage: "burst above --kube-api-qps; 0 for twice the QPS"},
		&cli.BoolFlag{Name: "dns-endpoints", EnvVars: []string{"DNS_ENDPOINTS"}, Destination: &o.DNSEndpoints,
			Usage: "publish the DNS names FloatingIPRanges ask for (spec.dns) as external-dns DNSEndpoints (externaldns.k8s.io/v1alpha1) in the FloatingIPs' namespaces"},
		&cli.IntFlag{Name: "webhook-port", EnvVars: []string{"WEBHOOK_PORT"}, Destination: &o.Webhook.Port,
			Usage: "HTTPS port of the admission webhook every replica serves (at --metrics-bind-address); 0 serves none"},
		&cli.StringFlag{Name: "webhook-service", EnvVars: []string{"WEBHOOK_SERVICE"}, Value: o.Webhook.Service, Destination: &o.Webhook.Service,
			Usage: "the webhook's Service in --namespace, whose DNS names the serving certificate is for"},
		&cli.StringFlag{Name: "webhook-hosts", EnvVars: []string{"WEBHOOK_HOSTS"}, Destination: &s.webhookHosts,
			Usage: "further DNS names and IP addresses the serving certificate is for, comma-separated"},
		&cli.StringFlag{Name: "webhook-secret", EnvVars: []string{"WEBHOOK_SECRET"}, Value: o.Webhook.Secret, Destination: &o.Webhook.Secret,
			Usage: "Secret in --namespace that keeps the webhook's CA and serving certificate"},
		&cli.StringFlag{Name: "webhook-configuration", EnvVars: []string{"WEBHOOK_CONFIGURATION"}, Value: o.Webhook.Configuration, Destination: &o.Webhook.Configuration,
			Usage: "the ValidatingWebhookConfiguration whose caBundle the operator keeps; empty for none"},
		&cli.DurationFlag{Name: "webhook-cert-lifetime", EnvVars: []string{"WEBHOOK_CERT_LIFETIME"}, Value: o.Webhook.CertLifetime, Destination: &o.Webhook.CertLifetime,
			Usage: "life of the webhook's serving certificate, renewed when a third is left"},
		&cli.StringFlag{Name: "container-memory-limit", EnvVars: []string{"CONTAINER_MEMORY_LIMIT"}, Destination: &s.containerLimit,
			Usage: "the container's memory limit in bytes (the chart passes limits.memory through the Downward API); the Go runtime's soft limit follows it unless GOMEMLIMIT is set"},
		&cli.Float64Flag{Name: "memory-limit-ratio", EnvVars: []string{"MEMORY_LIMIT_RATIO"}, Value: memlimit.DefaultRatio, Destination: &s.memoryRatio,
			Usage: "the share of --container-memory-limit the Go runtime may hold before its collector works harder"},
		&cli.StringFlag{Name: "profiling-address", EnvVars: []string{"PROFILING_ADDRESS"}, Destination: &s.profiling,
			Usage: "host:port at which to serve the Go runtime's profiles (/debug/pprof/); off when empty. Keep it on loopback"},
		&cli.DurationFlag{Name: "orphan-grace-period", EnvVars: []string{"ORPHAN_GRACE_PERIOD"}, Value: o.OrphanGracePeriod, Destination: &o.OrphanGracePeriod,
			Usage: "how old a FloatingIPAllocation whose FloatingIP is gone must be before it is released"},
	}
}

// renderBudget is the default render budget with renders of limit at most, retried after retry.
func renderBudget(limit, retry time.Duration) render.Budget {
	b := render.DefaultBudget()
	if limit > 0 {
		b.Time = limit
	}
	if retry > 0 {
		b.Retry = retry
	}
	return b
}

// securityFlags are the flags of the deployment's security settings, which --security-secret
// replaces: the two are never mixed.
func securityFlags() []string {
	return []string{"--allowed-chart-sources", "--allow-http-chart-sources", "--allowed-kubevip-images", "--allowed-cloud-provider-images",
		"--allowed-chart-digests", "--allowed-kubevip-modes", "--allowed-guest-namespaces", "--chart-credentials-secret"}
}

// deployment is the deployment's security settings as the flags give them.
func (s *settings) deployment() installpolicy.Deployment {
	return installpolicy.Deployment{
		ChartSources: s.chartSources, AllowHTTP: s.allowHTTP, KubevipImages: s.kubevipImages, CloudProviderImages: s.providerImages,
		ChartDigests: s.chartDigests, KubevipModes: s.kubevipModes, Namespaces: s.guestNS, ChartCredentialsSecret: s.chartCreds,
	}
}

// withSecurity completes opts with the deployment's security settings d, which come from source
// (named in errors, credentials where the chart credentials Secret's name was given).
func withSecurity(opts operator.Options, d installpolicy.Deployment, source, credentials string) (operator.Options, error) {
	policy, err := installpolicy.New(d.Apply(opts.PolicySettings))
	if err != nil {
		return opts, fmt.Errorf("%s: %w", source, err)
	}
	if secret := d.ChartCredentialsSecret; secret != "" && len(validation.IsDNS1123Subdomain(secret)) > 0 {
		return opts, fmt.Errorf("%s: %q is not a Secret name", credentials, secret)
	}
	opts.ChartPolicy, opts.ChartCredentialsSecret = policy, d.ChartCredentialsSecret
	return opts, nil
}

// readSecurity completes opts with the security settings of its security Secret, read once.
func readSecurity(ctx context.Context, restConfig *rest.Config, opts operator.Options) (operator.Options, error) {
	kube, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return opts, err
	}
	d, err := operator.ReadSecurity(ctx, kube.CoreV1(), opts.Namespace, opts.SecuritySecret)
	if err != nil {
		return opts, fmt.Errorf("--security-secret: %w", err)
	}
	where := fmt.Sprintf("--security-secret: the deployment's security Secret %s/%s", opts.Namespace, opts.SecuritySecret)
	return withSecurity(opts, d, where, where+": chartCredentialsSecret")
}

// options checks what the flags say and completes the operator's options from it. With
// --security-secret, the security settings are left to readSecurity.
func (s *settings) options(c *cli.Context) (operator.Options, error) {
	opts := s.opts
	if s.kubeAPIQPS < 0 {
		return opts, fmt.Errorf("--kube-api-qps: %v is not a number of requests per second", s.kubeAPIQPS)
	}
	opts.KubeAPIQPS = float32(s.kubeAPIQPS)
	if s.imagePrefixes != "" {
		return opts, errors.New("--allowed-image-prefixes (ALLOWED_IMAGE_PREFIXES) was replaced by --allowed-kubevip-images and " +
			"--allowed-cloud-provider-images: a prefix also allowed image variants that ship a shell; name the exact repositories instead")
	}
	self, err := os.Executable()
	if err != nil {
		return opts, fmt.Errorf("finding the operator's binary, which renders the guest charts: %w", err)
	}
	opts.PolicySettings = installpolicy.Settings{
		Registry:      s.imageRegistry,
		RequireDigest: s.requireDigests,
		PullSecret:    opts.ImagePullSecret != "",
		RenderCommand: []string{self, renderCommand},
		RenderBudget:  renderBudget(s.renderTime, s.renderRetry),
	}
	if opts.SecuritySecret == "" {
		opts, err = withSecurity(opts, s.deployment(), "--allowed-chart-sources, --allowed-kubevip-images, --allowed-cloud-provider-images, "+
			"--allowed-kubevip-modes, --allowed-guest-namespaces, --allowed-chart-digests, --guest-image-registry", "--chart-credentials-secret")
		if err != nil {
			return opts, err
		}
	} else {
		if len(validation.IsDNS1123Subdomain(opts.SecuritySecret)) > 0 {
			return opts, fmt.Errorf("--security-secret: %q is not a Secret name", opts.SecuritySecret)
		}
		for _, name := range securityFlags() {
			if c.IsSet(strings.TrimPrefix(name, "--")) {
				return opts, fmt.Errorf("%s: the security settings come from --security-secret alone; leave %s out", name, name)
			}
		}
	}
	opts.GuestChartsDir = s.guestCharts
	// admission.NewCerts trims the hosts and drops empty ones.
	opts.Webhook.Hosts = strings.Split(s.webhookHosts, ",")
	if opts.Webhook.Port < 0 || opts.Webhook.Port > 65535 {
		return opts, fmt.Errorf("--webhook-port: %d is not a port", opts.Webhook.Port)
	}
	if opts.Webhook.Port != 0 && len(validation.IsDNS1123Subdomain(opts.Webhook.Secret)) > 0 {
		return opts, fmt.Errorf("--webhook-secret: %q is not a Secret name", opts.Webhook.Secret)
	}
	if secret := opts.ImagePullSecret; secret != "" && len(validation.IsDNS1123Subdomain(secret)) > 0 {
		return opts, fmt.Errorf("--guest-image-pull-secret: %q is not a Secret name", secret)
	}
	// The proxy as Rancher's chart passes it, read here once: what the environment says at start
	// holds for the process's life.
	if opts.Network, err = outbound.Load(outbound.Settings{AdditionalCAFile: s.additionalCAs, Proxy: *httpproxy.FromEnvironment()}); err != nil {
		return opts, fmt.Errorf("--additional-trusted-cas, HTTP_PROXY, HTTPS_PROXY: %w", err)
	}
	return opts, nil
}

func (s *settings) run(c *cli.Context) error {
	if err := setupLogging(s.logLevel); err != nil {
		return err
	}
	logrus.Infof("kube-fip-operator %s (%s) starting", version.Version, version.GitCommit)
	opts, err := s.options(c)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	restConfig, err := managementConfig(s.kubeconfig)
	if err != nil {
		return err
	}
	if opts.SecuritySecret != "" {
		if opts, err = readSecurity(ctx, restConfig, opts); err != nil {
			return err
		}
	}
	limit, err := memlimit.Apply(os.Getenv, s.containerLimit, s.memoryRatio)
	if err != nil {
		return fmt.Errorf("--container-memory-limit, --memory-limit-ratio: %w", err)
	}
	logrus.Infof("Go runtime memory limit: %s", limit)
	logrus.Infof("Go garbage collector: %s", memlimit.GCPercent(os.Getenv))
	logrus.Infof("guest chart policy: %s; %s", opts.ChartPolicy, opts.ChartPolicy.Renders())
	bundle, notes, err := opts.ChartPolicy.Archives().LoadBundle(opts.GuestChartsDir)
	if err != nil {
		return fmt.Errorf("--guest-charts-dir: %w", err)
	}
	for _, n := range notes {
		logrus.Infof("bundled guest charts: %s", n)
	}
	opts.GuestCharts = bundle

	if s.profiling != "" {
		go func() {
			if err := profiling.Serve(ctx, s.profiling); err != nil {
				logrus.Errorf("serving Go profiles: %v", err)
			}
		}()
	}
	op, err := operator.New(restConfig, opts)
	if err != nil {
		return err
	}
	if err := op.Run(ctx); err != nil {
		return err
	}
	logrus.Info("stopped")
	return nil
}

func (c *cleanupSettings) flags() []cli.Flag {
	o := &c.opts
	return []cli.Flag{
		kubeconfigFlag(&c.kubeconfig),
		logLevelFlag(&c.logLevel),
		&cli.StringFlag{Name: "namespace", EnvVars: []string{"NAMESPACE"}, Value: o.Namespace, Destination: &o.Namespace,
			Usage: "namespace of the operator's Deployment"},
		&cli.StringFlag{Name: "deployment", Value: "kube-fip-operator", Destination: &o.Deployment,
			Usage: "the operator's Deployment, scaled to zero first; empty to stop none"},
		&cli.StringFlag{Name: "mode", Value: string(cleanup.ModeKeep), Destination: &c.mode,
			Usage: "keep: remove the operator's finalizers and keep every FloatingIP and FloatingIPRange for a reinstall; delete: delete them all"},
		&cli.DurationFlag{Name: "stop-timeout", Value: 2 * time.Minute, Destination: &o.StopTimeout,
			Usage: "how long to wait for the operator's pods to stop"},
		&cli.StringFlag{Name: "guests", Value: "keep", Destination: &c.guests,
			Usage: "keep: leave every guest serving its addresses; clean: uninstall the operator's releases, remove the ConfigMap keys it wrote and give the Harvester cloud provider's kube-vip back its nodes, in every reachable guest"},
		&cli.StringFlag{Name: "fleet-namespace", EnvVars: []string{"FLEET_NAMESPACE"}, Value: "fleet-default", Destination: &o.Guests.FleetNamespace,
			Usage: "namespace of Rancher's provisioning clusters and their kubeconfig Secrets"},
		&cli.DurationFlag{Name: "guests-timeout", Value: 2 * time.Minute, Destination: &o.Guests.Total,
			Usage: "how long the clean-up of all guests may take; guests not reached by then are reported"},
	}
}

func (c *cleanupSettings) run(ctx *cli.Context) error {
	if ctx.NArg() > 0 {
		return fmt.Errorf("cleanup takes no arguments, got %q", ctx.Args().Slice())
	}
	m, err := cleanup.ParseMode(c.mode)
	if err != nil {
		return fmt.Errorf("--mode: %w", err)
	}
	c.opts.Mode = m
	switch c.guests {
	case "keep":
	case "clean":
		c.opts.Guests.Clean = true
	default:
		return fmt.Errorf("--guests: %q is not keep or clean", c.guests)
	}
	if err := setupLogging(c.logLevel); err != nil {
		return err
	}
	logrus.Infof("kube-fip-operator %s (%s) cleaning up (%s)", version.Version, version.GitCommit, m)

	sigCtx, stop := signal.NotifyContext(ctx.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	restConfig, err := managementConfig(c.kubeconfig)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	_, err = cleanup.Run(sigCtx, kube, dyn, c.opts)
	return err
}

func setupLogging(level string) error {
	l, err := logrus.ParseLevel(level)
	if err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logrus.SetLevel(l)
	logrus.SetFormatter(&logrus.TextFormatter{FullTimestamp: true})
	return nil
}

// managementConfig is the connection to the management cluster: the kubeconfig at path, or the
// in-cluster one, under the operator's own user agent, so that the API server's audit log and
// metrics name the operator and its version.
func managementConfig(path string) (*rest.Config, error) {
	restConfig, err := kubeconfig.GetNonInteractiveClientConfig(path).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	restConfig.UserAgent = version.UserAgent()
	return restConfig, nil
}
