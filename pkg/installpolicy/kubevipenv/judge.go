package kubevipenv

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
)

// EnvVar is one environment variable of a rendered container. FromRef marks a valueFrom, whose
// value a pod gets only at run time.
type EnvVar struct {
	Name    string
	Value   string
	FromRef bool
}

// Decision is what Judge made of one kube-vip container.
type Decision struct {
	Image      string
	Version    string
	Generation string
	// Env is the environment to render: the input with Translated applied.
	Env []EnvVar
	// Translated says what was changed, and why, one entry a variable.
	Translated []string
	// Ignored names variables this kube-vip does not read.
	Ignored []string
}

// Version reads the kube-vip release from an image reference's tag.
func Version(image string) (*semver.Version, error) {
	_, tag, _ := guestchart.SplitImage(image)
	if tag == "" {
		return nil, fmt.Errorf("image %s has no tag, so its kube-vip release is unknown: set image.tag to a release such as v1.0.0", image)
	}
	v, err := semver.NewVersion(tag)
	if err != nil {
		return nil, fmt.Errorf("image %s: tag %q is not a kube-vip release, so how it reads its environment is unknown: set image.tag to a release such as v1.0.0", image, tag)
	}
	return v, nil
}

// GenerationOf finds the generation of a kube-vip release.
func GenerationOf(v *semver.Version) (Generation, bool) {
	for _, g := range Generations() {
		if !v.LessThan(g.From) && (g.Before == nil || v.LessThan(g.Before)) {
			return g, true
		}
	}
	return Generation{}, false
}

// Judge decides whether the kube-vip of image reads env the way the chart means it; a
// refusal is a *Refusal with ReasonKubevipRefused. Values are quoted in messages only for the
// kinds that cannot hold a secret (numbers, booleans, subnets).
func Judge(image string, env []EnvVar) (Decision, error) {
	v, err := Version(image)
	if err != nil {
		return Decision{}, guestchart.Refuse(guestchart.ReasonKubevipRefused, "", "%v", err)
	}
	g, ok := GenerationOf(v)
	if !ok {
		oldest := Generations()[0].From
		return Decision{}, guestchart.Refuse(guestchart.ReasonKubevipRefused, "",
			"image %s: kube-vip %s is older than %s, the oldest release whose configuration the operator knows: set image.tag to v1.0.0 or later",
			image, v.Original(), oldest.Original())
	}
	d := Decision{Image: image, Version: v.Original(), Generation: g.Name}
	for _, e := range env {
		kind, known := g.Env[e.Name]
		switch {
		case !known:
			d.Ignored = append(d.Ignored, e.Name)
		case e.FromRef || e.Value == "":
			// A reference is resolved in the pod; kube-vip treats an empty value as unset.
		default:
			value, note, err := check(kind, e.Value)
			if err != nil {
				return Decision{}, guestchart.Refuse(guestchart.ReasonKubevipRefused, "",
					"image %s: kube-vip %s cannot use env %s: %v; change env.%s in kubevipChartValues",
					image, v.Original(), e.Name, err, e.Name)
			}
			if note != "" {
				d.Translated = append(d.Translated, fmt.Sprintf("env %s=%q %s (kube-vip %s %s)", e.Name, e.Value, note, v.Original(), describe(kind)))
				if value == nil {
					continue
				}
				e.Value = *value
			}
		}
		d.Env = append(d.Env, e)
	}
	sort.Strings(d.Ignored)
	return d, nil
}

// check parses value as kind. A translation returns the new value (nil: drop the variable) and a
// note saying what was done.
func check(kind EnvKind, value string) (*string, string, error) {
	var err error
	switch kind {
	case EnvBool:
		_, err = strconv.ParseBool(value)
	case EnvInt32:
		_, err = strconv.ParseInt(value, 10, 32)
	case EnvInt64:
		_, err = strconv.ParseInt(value, 10, 64)
	case EnvUint16:
		_, err = strconv.ParseUint(value, 10, 16)
	case EnvUint32:
		_, err = strconv.ParseUint(value, 10, 32)
	case EnvJSON:
		var m map[string]string
		err = json.Unmarshal([]byte(value), &m)
	case EnvSubnetSuffix:
		return suffixSubnet(value)
	case EnvSubnetBits:
		return bitsSubnet(value)
	}
	if err != nil {
		return nil, "", fmt.Errorf("it must be %s", describe(kind))
	}
	return nil, "", nil
}

func describe(kind EnvKind) string {
	switch kind {
	case EnvBool:
		return "true or false"
	case EnvInt32, EnvInt64:
		return "a whole number"
	case EnvUint16:
		return "a whole number from 0 to 65535"
	case EnvUint32:
		return "a whole number from 0 up"
	case EnvJSON:
		return "a JSON object of strings"
	case EnvSubnetSuffix:
		return `appends vip_subnet to the address as it is, so it must be "/<bits>" or unset`
	case EnvSubnetBits:
		return `reads vip_subnet as "<bits>" or "<IPv4 bits>,<IPv6 bits>"`
	}
	return "text"
}

// suffixSubnet: before v0.9.0 the value is appended to the address. The chart's "32" (or
// "32,128") means a host address in each family, which is what this kube-vip does with no value,
// so it is dropped; "/<bits>" is already its own form.
func suffixSubnet(value string) (*string, string, error) {
	if bits, ok := strings.CutPrefix(value, "/"); ok {
		if n, err := strconv.Atoi(bits); err == nil && n >= 0 && n <= 128 {
			return nil, "", nil
		}
		return nil, "", fmt.Errorf(`it must be "/<bits>", such as "/32"`)
	}
	parts := strings.Split(value, ",")
	if (len(parts) == 1 && parts[0] == "32") || (len(parts) == 2 && parts[0] == "32" && parts[1] == "128") {
		return nil, "is left out: without it this kube-vip uses the whole mask of the address's family, which the chart's value means", nil
	}
	return nil, "", fmt.Errorf(`this kube-vip appends vip_subnet to the address as it is: set it to "/<bits>", or leave it out for a host address, or use image v0.9.0 or later`)
}

// bitsSubnet: since v0.9.0 the value is a prefix length per family; the older "/32" form is
// translated by dropping the slashes.
func bitsSubnet(value string) (*string, string, error) {
	clean := strings.ReplaceAll(value, "/", "")
	parts := strings.Split(clean, ",")
	if len(parts) > 2 {
		return nil, "", fmt.Errorf(`it must be "<bits>" or "<IPv4 bits>,<IPv6 bits>"`)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 32 && i == 0 || n > 128 {
			return nil, "", fmt.Errorf(`it must be "<bits>" or "<IPv4 bits>,<IPv6 bits>", such as "32" or "32,128"`)
		}
	}
	if clean != value {
		return &clean, fmt.Sprintf("is passed on as %q", clean), nil
	}
	return nil, "", nil
}
