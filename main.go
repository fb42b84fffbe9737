//go:generate go run pkg/codegen/main.go

// Command kube-fip-operator gives every Rancher guest cluster on Harvester a floating IP from a
// FloatingIPRange and configures kube-vip in the guest cluster to use it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rancher/wrangler/v2/pkg/kubeconfig"
	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubefip/kube-fip-operator/pkg/cleanup"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/operator"
	"github.com/kubefip/kube-fip-operator/pkg/version"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "cleanup" {
		if err := cleanupCommand(os.Args[2:]); err != nil {
			logrus.Fatal(err)
		}
		return
	}

	defaults := operator.DefaultOptions()
	var (
		kubeconfigPath = flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the Rancher management cluster; in-cluster configuration when empty [$KUBECONFIG]")
		namespace      = flag.String("namespace", envOr("NAMESPACE", defaults.Namespace), "namespace of kube-fip-config, the leader Lease and the operator's Events [$NAMESPACE]")
		threads        = flag.Int("threads", envInt("THREADS", defaults.Threads), "workers per controller [$THREADS]")
		logLevel       = flag.String("log-level", envOr("LOG_LEVEL", "info"), "log level until kube-fip-config sets logLevel [$LOG_LEVEL]")
		leaderElection = flag.Bool("leader-election", envBool("LEADER_ELECTION", defaults.LeaderElection), "run the controllers only in the replica holding the leader Lease [$LEADER_ELECTION]")
		metricsBind    = flag.String("metrics-bind-address", os.Getenv("METRICS_BIND_ADDRESS"), "address the metrics server binds to, all interfaces when empty [$METRICS_BIND_ADDRESS]")
		metricsPort    = flag.Int("metrics-port", envInt("METRICS_PORT", 0), "port of /metrics, /healthz and /readyz, overriding the metricsPort option when set [$METRICS_PORT]")
		fleetNamespace = flag.String("fleet-namespace", envOr("FLEET_NAMESPACE", defaults.FleetNamespace), "Rancher's namespace of provisioning clusters and their kubeconfig Secrets [$FLEET_NAMESPACE]")
		globalDataNS   = flag.String("global-data-namespace", envOr("GLOBAL_DATA_NAMESPACE", defaults.GlobalDataNamespace), "Rancher's namespace of cloud credentials [$GLOBAL_DATA_NAMESPACE]")
		guestWorkers   = flag.Int("guest-workers", envInt("GUEST_WORKERS", defaults.GuestWorkers), "guest clusters operated on at once [$GUEST_WORKERS]")
		guestTimeout   = flag.Duration("guest-timeout", envDuration("GUEST_TIMEOUT", defaults.GuestTimeout), "timeout of every request to a guest cluster [$GUEST_TIMEOUT]")
		helmCacheDir   = flag.String("helm-cache-dir", envOr("HELM_CACHE_HOME", defaults.HelmCacheDir), "writable directory for Helm's repository and registry caches [$HELM_CACHE_HOME]")
		chartSources   = flag.String("allowed-chart-sources", envOr("ALLOWED_CHART_SOURCES", strings.Join(config.DefaultChartSources(), ",")), "comma-separated chart repository URLs and oci:// prefixes that kube-fip-config may install from; a port of * matches any port [$ALLOWED_CHART_SOURCES]")
		allowHTTP      = flag.Bool("allow-http-chart-sources", envBool("ALLOW_HTTP_CHART_SOURCES", false), "allow plain http chart repositories and loopback OCI registries [$ALLOW_HTTP_CHART_SOURCES]")
		imagePrefixes  = flag.String("allowed-image-prefixes", envOr("ALLOWED_IMAGE_PREFIXES", strings.Join(config.DefaultImagePrefixes(), ",")), "comma-separated image repository prefixes that chart values may name [$ALLOWED_IMAGE_PREFIXES]")
		credsSecret    = flag.String("chart-credentials-secret", os.Getenv("CHART_CREDENTIALS_SECRET"), "Secret in --namespace with the keys username and password for the chart repositories and registries [$CHART_CREDENTIALS_SECRET]")
		kubeAPIQPS     = flag.Float64("kube-api-qps", envFloat("KUBE_API_QPS", 0), "requests per second to the management cluster's API server, shared by all of the operator's clients; 0 for no client-side limit (the API server's Priority and Fairness protects it) [$KUBE_API_QPS]")
		kubeAPIBurst   = flag.Int("kube-api-burst", envInt("KUBE_API_BURST", 0), "burst above --kube-api-qps; 0 for twice the QPS [$KUBE_API_BURST]")
		orphanGrace    = flag.Duration("orphan-grace-period", envDuration("ORPHAN_GRACE_PERIOD", defaults.OrphanGracePeriod), "how old a FloatingIPAllocation whose FloatingIP is gone must be before it is released [$ORPHAN_GRACE_PERIOD]")
		showVersion    = flag.Bool("version", false, "print the version and exit")
	)
	flag.Usage = func() {
		out := flag.CommandLine.Output()
		fmt.Fprintf(out, "Usage: %s [flags]\n       %s cleanup [flags]   (what the chart's pre-delete hook runs; see cleanup -h)\n", os.Args[0], os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()

	if *showVersion {
		fmt.Printf("kube-fip-operator %s (%s)\n", version.Version, version.GitCommit)
		return
	}

	level, err := logrus.ParseLevel(*logLevel)
	if err != nil {
		logrus.Fatalf("--log-level: %v", err)
	}
	logrus.SetLevel(level)
	logrus.SetFormatter(&logrus.TextFormatter{FullTimestamp: true})
	logrus.Infof("kube-fip-operator %s (%s) starting", version.Version, version.GitCommit)

	policy, err := config.NewPolicy(strings.Split(*chartSources, ","), *allowHTTP, strings.Split(*imagePrefixes, ","))
	if err != nil {
		logrus.Fatalf("--allowed-chart-sources, --allowed-image-prefixes: %v", err)
	}
	logrus.Infof("guest chart policy: %s", policy)
	if *credsSecret != "" && len(validation.IsDNS1123Subdomain(*credsSecret)) > 0 {
		logrus.Fatalf("--chart-credentials-secret: %q is not a Secret name", *credsSecret)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	restConfig, err := kubeconfig.GetNonInteractiveClientConfig(*kubeconfigPath).ClientConfig()
	if err != nil {
		logrus.Fatalf("loading the kubeconfig: %v", err)
	}

	op, err := operator.New(restConfig, operator.Options{
		Namespace:      *namespace,
		Threads:        *threads,
		LeaderElection: *leaderElection,
		MetricsBind:    *metricsBind,
		MetricsPort:    *metricsPort,

		FleetNamespace:      *fleetNamespace,
		GlobalDataNamespace: *globalDataNS,
		GuestWorkers:        *guestWorkers,
		GuestTimeout:        *guestTimeout,
		OrphanGracePeriod:   *orphanGrace,
		HelmCacheDir:        *helmCacheDir,

		ChartPolicy:            policy,
		ChartCredentialsSecret: *credsSecret,

		KubeAPIQPS:   float32(*kubeAPIQPS),
		KubeAPIBurst: *kubeAPIBurst,
	})
	if err != nil {
		logrus.Fatal(err)
	}
	if err := op.Run(ctx); err != nil {
		logrus.Fatal(err)
	}
	logrus.Info("stopped")
}

// cleanupCommand stops the operator and releases or deletes its FloatingIPs and FloatingIPRanges:
// the chart's pre-delete hook runs it, with a ServiceAccount allowed only that.
func cleanupCommand(args []string) error {
	fs := flag.NewFlagSet("cleanup", flag.ContinueOnError)
	kubeconfigPath := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the Rancher management cluster; in-cluster configuration when empty [$KUBECONFIG]")
	namespace := fs.String("namespace", envOr("NAMESPACE", operator.DefaultOptions().Namespace), "namespace of the operator's Deployment [$NAMESPACE]")
	deployment := fs.String("deployment", "kube-fip-operator", "the operator's Deployment, scaled to zero first; empty to stop none")
	mode := fs.String("mode", string(cleanup.ModeKeep), "keep: remove the operator's finalizers and keep every FloatingIP and FloatingIPRange for a reinstall; delete: delete them all")
	stopTimeout := fs.Duration("stop-timeout", 2*time.Minute, "how long to wait for the operator's pods to stop")
	logLevel := fs.String("log-level", envOr("LOG_LEVEL", "info"), "log level [$LOG_LEVEL]")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("cleanup takes no arguments, got %q", fs.Args())
	}
	m, err := cleanup.ParseMode(*mode)
	if err != nil {
		return fmt.Errorf("--mode: %w", err)
	}
	level, err := logrus.ParseLevel(*logLevel)
	if err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logrus.SetLevel(level)
	logrus.SetFormatter(&logrus.TextFormatter{FullTimestamp: true})
	logrus.Infof("kube-fip-operator %s (%s) cleaning up (%s)", version.Version, version.GitCommit, m)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	restConfig, err := kubeconfig.GetNonInteractiveClientConfig(*kubeconfigPath).ClientConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	kube, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	_, err = cleanup.Run(ctx, kube, dyn, cleanup.Options{
		Mode: m, Namespace: *namespace, Deployment: *deployment, StopTimeout: *stopTimeout,
	})
	return err
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

func envFloat(key string, fallback float64) float64 {
	if v := os.Getenv(key); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
			return f
		}
		logrus.Fatalf("$%s: %q is not a number of requests per second", key, v)
	}
	return fallback
}

func envInt(key string, fallback int) int {
	if v := os.Getenv(key); v != "" {
		if i, err := strconv.Atoi(v); err == nil {
			return i
		}
		logrus.Fatalf("$%s: %q is not a number", key, v)
	}
	return fallback
}

func envDuration(key string, fallback time.Duration) time.Duration {
	if v := os.Getenv(key); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
		logrus.Fatalf("$%s: %q is not a duration such as 15s", key, v)
	}
	return fallback
}

func envBool(key string, fallback bool) bool {
	if v := os.Getenv(key); v != "" {
		if b, err := strconv.ParseBool(v); err == nil {
			return b
		}
		logrus.Fatalf("$%s: %q is not true or false", key, v)
	}
	return fallback
}
