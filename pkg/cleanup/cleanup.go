// Package cleanup is what the operator leaves behind when its chart is uninstalled, undone: the
// chart's pre-delete hook runs it as `kube-fip-operator cleanup`. The operator puts finalizers on
// FloatingIPs and FloatingIPRanges and on nothing else; once it is gone nobody removes them, and a
// FloatingIP with one holds its c-m-* namespace in Terminating when Rancher deletes the cluster.
//
// Both modes first stop the operator (its Deployment scaled to zero, its pods gone), so that it
// cannot put a finalizer back. ModeKeep then removes the operator's finalizers and keeps the
// objects with their addresses and the ranges' allocation records, for a later install to adopt;
// ModeDelete deletes every FloatingIP, FloatingIPAllocation and FloatingIPRange and removes the
// operator's finalizers from them, so that nothing is left. With Guests.Clean, every reachable
// guest is first given back as it was before the operator (guests.go), and the guests that could
// not be are kept in a ConfigMap the uninstall leaves (report.go).
package cleanup

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// Mode says what happens to the objects.
type Mode string

const (
	// ModeKeep removes the operator's finalizers and keeps the objects for a reinstall.
	ModeKeep Mode = "keep"
	// ModeDelete deletes every FloatingIP, FloatingIPAllocation and FloatingIPRange.
	ModeDelete Mode = "delete"
)

// ParseMode accepts "keep" and "delete".
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeKeep, ModeDelete:
		return m, nil
	}
	return "", fmt.Errorf("%q is not a clean-up mode: use %s or %s", s, ModeKeep, ModeDelete)
}

// Options describe one clean-up.
type Options struct {
	Mode Mode
	// Namespace and Deployment name the operator's Deployment, scaled to zero before anything else.
	// An empty Deployment, or one that does not exist, is not waited for.
	Namespace  string
	Deployment string
	// StopTimeout bounds the wait for the operator's pods to go; 2 minutes when zero.
	StopTimeout time.Duration
	// PollInterval is how often the pods are listed while waiting; 2 seconds when zero.
	PollInterval time.Duration
	// Guests says whether the guests are cleaned too, before the objects are.
	Guests GuestOptions
}

// Result counts what was done.
type Result struct {
	// Released are objects whose operator finalizer was removed.
	Released int
	// Deleted are objects deleted (ModeDelete).
	Deleted int
	// Blocked names objects that stay because of another controller's finalizer
	// ("floatingips ns/name"); the operator's own finalizers are never among the reasons.
	Blocked []string
	// Guests are what was done in each guest cluster, when the guests were cleaned.
	Guests []GuestOutcome
}

// kind is one of the operator's kinds and the finalizer the operator puts on it.
type kind struct {
	resource  schema.GroupVersionResource
	finalizer string
}

// kinds lists FloatingIPs, then the allocations that hold their addresses, then ranges: a range
// is deleted after the addresses it hands out. Allocations carry no finalizer: ModeKeep keeps
// them untouched, so a reinstall finds every address held as it was.
func kinds() []kind {
	return []kind{
		{v1.SchemeGroupVersion.WithResource(v1.FloatingIPResourceName), v1.FloatingIPFinalizer},
		{v1.SchemeGroupVersion.WithResource(v1.FloatingIPAllocationResourceName), ""},
		{v1.SchemeGroupVersion.WithResource(v1.FloatingIPRangeResourceName), v1.RangeFinalizer},
	}
}

// Run stops the operator, then releases or deletes its objects according to opts.Mode.
func Run(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, opts Options) (Result, error) {
	var res Result
	if _, err := ParseMode(string(opts.Mode)); err != nil {
		return res, err
	}
	opts.StopTimeout = cmp.Or(opts.StopTimeout, 2*time.Minute)
	opts.PollInterval = cmp.Or(opts.PollInterval, 2*time.Second)
	if err := stopOperator(ctx, kube, opts); err != nil {
		return res, err
	}
	if g := opts.Guests; g.Clean {
		g.Timeout = cmp.Or(g.Timeout, time.Minute)
		g.Total = cmp.Or(g.Total, 2*time.Minute)
		g.Workers = cmp.Or(g.Workers, 8)
		// Before the objects: what the guests hold is read from the FloatingIPs. A guest that
		// cannot be cleaned is reported and does not stop the uninstall.
		outcomes, err := cleanGuests(ctx, kube, dyn, g)
		if err != nil {
			logrus.Warnf("the guest clusters were not cleaned: %s", redact.Error(err))
		}
		logGuests(outcomes)
		res.Guests = outcomes
		keepReport(ctx, kube, opts, notCleaned(outcomes, err))
	}
	for _, k := range kinds() {
		if err := cleanKind(ctx, dyn, k, opts.Mode, &res); err != nil {
			return res, err
		}
	}
	for _, b := range res.Blocked {
		logrus.Warnf("%s keeps a finalizer of another controller and stays until that controller removes it", b)
	}
	logrus.Infof("clean-up (%s) done: %d finalizers removed, %d objects deleted", opts.Mode, res.Released, res.Deleted)
	return res, nil
}
