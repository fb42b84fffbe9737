package guestcluster

import (
	"errors"
	"slices"
	"strings"
	"testing"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/test/rig/fakes"
)

// TestHandOver: a guest that no longer wants the operator's kube-vip keeps the operator's releases
// while the Harvester cloud provider's kube-vip has no ready pod (or cannot be read, or the
// uninstall fails), says so and looks again soon (at the usual interval when the guest has no
// Harvester kube-vip to hand over to); once Harvester's serves, the releases are
// uninstalled, forgotten, and an Event says so. A guest that wants the operator's kube-vip, or
// whose releases are forgotten, is not touched.
func TestHandOver(t *testing.T) {
	remembered := []v1.GuestRelease{
		{Namespace: "kube-system", Name: "kube-vip", Chart: "kube-vip-0.9.0", Revision: 1, ManifestDigest: "sha256:aa"},
		{Namespace: "kube-system", Name: "kube-vip-cloud-provider", Chart: "kube-vip-cloud-provider-0.2.10", Revision: 1, ManifestDigest: "sha256:bb"},
	}
	newHandOverWorld := func() *world {
		w := newWorld()
		f := w.fip(t).DeepCopy()
		f.Status.KubevipReleases = remembered
		w.fips = fakes.NewFloatingIPs(f)
		w.cfg.KubevipGuestInstall = config.InstallDisabled
		return w
	}

	for _, tc := range []struct {
		name      string
		harvester func() (kubevipconfig.HarvesterKubevip, string, error)
		why       string
		soon      bool
	}{
		{"Harvester's kube-vip not ready", func() (kubevipconfig.HarvesterKubevip, string, error) {
			return kubevipconfig.HarvesterKubevipStarting, "none of the 1 pods is ready", nil
		}, "none of the 1 pods is ready", true},
		{"Harvester's kube-vip not read", func() (kubevipconfig.HarvesterKubevip, string, error) {
			return kubevipconfig.HarvesterKubevipStarting, "", errors.New("the guest did not answer")
		}, "the guest did not answer", true},
		{"no Harvester kube-vip", func() (kubevipconfig.HarvesterKubevip, string, error) {
			return kubevipconfig.HarvesterKubevipAbsent, "the guest has no DaemonSet kube-system/kube-vip", nil
		}, "the guest has no DaemonSet kube-system/kube-vip", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newHandOverWorld()
			w.guest.harvester = tc.harvester
			got, _ := w.pass(t, testCluster+"-kubevip")
			if len(w.guest.removed) != 0 {
				t.Errorf("releases removed while Harvester's kube-vip does not serve: %v", w.guest.removed)
			}
			c, _ := v1.GetCondition(got.Status.Conditions, v1.KubevipInstalled)
			if c.Reason != v1.ReasonHandOverPending || !strings.Contains(c.Message, tc.why) || !strings.Contains(c.Message, "kube-system/kube-vip-cloud-provider") {
				t.Errorf("KubevipInstalled = %s %q; want %s naming the releases and %q", c.Reason, c.Message, v1.ReasonHandOverPending, tc.why)
			}
			if !slices.Equal(got.Status.KubevipReleases, remembered) {
				t.Errorf("releases remembered = %v; want them kept", got.Status.KubevipReleases)
			}
			if soon := w.after == handOverRecheck; soon != tc.soon {
				t.Errorf("next pass after %s; want it soon (%s): %v", w.after, handOverRecheck, tc.soon)
			}
		})
	}

	t.Run("uninstall fails", func(t *testing.T) {
		w := newHandOverWorld()
		w.guest.removeProblem = "uninstalling kube-system/kube-vip: the guest refused"
		got, _ := w.pass(t, testCluster+"-kubevip")
		c, _ := v1.GetCondition(got.Status.Conditions, v1.KubevipInstalled)
		if c.Reason != v1.ReasonHandOverPending || !strings.Contains(c.Message, "the guest refused") || !slices.Equal(got.Status.KubevipReleases, remembered) || w.after != handOverRecheck {
			t.Errorf("after a failed uninstall: KubevipInstalled %s %q, releases %v, next pass after %s; want pending, the releases kept, soon",
				c.Reason, c.Message, got.Status.KubevipReleases, w.after)
		}
	})

	t.Run("Harvester's kube-vip serves", func(t *testing.T) {
		w := newHandOverWorld()
		got, events := w.pass(t, testCluster+"-kubevip")
		if !slices.Equal(w.guest.removed, remembered) {
			t.Errorf("removed %v; want %v", w.guest.removed, remembered)
		}
		if len(got.Status.KubevipReleases) != 0 {
			t.Errorf("releases still remembered after the hand-over: %v", got.Status.KubevipReleases)
		}
		if c, _ := v1.GetCondition(got.Status.Conditions, v1.KubevipInstalled); c.Reason != v1.ReasonNotWanted {
			t.Errorf("KubevipInstalled = %s %q; want %s", c.Reason, c.Message, v1.ReasonNotWanted)
		}
		if !slices.ContainsFunc(events, func(e string) bool {
			return strings.Contains(e, v1.ReasonKubevipHandedOver) && strings.Contains(e, "release kube-system/kube-vip uninstalled")
		}) {
			t.Errorf("no %s Event naming the uninstalled release: %q", v1.ReasonKubevipHandedOver, events)
		}
		if w.after == handOverRecheck {
			t.Errorf("next pass soon after a finished hand-over")
		}
	})

	t.Run("wanted", func(t *testing.T) {
		w := newHandOverWorld()
		w.cfg.KubevipGuestInstall = config.InstallEnabled
		w.pass(t, testCluster+"-kubevip")
		if len(w.guest.removed) != 0 {
			t.Errorf("releases removed from a guest that wants the operator's kube-vip: %v", w.guest.removed)
		}
	})
}
