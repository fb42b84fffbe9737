package config

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
)

// The ConfigMap keys. Their spelling is part of the compatibility contract.
const (
	KeyLogLevel                         = "logLevel"
	KeyOperateGuestClusterInterval      = "operateGuestClusterInterval"
	KeyMetricsPort                      = "metricsPort"
	KeyTraceIPAMData                    = "traceIpamData"
	KeyAddressRetention                 = "addressRetention"
	KeyServedAddressHold                = "servedAddressHold"
	KeyKubevipGuestInstall              = "kubevipGuestInstall"
	KeyKubevipUpdate                    = "kubevipUpdate"
	KeyKubevipNamespace                 = "kubevipNamespace"
	KeyKubevipReleaseName               = "kubevipReleaseName"
	KeyKubevipChartRepoURL              = "kubevipChartRepoUrl"
	KeyKubevipChartRef                  = "kubevipChartRef"
	KeyKubevipChartVersion              = "kubevipChartVersion"
	KeyKubevipChartValues               = "kubevipChartValues"
	KeyKubevipCloudProviderReleaseName  = "kubevipCloudProviderReleaseName"
	KeyKubevipCloudProviderChartRef     = "kubevipCloudProviderChartRef"
	KeyKubevipCloudProviderChartVersion = "kubevipCloudProviderChartVersion"
	KeyKubevipCloudProviderChartValues  = "kubevipCloudProviderChartValues"
)

// Config is the operator configuration. Build it with Default or Parse; a
// hand-built Config is not validated.
type Config struct {
	LogLevel                    logrus.Level
	OperateGuestClusterInterval time.Duration
	MetricsPort                 int
	TraceIPAMData               bool
	AddressRetention            time.Duration
	ServedAddressHold           time.Duration
	KubevipGuestInstall         InstallMode
	KubevipUpdate               bool
	KubevipNamespace            string
	Kubevip                     Chart
	KubevipCloudProvider        Chart
}

// Default returns the configuration used when the ConfigMap is empty. It is a
// function rather than a variable so that callers cannot change the defaults
// by mutating a shared value, and each call returns fresh Values maps.
func Default() Config {
	const repo = defaultRepoURL
	return Config{
		LogLevel:                    logrus.InfoLevel,
		OperateGuestClusterInterval: 480 * time.Second,
		MetricsPort:                 8080,
		TraceIPAMData:               false,
		AddressRetention:            DefaultAddressRetention,
		ServedAddressHold:           DefaultServedAddressHold,
		KubevipGuestInstall:         InstallClusterLabel,
		KubevipUpdate:               false,
		KubevipNamespace:            "kube-system",
		Kubevip: Chart{
			ReleaseName: "kube-vip",
			RepoURL:     repo,
			Version:     DefaultKubevipChartVersion,
			Values:      mustValues(DefaultKubevipChartValues),
			ValuesYAML:  DefaultKubevipChartValues,
		},
		KubevipCloudProvider: Chart{
			ReleaseName: "kube-vip-cloud-provider",
			RepoURL:     repo,
			Version:     DefaultKubevipCloudProviderChartVersion,
			Values:      mustValues(DefaultKubevipCloudProviderChartValues),
			ValuesYAML:  DefaultKubevipCloudProviderChartValues,
		},
	}
}

func mustValues(s string) map[string]interface{} {
	v, err := parseValues(s)
	if err != nil {
		panic("config: built-in default chart values do not parse: " + err.Error())
	}
	return v
}

