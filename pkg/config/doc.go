// Package config turns the data of the kube-fip-config ConfigMap into a typed,
// validated Config.
//
// The package is deliberately pure: it takes the ConfigMap's Data as a plain
// map[string]string and returns values, so the controller that watches the
// ConfigMap owns all Kubernetes access and all logging, and every rule here
// can be tested (and fuzzed) without a cluster.
//
// # Keys
//
// The key names and their defaults are a compatibility contract with the
// original kube-fip-operator, so existing ConfigMaps keep working unchanged.
// Keys are case-sensitive, as they always were; Keys lists them in a stable
// order.
//
// Each option is defined once, in options.go: its key, its field of Config and
// default, and its row in allOptions (parser, documentation and the shape the
// chart's values schema admits). go generate writes docs/configuration.md's
// table and the chart's config values and their schema from that table
// (Documentation), so adding an option touches options.go, its cases in
// parse_test.go, and the code that uses it.
//
// The interval is capped at one day because a longer period means guest
// clusters silently drift for days; anyone who wants that should disable the
// feature instead. addressRetention is how long the address of a deleted guest
// cluster stays retained for it, so that a cluster created again under the same
// Rancher provisioning namespace and name gets the same address back. It is a Go
// duration (24h, 90m, 30s; units are case-sensitive, so "1M" is refused rather
// than read as a minute) or, like the interval, a bare whole number of seconds;
// 0 turns retention off, and it is capped at one year so that a slip of a unit
// cannot hold an address for good. Booleans accept what strconv.ParseBool
// accepts, in any case.
// Scalar values are trimmed of surrounding white space, because block scalars
// in ConfigMap manifests commonly add a trailing newline. Chart values are
// kept verbatim in Chart.ValuesYAML; a YAML document with no content (only
// comments, "{}", "---" or null) is a valid, empty mapping.
//
// # Which value wins
//
// Parse(data, previous) decides each key independently:
//
//   - absent, or empty after trimming: the default. A key deleted from the
//     ConfigMap therefore reverts to its default rather than sticking at the
//     value it had before, exactly like the original operator.
//   - present and valid: the new value.
//   - present and invalid: the value from previous (the last good Config)
//     stays in force, and a KeyProblem is reported. If previous itself holds no
//     valid value for the key (say, a hand-built Config), the default is used,
//     so the result of Parse is always a valid Config. Pass Default(), not a
//     zero Config, the first time: the zero logrus.Level is PanicLevel and the
//     zero addressRetention turns retention off; both are valid and would be
//     kept.
//   - except kubevipGuestInstall: an invalid value makes it disabled until it
//     is fixed, because keeping the previous value would widen the scope after
//     a restart (the previous value is then the default, clusterlabel). A typo
//     never makes the operator install into more clusters.
//
// A chart version pins the chart, from the repository or, with a reference, from an OCI
// registry; empty means the pinned default pair. A reference without a version is reported as a
// warning against the reference, naming the default version it is installed at, since the
// registry may not hold that version.
//
// Unknown keys are ignored and reported as a KeyProblem with Warning set, naming
// the known key that is most likely meant, since a typo otherwise looks like a
// setting that has no effect.
//
// # Secrets
//
// Chart values may carry registry credentials or other secrets, so the text
// of kubevipChartValues and kubevipCloudProviderChartValues never appears in a
// KeyProblem or in Config.String; YAML errors are reduced to a line number and a
// fixed parser message. The values of unknown keys are never echoed either,
// since a misspelt values key is just as sensitive. A repository URL or chart
// reference holding credentials (user:password@host), a query or a fragment is
// refused; repository and registry credentials come from a Secret named at
// deployment level. Credentials and queries are masked wherever a URL is
// printed.
//
// # What this package does not decide
//
// Which chart sources, archives, images and values the configuration may use
// is not the ConfigMap's to decide: whoever can edit it would otherwise choose
// the code that runs as cluster-owner in every guest cluster. That is
// pkg/installpolicy's Policy, built from the deployment's flags (chart values):
// its Check reports the charts of a Config it refuses as Warning KeyProblems
// for the ConfigMap's Events, and the installer refuses to install them. This
// package only parses and checks the text.
package config
