// Package dnsname names the FloatingIPs' addresses in DNS: the names a range's spec.dns gives a
// guest cluster, and the DNSEndpoint of external-dns (externaldns.k8s.io/v1alpha1) that
// publishes them.
package dnsname

import (
	"fmt"
	"strings"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// Defaults of a range's spec.dns.
const (
	DefaultName = ClusterPlaceholder
	DefaultTTL  = 60
	// ClusterPlaceholder stands for the guest cluster's name in spec.dns.name.
	ClusterPlaceholder = "{cluster}"
)

// maxName is the longest DNS name (RFC 1035, in its text form without the final dot), maxLabel
// the longest label.
const maxName, maxLabel = 253, 63

// Names renders the names dns gives the guest cluster named cluster: the name, then, when
// dns.Wildcard, the wildcard under it. Every label is judged as DNS takes it (RFC 1123: letters,
// digits and hyphens, no hyphen at either end, at most 63 characters; lowercase, as external-dns
// writes names), and so is the whole name; an error says what is wrong.
func Names(dns v1.RangeDNS, cluster string) ([]string, error) {
	if cluster == "" {
		return nil, fmt.Errorf("the FloatingIP names no guest cluster, so %s has no value", ClusterPlaceholder)
	}
	if dns.Zone == "" {
		return nil, fmt.Errorf("spec.dns.zone is empty")
	}
	tmpl := dns.Name
	if tmpl == "" {
		tmpl = DefaultName
	}
	name := strings.ReplaceAll(tmpl, ClusterPlaceholder, cluster) + "." + dns.Zone
	if err := judge(name); err != nil {
		return nil, fmt.Errorf("%q (spec.dns.name %q for guest cluster %q): %w", shorten(name), tmpl, shorten(cluster), err)
	}
	names := []string{name}
	if dns.Wildcard {
		wildcard := "*." + name
		if len(wildcard) > maxName {
			return nil, fmt.Errorf("the wildcard under %q is longer than %d characters", name, maxName)
		}
		names = append(names, wildcard)
	}
	return names, nil
}

// TTL is the records' time to live that dns asks for, in seconds.
func TTL(dns v1.RangeDNS) int64 {
	if dns.TTL <= 0 {
		return DefaultTTL
	}
	return dns.TTL
}

// judge says what keeps name from being a DNS name of lowercase RFC 1123 labels.
func judge(name string) error {
	if len(name) > maxName {
		return fmt.Errorf("longer than %d characters", maxName)
	}
	for _, label := range strings.Split(name, ".") {
		switch {
		case label == "":
			return fmt.Errorf("an empty label")
		case len(label) > maxLabel:
			return fmt.Errorf("the label %q is longer than %d characters", shorten(label), maxLabel)
		case label[0] == '-' || label[len(label)-1] == '-':
			return fmt.Errorf("the label %q begins or ends with a hyphen", label)
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return fmt.Errorf("the label %q has %q: only lowercase letters, digits and hyphens are allowed", shorten(label), r)
			}
		}
	}
	return nil
}

// shorten bounds a value read from an object for a message.
func shorten(s string) string { return redact.Shorten(s, 80) }