// option is one key of kube-fip-config and everything known of it: how it is parsed and shown,
// and how the documentation and the chart describe it. allOptions is the one place an option is
// defined; go generate writes docs/configuration.md's table and the chart's config values and
// their schema from it (Documentation).
//
// set validates the whole value before touching c, so a failed set leaves c unchanged; get is
// set's inverse, used to carry a previous value forward through the same validation as a new one
// and to show the default.
type option struct {
	key string
	// def is the default as kube-fip-config holds it (the chart's default; empty for none), which
	// Parse reads as Default's value.
	def string
	// doc says what the option does and what it takes, in Markdown, with links written from the
	// repository root.
	doc string
	// chart is how the chart's values hold the option (config.<key>).
	chart     chartValue
	sensitive bool
	set       func(c *Config, v string) error
	get       func(c Config) string
	// onInvalid, when set, replaces keeping the previous value: it sets what
	// applies instead and says what that is.
	onInvalid func(c *Config) string
}

// allOptions is the single table of keys; its order is the order of Keys, of the Problems Parse
// returns and of the documentation. It is built on demand so that no caller can alter the rules
// by mutating a shared table.
func allOptions() []option {
	return []option{
		{
			key: KeyLogLevel, def: "Info", set: setLogLevel, get: getLogLevel,
			doc:   "Trace, Debug, Info, Warn, Error, Fatal or Panic, in any case; applies at once",
			chart: anyCaseWord("trace", "debug", "info", "warn", "warning", "error", "fatal", "panic"),
		},
		{
			key: KeyOperateGuestClusterInterval, def: "480", set: setInterval, get: getInterval,
			doc:   fmt.Sprintf("seconds between guest-cluster passes (1–%d)", int(MaxOperateGuestClusterInterval/time.Second)),
			chart: wholeNumber(1, int(MaxOperateGuestClusterInterval/time.Second)),
		},
		{
			key: KeyMetricsPort, def: "8080", set: setMetricsPort, get: getMetricsPort,
			doc: "port of `/metrics`, `/healthz` and `/readyz`; the server moves when it changes. The chart " +
				"also passes it as `--metrics-port`, so that the probes, the Service and the ServiceMonitor " +
				"find the server: change it in the chart's values, not in the ConfigMap",
			chart: integer(1, 65535),
		},
		boolOption(KeyTraceIPAMData, "false", "log the allocation table after each guest-cluster pass",
			func(c *Config) *bool { return &c.TraceIPAMData }),
		{
			key: KeyAddressRetention, def: "24h", set: setRetention, get: getRetention,
			doc: "how long the address of a deleted guest cluster stays reserved for it, so that a cluster " +
				"created again under the same Rancher provisioning namespace and name gets the same address " +
				"back: a duration such as `24h`, `90m` or `30s`, or whole seconds (`3600`); `0` releases the " +
				fmt.Sprintf("address at once; at most `%dh` (one year)", int(MaxAddressRetention/time.Hour)),
			chart: duration(int(MaxAddressRetention / time.Second)),
		},
		{
			key: KeyServedAddressHold, def: "24h", set: setServedAddressHold, get: getServedAddressHold,
			doc: "how long an address a FloatingIP gave up (moved to another range or address, or deleted " +
				"while its guest cluster runs) stays out of its range while the guest cannot be read: while " +
				"it can, the address stays kept as long as one of its Services asks for or holds it, and is " +
				"released once none does; a duration or whole seconds, as addressRetention; `0` releases such " +
				fmt.Sprintf("addresses at once, as releases before it did; at most `%dh` (30 days)", int(MaxServedAddressHold/time.Hour)),
			chart: duration(int(MaxServedAddressHold / time.Second)),
		},
		{
			key: KeyKubevipGuestInstall, def: string(InstallClusterLabel), set: setInstallMode, get: getInstallMode, onInvalid: installModeOnInvalid,
			doc: "`enabled` (every cluster), `disabled`, or `clusterlabel` (clusters labelled `kube-vip=true`), " +
				"in any case; an invalid value means `disabled` until it is fixed, also at start-up",
			chart: anyCaseWord(string(InstallEnabled), string(InstallDisabled), string(InstallClusterLabel)),
		},
		boolOption(KeyKubevipUpdate, "false", "upgrade the kube-vip releases when the chart version or values change",
			func(c *Config) *bool { return &c.KubevipUpdate }),
		textOption(KeyKubevipNamespace, "kube-system", "namespace of the kube-vip releases in the guest",
			textLike(dns1123Label), checkNamespace, func(c *Config) *string { return &c.KubevipNamespace }),
		textOption(KeyKubevipReleaseName, "kube-vip", "Helm release name of kube-vip",
			textLike(helmReleaseName), checkReleaseName, func(c *Config) *string { return &c.Kubevip.ReleaseName }),
		{
			key: KeyKubevipChartRepoURL, def: defaultRepoURL, set: setRepoURL, get: func(c Config) string { return c.Kubevip.RepoURL },
			doc:   "Helm repository of both charts, an `http` or `https` URL; no credentials, query or fragment in it",
			chart: textLike(httpURL),
		},
		textOption(KeyKubevipChartRef, "", "OCI reference of the kube-vip chart (`oci://<registry host>/<repository path>`); "+
			"set with `kubevipChartVersion`, wins over the repository URL",
			textLike(ociRef), checkChartRef, func(c *Config) *string { return &c.Kubevip.Ref }),
		textOption(KeyKubevipChartVersion, "", "version of the kube-vip chart, from the repository or the OCI reference; "+
			"empty: the pinned version "+DefaultKubevipChartVersion+" (see [The pinned chart and image pair]"+
			"(docs/design.md#the-pinned-chart-and-image-pair)); change it and the image tag together",
			version(), checkChartVersion, func(c *Config) *string { return &c.Kubevip.Version }),
		valuesOption(KeyKubevipChartValues, DefaultKubevipChartValues, "values of the kube-vip chart (YAML)", kubevip),
		textOption(KeyKubevipCloudProviderReleaseName, "kube-vip-cloud-provider", "Helm release name of kube-vip-cloud-provider",
			textLike(helmReleaseName), checkReleaseName, func(c *Config) *string { return &c.KubevipCloudProvider.ReleaseName }),
		textOption(KeyKubevipCloudProviderChartRef, "", "OCI reference of the kube-vip-cloud-provider chart",
			textLike(ociRef), checkChartRef, func(c *Config) *string { return &c.KubevipCloudProvider.Ref }),
		textOption(KeyKubevipCloudProviderChartVersion, "", "version of the kube-vip-cloud-provider chart; empty: the "+
			"pinned version "+DefaultKubevipCloudProviderChartVersion+", whose appVersion is the default image's tag",
			version(), checkChartVersion, func(c *Config) *string { return &c.KubevipCloudProvider.Version }),
		valuesOption(KeyKubevipCloudProviderChartValues, DefaultKubevipCloudProviderChartValues, "values of the kube-vip-cloud-provider chart (YAML)", cloudProvider),
	}
}

