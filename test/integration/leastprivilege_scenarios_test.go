package integration

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/operator"
	"github.com/kubefip/kube-fip-operator/pkg/testenv"
)

// scenarioNames are the scenarios of a run, in order.
func (e *lpEnv) scenarioNames() []string {
	return []string{scenarioStartupConfig, scenarioLeader, scenarioStart, scenarioContention, scenarioDiscovery, scenarioAllocation,
		scenarioGuest, scenarioFIPConflict, scenarioReload, scenarioEvents, scenarioDeletion, scenarioAllocationConflict,
		scenarioAllocationWatch, scenarioRenewal}
}

// scenarios are run's checks in order; each waits at most timeout.
func (e *lpEnv) scenarios(w *lpWorld, p *testenv.Process, timeout time.Duration) []scenario {
	ctx, stop := context.Background(), exited(p)
	fip := func(g guest) (*v1.FloatingIP, error) {
		return e.r.fips.FloatingIP().Get(g.id, g.name+"-kubevip", metav1.GetOptions{})
	}
	var addrA string
	return []scenario{
		{scenarioStartupConfig, func() error {
			const waiting = "waiting to acquire the leader Lease"
			if err := p.WaitForLog(ctx, waiting, timeout); err != nil {
				return err
			}
			logs := p.Logs()
			first := strings.Index(logs, "log level is ")
			if first < 0 || first > strings.Index(logs, waiting) || !strings.HasPrefix(logs[first:], "log level is debug") {
				return fmt.Errorf("the log level in force at start-up is not kube-fip-config's debug")
			}
			return nil
		}},
		{scenarioLeader, func() error {
			return poll(timeout, "the leader Lease held", stop, func() (bool, error) {
				l, err := e.kube.CoordinationV1().Leases(e.ns).Get(ctx, operator.LeaseName, metav1.GetOptions{})
				if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || l.Spec.RenewTime == nil {
					return false, err
				}
				w.renewed = l.Spec.RenewTime.Time
				return strings.Contains(p.Logs(), "acquired the leader Lease"), nil
			})
		}},
		{scenarioStart, func() error {
			return poll(timeout, "caches synced and controllers running", stop, func() (bool, error) {
				return strings.Contains(p.Logs(), "controllers running"), nil
			})
		}},
		{scenarioContention, func() error {
			return poll(timeout, fmt.Sprintf("%d contending FloatingIPs allocated, each its own address", contenders), stop, func() (bool, error) {
				held := map[string]bool{}
				for _, name := range w.contenders {
					x, err := e.r.fips.FloatingIP().Get(e.ns, name, metav1.GetOptions{})
					if err != nil || !allocated(x) {
						return false, err
					}
					held[x.Status.IPAddress] = true
				}
				r, err := e.r.fips.FloatingIPRange().Get(w.contended, metav1.GetOptions{})
				return err == nil && len(held) == contenders && r.Status.Used == contenders, err
			})
		}},
		{scenarioDiscovery, func() error {
			if err := w.create(); err != nil {
				return fmt.Errorf("creating the guest clusters: %w", err)
			}
			return poll(timeout, "a FloatingIP for each guest cluster", stop, func() (bool, error) {
				_, errA := fip(w.a)
				_, errB := fip(w.b)
				return errA == nil && errB == nil, nil
			})
		}},
		{scenarioAllocation, func() error {
			return poll(timeout, "both FloatingIPs allocated, the range recording them", stop, func() (bool, error) {
				a, errA := fip(w.a)
				b, errB := fip(w.b)
				r, errR := e.r.fips.FloatingIPRange().Get(w.rangeName, metav1.GetOptions{})
				if errA != nil || errB != nil || errR != nil {
					return false, nil
				}
				addrA = a.Status.IPAddress
				return allocated(a) && allocated(b) && r.Status.Used == 2 && len(r.Finalizers) > 0 &&
					v1.Ready.IsTrue(r), nil
			})
		}},
		{scenarioGuest, func() error {
			return poll(timeout, "the guest's kube-system/kubevip holding "+addrA, stop, func() (bool, error) {
				cm, err := e.guestKube.CoreV1().ConfigMaps("kube-system").Get(ctx, "kubevip", metav1.GetOptions{})
				a, errA := fip(w.a)
				return err == nil && errA == nil && cm.Data["cidr-global"] == addrA+"/32" &&
					v1.GuestConfigured.IsTrue(a), nil
			})
		}},
		{scenarioFIPConflict, func() error {
			// The operator's FloatingIP cache stops at the version it has; the FloatingIP moves
			// on without it. The guest pass a relabelled provisioning cluster starts finds the cluster
			// unprovisioned and writes that status from the stale copy: a conflict, after which
			// the FloatingIP must be read afresh.
			e.api.Hold("floatingips")
			defer e.api.Release("floatingips")
			defer e.proxy.SetMode(w.a.id, testenv.ProxyConnected)
			a, err := fip(w.a)
			if err != nil {
				return err
			}
			a.Labels = map[string]string{"kubefip.k8s.binbash.org/test-touched": "true"}
			if _, err := e.r.fips.FloatingIP().Update(a); err != nil {
				return err
			}
			e.proxy.SetMode(w.a.id, testenv.ProxyNotProvisioned)
			labelProvisioningCluster(e.t, w.a.name, "kubefip.k8s.binbash.org/test-touched", time.Now().Format("150405.000000"))
			return poll(timeout, "the guest state written over a stale cache (Provisioning)", stop, func() (bool, error) {
				a, err := fip(w.a)
				return err == nil && a.Status.GuestState == "Provisioning", nil
			})
		}},
		{scenarioReload, func() error {
			// A bad value twice, so that its Warning Event is created, then aggregated.
			e.writeConfig(map[string]string{"logLevel": "debug", "operateGuestClusterInterval": "often"})
			if err := poll(timeout, "the Warning Event for the bad value", stop, func() (bool, error) {
				return e.configWarnings() >= 1, nil
			}); err != nil {
				return err
			}
			seen := len(p.Logs())
			e.writeConfig(map[string]string{"logLevel": "info", "operateGuestClusterInterval": "often"})
			return poll(timeout, "the new log level in force", stop, func() (bool, error) {
				return strings.Contains(p.Logs()[seen:], "log level is info"), nil
			})
		}},
		{scenarioEvents, func() error {
			return poll(timeout, "the operator's Events", stop, func() (bool, error) {
				return e.configWarnings() >= 2 &&
					hasEvent(e.t, fleetNS, w.a.name, corev1.EventTypeNormal, v1.ReasonFloatingIPCreated, "") &&
					hasEvent(e.t, w.a.id, w.a.name+"-kubevip", corev1.EventTypeNormal, v1.ReasonAllocated, ""), nil
			})
		}},
		{scenarioDeletion, func() error {
			if err := e.r.prov.Delete(fleetNS, w.a.name, nil); err != nil {
				return err
			}
			return poll(timeout, "the deleted cluster's FloatingIP gone and its address retained", stop, func() (bool, error) {
				_, err := fip(w.a)
				r, errR := e.r.fips.FloatingIPRange().Get(w.rangeName, metav1.GetOptions{})
				return apierrors.IsNotFound(err) && errR == nil && r.Status.Used == 1 && r.Status.Retained == 1, nil
			})
		}},
		{scenarioAllocationConflict, func() error {
			// The operator's allocation cache stops at what it has; another writer claims the
			// lowest free address meanwhile. A new FloatingIP's claim picks that address, its
			// create meets AlreadyExists, and it must move on to the next with no read.
			e.api.Hold("floatingipallocations")
			defer e.api.Release("floatingipallocations")
			taken, err := e.takeLowestFree(w)
			if err != nil {
				return err
			}
			defer func() { _ = e.r.fips.FloatingIPAllocation().Delete(taken, nil) }()
			name := w.rangeName + "-late"
			if _, err := e.r.fips.FloatingIP().Create(&v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns,
				Annotations: map[string]string{v1.AnnotationFloatingIPRange: w.rangeName}}}); err != nil {
				return err
			}
			w.late = append(w.late, name)
			return poll(timeout, "a FloatingIP allocated past an address another writer took", stop, func() (bool, error) {
				x, err := e.r.fips.FloatingIP().Get(e.ns, name, metav1.GetOptions{})
				return err == nil && allocated(x) && !strings.HasPrefix(taken, x.Status.IPAddress+"."), nil
			})
		}},
		{scenarioAllocationWatch, func() error {
			// Claims of other writers (another replica, the repair) reach the index through a
			// watch; a list alone would learn of them only at the next relist.
			return poll(timeout, "a watch of FloatingIPAllocations served", stop, func() (bool, error) {
				for _, r := range e.api.Responses() {
					if r.Method == "GET" && r.Code == 200 && strings.HasSuffix(r.Path, "/floatingipallocations") && strings.Contains(r.Query, "watch=true") {
						return true, nil
					}
				}
				return false, nil
			})
		}},
		{scenarioRelease, func() error {
			// Unlike a deleted cluster's, the address of a FloatingIP a person deletes is not
			// retained: its finalizer deletes the allocation.
			name := w.late[len(w.late)-1]
			x, err := e.r.fips.FloatingIP().Get(e.ns, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if err := e.r.fips.FloatingIP().Delete(e.ns, name, nil); err != nil {
				return err
			}
			return poll(timeout, "the address of a FloatingIP deleted by hand released", stop, func() (bool, error) {
				_, err := e.r.fips.FloatingIP().Get(e.ns, name, metav1.GetOptions{})
				_, held := heldIn(e.t, e.r.fips, w.rangeName)[x.Status.IPAddress]
				return apierrors.IsNotFound(err) && !held, nil
			})
		}},
		{scenarioRenewal, func() error {
			return poll(timeout, "the leader Lease renewed", stop, func() (bool, error) {
				l, err := e.kube.CoordinationV1().Leases(e.ns).Get(ctx, operator.LeaseName, metav1.GetOptions{})
				return err == nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.Time.After(w.renewed), err
			})
		}},
	}
}

