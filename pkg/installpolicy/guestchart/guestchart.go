package guestchart

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/problem"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// Chart is one of the two charts the operator installs into guest clusters, by its upstream name.
type Chart string

const (
	// Kubevip is kube-vip's chart: a DaemonSet on the control-plane nodes, host-networked with
	// NET_ADMIN and NET_RAW.
	Kubevip Chart = "kube-vip"
	// CloudProvider is kube-vip-cloud-provider's chart: an unprivileged Deployment.
	CloudProvider Chart = "kube-vip-cloud-provider"
)

// Charts are both charts, in the order messages and tables list them.
func Charts() []Chart { return []Chart{Kubevip, CloudProvider} }

// The reasons of a refusal, as the Events and the KubevipInstalled condition show them.
const (
	ReasonSourceNotAllowed = v1.ReasonChartSourceNotAllowed
	ReasonValuesNotAllowed = v1.ReasonChartValuesNotAllowed
	ReasonChartRefused     = v1.ReasonChartRefused
	ReasonRenderRefused    = v1.ReasonRenderRefused
	ReasonKubevipRefused   = v1.ReasonKubevipRefused
)

// Refusal is something the policy does not allow. Key names the kube-fip-config key it comes
// from, when it comes from one; the message never holds credentials or a value as written, only
// key paths, image repositories and the allowed forms.
type Refusal struct {
	problem.Problem
	Key string
}

func (r *Refusal) Error() string {
	if r.Key == "" {
		return r.Message
	}
	return fmt.Sprintf("kube-fip-config key %q: %s", r.Key, r.Message)
}

// Refuse is a *Refusal with reason, for key ("" for none).
func Refuse(reason, key, format string, args ...interface{}) *Refusal {
	return &Refusal{Key: key, Problem: *problem.New(reason, format, args...)}
}

// MaxEcho bounds how much of something read from input a message repeats.
const MaxEcho = 100

// Shorten clips what a message repeats of something read from input to MaxEcho.
func Shorten(s string) string { return redact.Shorten(s, MaxEcho) }

// SplitImage splits a full image reference, as a pod spec holds it, into repository, tag and
// digest. A reference without a tag has tag "".
func SplitImage(ref string) (repo, tag, digest string) {
	name, digest, _ := strings.Cut(ref, "@")
	repo = name
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		repo, tag = name[:i], name[i+1:]
	}
	return repo, tag, digest
}

// Digest is "sha256:<hex>" of data: how chart archives and approved manifests are known.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