// Validation patterns. They are compiled once and only ever read.
var (
	// dns1123Label is Kubernetes' namespace rule, kept local so this package
	// needs no k8s imports.
	dns1123Label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// helmReleaseName is the pattern Helm 3 itself enforces.
	helmReleaseName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	// chartVersion is deliberately loose (a leading v and fewer than three
	// parts are common in chart tags); it exists to catch paste errors such
	// as URLs or ranges, not to implement SemVer.
	chartVersion = regexp.MustCompile(`^v?[0-9]+(\.[0-9]+){0,2}(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	// ociRef is the shape of a chart reference the chart's schema admits; checkChartRef judges
	// the rest.
	ociRef = regexp.MustCompile(`^oci://\S+$`)
	// httpURL is the same for a repository URL; setRepoURL judges the rest.
	httpURL = regexp.MustCompile(`^[Hh][Tt][Tt][Pp][Ss]?://\S+$`)
)

const (
	maxNamespaceLen   = 63
	maxReleaseNameLen = 53 // Helm's limit, so release-derived names fit in 63
	maxVersionLen     = 128
)

func setLogLevel(c *Config, v string) error {
	lvl, err := logrus.ParseLevel(strings.TrimSpace(v))
	if err != nil {
		return errors.New("must be one of trace, debug, info, warn, error, fatal, panic")
	}
	c.LogLevel = lvl
	return nil
}

func getLogLevel(c Config) string {
	// An out-of-range level renders as "unknown", which set rejects.
	return c.LogLevel.String()
}

func setInterval(c *Config, v string) error {
	maxSeconds := int(MaxOperateGuestClusterInterval / time.Second)
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > maxSeconds {
		return fmt.Errorf("must be a whole number of seconds between 1 and %d (one day)", maxSeconds)
	}
	c.OperateGuestClusterInterval = time.Duration(n) * time.Second
	return nil
}

func getInterval(c Config) string {
	d := c.OperateGuestClusterInterval
	if d <= 0 || d%time.Second != 0 {
		return ""
	}
	return strconv.FormatInt(int64(d/time.Second), 10)
}

// setRetention accepts a Go duration (24h, 90m, 30s) or, like operateGuestClusterInterval, a
// bare whole number of seconds. Units are case-sensitive, as in Go: "1M" is refused rather than
// read as one minute by someone who meant a month.
func setRetention(c *Config, v string) error {
	d, err := parseHold(v, MaxAddressRetention, "no retention", "one year")
	if err != nil {
		return err
	}
	c.AddressRetention = d
	return nil
}

// setServedAddressHold reads servedAddressHold as setRetention reads addressRetention.
func setServedAddressHold(c *Config, v string) error {
	d, err := parseHold(v, MaxServedAddressHold, "released at once", "30 days")
	if err != nil {
		return err
	}
	c.ServedAddressHold = d
	return nil
}

// parseHold reads a duration from 0 to limit: a Go duration or a bare whole number of seconds
// (within the limit; beyond it they lack a unit and are refused). zero and most say what 0 and
// limit mean, for the refusal.
func parseHold(v string, limit time.Duration, zero, most string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 && n <= int64(limit/time.Second) {
		v += "s"
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > limit {
		return 0, fmt.Errorf("must be a duration such as 24h, 90m or 30s, or a whole number of seconds, "+
			"from 0 (%s) to %dh (%s)", zero, limit/time.Hour, most)
	}
	return d, nil
}

func getRetention(c Config) string {
	d := c.AddressRetention
	if d < 0 || d > MaxAddressRetention {
		return ""
	}
	return d.String()
}

func getServedAddressHold(c Config) string {
	d := c.ServedAddressHold
	if d < 0 || d > MaxServedAddressHold {
		return ""
	}
	return d.String()
}

func setMetricsPort(c *Config, v string) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > 65535 {
		return errors.New("must be an integer between 1 and 65535")
	}
	c.MetricsPort = n
	return nil
}

func getMetricsPort(c Config) string { return strconv.Itoa(c.MetricsPort) }

func setInstallMode(c *Config, v string) error {
	m := InstallMode(strings.ToLower(strings.TrimSpace(v)))
	if !m.valid() {
		return fmt.Errorf("must be one of %s, %s, %s", InstallEnabled, InstallDisabled, InstallClusterLabel)
	}
	c.KubevipGuestInstall = m
	return nil
}

// installModeOnInvalid applies the narrowest mode for an invalid
// kubevipGuestInstall rather than the previous one: a typo must never widen
// what the operator installs, neither while it runs nor after a restart (when
// the previous value would be the default, clusterlabel).
func installModeOnInvalid(c *Config) string {
	c.KubevipGuestInstall = InstallDisabled
	return fmt.Sprintf("%s is %s until it is fixed", KeyKubevipGuestInstall, InstallDisabled)
}

func getInstallMode(c Config) string { return string(c.KubevipGuestInstall) }

func boolOption(key, def, doc string, field func(c *Config) *bool) option {
	return option{
		key:   key,
		def:   def,
		doc:   doc + "; `true` or `false`",
		chart: boolean(),
		set: func(c *Config, v string) error {
			// Lower-casing first makes "tRuE" work like every other
			// case-insensitive option; ParseBool alone only knows three spellings.
			b, err := strconv.ParseBool(strings.ToLower(strings.TrimSpace(v)))
			if err != nil {
				return errors.New("must be true or false")
			}
			*field(c) = b
			return nil
		},
		get: func(c Config) string { return strconv.FormatBool(*field(&c)) },
	}
}

// textOption is a string key that is stored trimmed once check accepts it.
func textOption(key, def, doc string, chart chartValue, check func(string) error, field func(c *Config) *string) option {
	return option{
		key:   key,
		def:   def,
		doc:   doc,
		chart: chart,
		set: func(c *Config, v string) error {
			v = strings.TrimSpace(v)
			if err := check(v); err != nil {
				return err
			}
			*field(c) = v
			return nil
		},
		get: func(c Config) string { return *field(&c) },
	}
}

func valuesOption(key, def, doc string, chart func(c *Config) *Chart) option {
	return option{
		key:       key,
		def:       def,
		doc:       doc,
		chart:     yamlText(),
		sensitive: true,
		set: func(c *Config, v string) error {
			values, err := parseValues(v)
			if err != nil {
				return err
			}
			ch := chart(c)
			ch.Values, ch.ValuesYAML = values, v
			return nil
		},
		get: func(c Config) string { return chart(&c).ValuesYAML },
	}
}

func checkNamespace(v string) error {
	if len(v) > maxNamespaceLen || !dns1123Label.MatchString(v) {
		return fmt.Errorf("must be a namespace name (DNS-1123 label): at most %d lower-case letters, digits or '-', "+
			"starting and ending with a letter or digit", maxNamespaceLen)
	}
	return nil
}

func checkReleaseName(v string) error {
	if len(v) > maxReleaseNameLen || !helmReleaseName.MatchString(v) {
		return fmt.Errorf("must be a Helm release name: at most %d lower-case letters, digits, '-' or '.', "+
			"starting and ending with a letter or digit", maxReleaseNameLen)
	}
	return nil
}

// setRepoURL sets both charts, because the original operator has a single
// repository key for kube-vip and its cloud provider. Credentials, a query or a
// fragment are refused: they would end up in messages, and repository
// credentials come from the Secret the deployment names.
func setRepoURL(c *Config, v string) error {
	v = strings.TrimSpace(v)
	// url.Parse errors quote the input, so they are not passed on.
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return errors.New("must be an absolute http or https URL, such as https://kube-vip.io/helm-charts")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.Contains(v, "@") {
		return errors.New("must not contain credentials, a query or a fragment; " +
			"repository credentials come from the Secret named by the deployment (chart-credentials-secret)")
	}
	c.Kubevip.RepoURL, c.KubevipCloudProvider.RepoURL = v, v
	return nil
}

func checkChartRef(v string) error {
	const want = "must be empty or an OCI chart reference oci://<registry host>/<repository path>"
	if !strings.HasPrefix(v, "oci://") {
		return errors.New(want)
	}
	u, err := url.Parse(v)
	if err != nil || u.Hostname() == "" || strings.Trim(u.Path, "/") == "" ||
		u.RawQuery != "" || u.Fragment != "" {
		return errors.New(want)
	}
	if u.User != nil {
		// Registry credentials come from the Secret named by the deployment,
		// never from the reference, so these could only leak.
		return errors.New("must not contain credentials; registry credentials come from the Secret " +
			"named by the deployment (chart-credentials-secret)")
	}
	return nil
}

func checkChartVersion(v string) error {
	if v == "" {
		return nil
	}
	if len(v) > maxVersionLen || !chartVersion.MatchString(v) {
		return errors.New("must be empty or a chart version such as 1.2.3 or v0.8.0-rc.1")
	}
	return nil
}