// configWarnings is the count of the InvalidValue Warning Event on kube-fip-config: 2 once the
// operator aggregated (patched) the repeated Event.
func (e *lpEnv) configWarnings() int32 {
	n := int32(0)
	for _, ev := range events(e.t, e.ns, config.ConfigMapName) {
		if ev.Type == corev1.EventTypeWarning && ev.Reason == string(config.ProblemInvalidValue) && ev.Count > n {
			n = ev.Count
		}
	}
	return n
}

// takeLowestFree creates, as another writer would, the allocation of the lowest address of w's
// range that nobody holds, for an owner the operator does not know, and returns its name.
func (e *lpEnv) takeLowestFree(w *lpWorld) (string, error) {
	r, err := e.r.fips.FloatingIPRange().Get(w.rangeName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	space := v1.SpaceOf(r)
	held, retained := heldIn(e.t, e.r.fips, w.rangeName), retainedIn(e.t, e.r.fips, w.rangeName)
	pfx := netip.MustParsePrefix(w.cidr)
	for a := pfx.Addr().Next(); pfx.Contains(a); a = a.Next() {
		_, isHeld := held[a.String()]
		if _, isRetained := retained[a.String()]; isHeld || isRetained {
			continue
		}
		name := v1.AllocationName(space, a)
		_, err := e.r.fips.FloatingIPAllocation().Create(&v1.FloatingIPAllocation{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelRange: v1.RangeLabelValue(w.rangeName)}},
			Spec: v1.FloatingIPAllocationSpec{Address: a.String(), Range: w.rangeName, Space: space,
				Owner: v1.FloatingIPReference{Namespace: e.ns, Name: "another-writer", UID: "another-writer-uid"}},
		})
		return name, err
	}
	return "", fmt.Errorf("range %s has no free address", w.rangeName)
}
