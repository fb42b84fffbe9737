package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kubefip/kube-fip-operator/pkg/problem"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// KeyProblem is one thing wrong with the ConfigMap. Problems never stop Parse;
// they say which value was ignored and what is in force instead. Its Reason
// is one of the Problem* constants, CamelCase so that it can serve as a
// Kubernetes event reason.
type KeyProblem struct {
	problem.Problem
	Key string
	// Value is the offending value, trimmed, with URL credentials masked and
	// cut to about 100 bytes. It is empty when the value must not be shown
	// (chart values, unknown keys) or is not the point (an incomplete
	// ref/version pair); Message then says everything.
	Value string
	// Warning marks problems that did not change which value is in force:
	// unknown keys, which are ignored, incomplete chart selections, which
	// are kept as given, and charts the deployment's Policy refuses. Only
	// invalid values are not warnings.
	Warning bool
	// Fallback says, for an invalid value, what is in force instead: the
	// previous value, or for kubevipGuestInstall the narrowest mode.
	Fallback string
}

// Reasons of a KeyProblem.
const (
	// ProblemInvalidValue: the value was rejected and the previous one (or
	// the default) stays in force.
	ProblemInvalidValue = "InvalidValue"
	// ProblemUnknownKey: the key is not a known option and was ignored.
	ProblemUnknownKey = "UnknownKey"
	// ProblemIncompleteChart: an OCI chart reference without its version; the
	// default version is used.
	ProblemIncompleteChart = "IncompleteChartSelection"
)

// Error formats the problem for logs and events, naming the ConfigMap so the
// reader knows where to fix it.
func (p KeyProblem) Error() string {
	if p.Value == "" {
		return fmt.Sprintf("%s key %q: %s", ConfigMapName, p.Key, p.Message)
	}
	return fmt.Sprintf("%s key %q: invalid value %q: %s", ConfigMapName, p.Key, p.Value, p.Message)
}

// Parse builds a Config from the ConfigMap data. Absent or empty keys take
// their default, valid keys their new value, and invalid keys keep the value
// from previous (the last good Config; pass Default() the first time) and add
// a KeyProblem. See the package comment for the full rules. Parse never fails and
// never modifies data or previous.
func Parse(data map[string]string, previous Config) (Config, []KeyProblem) {
	opts := allOptions()
	out := Default()
	var problems []KeyProblem

	for _, o := range opts {
		raw, ok := data[o.key]
		if !ok || strings.TrimSpace(raw) == "" {
			continue
		}
		err := o.set(&out, raw)
		if err == nil {
			continue
		}
		p := KeyProblem{Key: o.key, Problem: problem.Problem{Reason: ProblemInvalidValue, Message: err.Error()}}
		if o.sensitive {
			p.Message = "invalid value (not shown, it may contain secrets): " + p.Message
		} else {
			p.Value = echo(raw)
		}
		if o.onInvalid != nil {
			p.Fallback = o.onInvalid(&out)
		} else {
			p.Fallback = "the previous value stays in force"
			keepPrevious(o, &out, previous)
		}
		problems = append(problems, p)
	}

	problems = append(problems, checkPair(data, out.Kubevip, KeyKubevipChartRef, KeyKubevipChartVersion)...)
	problems = append(problems, checkPair(data, out.KubevipCloudProvider,
		KeyKubevipCloudProviderChartRef, KeyKubevipCloudProviderChartVersion)...)

	known := Keys()
	for _, k := range slices.Sorted(maps.Keys(data)) {
		if slices.Contains(known, k) {
			continue
		}
		msg := "unknown key, ignored"
		if s := suggest(k, opts); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		problems = append(problems, KeyProblem{Key: redact.Shorten(k, maxEcho), Problem: problem.Problem{Reason: ProblemUnknownKey, Message: msg}, Warning: true})
	}
	return out, problems
}

// keepPrevious restores the previous value of o into out by replaying it
// through o.set, which both validates it and, for chart values, yields a fresh
// map instead of one shared with previous. A previous value that is empty or
// invalid (a zero or hand-built Config) leaves the default in place, which
// out still holds because a failed set changes nothing.
func keepPrevious(o option, out *Config, previous Config) {
	if v := o.get(previous); strings.TrimSpace(v) != "" {
		_ = o.set(out, v)
	}
}

// checkPair reports an OCI chart reference without an explicit version: the version pinned for the
// upstream repository is used with it, which the registry may not hold. A version without a
// reference pins the chart of the repository and needs no reference.
func checkPair(data map[string]string, ch Chart, refKey, versionKey string) []KeyProblem {
	if ch.Ref == "" || strings.TrimSpace(data[versionKey]) != "" {
		return nil
	}
	return []KeyProblem{{
		Key:     refKey,
		Warning: true,
		Problem: *problem.New(ProblemIncompleteChart,
			"incomplete chart selection: %s is set but %s is empty, so the default version %s is used; set %s to the version to install",
			refKey, versionKey, ch.Version, versionKey),
	}}
}

func kubevip(c *Config) *Chart       { return &c.Kubevip }
func cloudProvider(c *Config) *Chart { return &c.KubevipCloudProvider }
