package leastprivilege

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
	"github.com/kubefip/kube-fip-operator/pkg/dnsname"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/pkg/operator"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/guests"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// scenarioNames are the scenarios of a run, in order.
func (e *lpEnv) scenarioNames() []string {
	return []string{scenarioStartupConfig, scenarioLeader, scenarioStart, scenarioWebhook, scenarioContention, scenarioDiscovery, scenarioAllocation,
		scenarioDNS, scenarioGuest, scenarioIngress, scenarioHarvester, scenarioFIPConflict, scenarioReload, scenarioEvents, scenarioDeletion, scenarioAllocationConflict,
		scenarioAllocationWatch, scenarioRenewal}
}

// scenarios are run's checks in order; each waits at most scenarioTimeout.
func (e *lpEnv) scenarios(w *lpWorld, p *controlplane.Process) []scenario {
	ctx, stop := context.Background(), p.Exited
	fip := func(g rancher.Guest) (*v1.FloatingIP, error) {
		return e.r.FIPs.FloatingIP().Get(g.ID, g.Name+"-kubevip", metav1.GetOptions{})
	}
	var addrA string
	return []scenario{
		{scenarioStartupConfig, func() error {
			const waiting = "waiting to acquire the leader Lease"
			if err := p.WaitForLog(ctx, waiting, scenarioTimeout); err != nil {
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
			return rig.Until(scenarioTimeout, "the leader Lease held", stop, func() (bool, error) {
				l, err := e.kube.CoordinationV1().Leases(e.ns).Get(ctx, operator.LeaseName, metav1.GetOptions{})
				if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || l.Spec.RenewTime == nil {
					return false, err
				}
				w.renewed = l.Spec.RenewTime.Time
				return strings.Contains(p.Logs(), "acquired the leader Lease"), nil
			})
		}},
		{scenarioStart, func() error {
			return rig.Until(scenarioTimeout, "caches synced and controllers running", stop, func() (bool, error) {
				return strings.Contains(p.Logs(), "controllers running"), nil
			})
		}},
		{scenarioWebhook, func() error {
			// The configuration fails open here, so only the webhook's own refusal shows it answered:
			// its certificate is in the Secret and its CA in the configuration.
			r, err := e.r.FIPs.FloatingIPRange().Get(w.contended, metav1.GetOptions{})
			if err != nil {
				return err
			}
			twin := &v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: r.Name + "-twin", Annotations: r.Annotations}, Spec: r.Spec}
			return rig.Until(scenarioTimeout, "an overlapping range refused by the webhook", stop, func() (bool, error) {
				return suite.RefusedBecause(e.s.DryRunCreateRange(twin), "overlaps FloatingIPRange "+r.Name), nil
			})
		}},
		{scenarioContention, func() error {
			return rig.Until(scenarioTimeout, fmt.Sprintf("%d contending FloatingIPs allocated, each its own address", contenders), stop, func() (bool, error) {
				held := map[string]bool{}
				for _, name := range w.contenders {
					x, err := e.r.FIPs.FloatingIP().Get(e.ns, name, metav1.GetOptions{})
					if err != nil || !suite.Allocated(x) {
						return false, err
					}
					held[x.Status.IPAddress] = true
				}
				r, err := e.r.FIPs.FloatingIPRange().Get(w.contended, metav1.GetOptions{})
				return err == nil && len(held) == contenders && r.Status.Used == contenders, err
			})
		}},
		{scenarioDiscovery, func() error {
			if err := w.create(); err != nil {
				return fmt.Errorf("creating the guest clusters: %w", err)
			}
			return rig.Until(scenarioTimeout, "a FloatingIP for each guest cluster", stop, func() (bool, error) {
				_, errA := fip(w.a)
				_, errB := fip(w.b)
				return errA == nil && errB == nil, nil
			})
		}},
		{scenarioAllocation, func() error {
			return rig.Until(scenarioTimeout, "both FloatingIPs allocated, the range recording them", stop, func() (bool, error) {
				a, errA := fip(w.a)
				b, errB := fip(w.b)
				r, errR := e.r.FIPs.FloatingIPRange().Get(w.rangeName, metav1.GetOptions{})
				if errA != nil || errB != nil || errR != nil {
					return false, nil
				}
				addrA = a.Status.IPAddress
				return suite.Allocated(a) && suite.Allocated(b) && r.Status.Used == 2 && len(r.Finalizers) > 0 &&
					v1.Ready.IsTrue(r), nil
			})
		}},
		{scenarioDNS, func() error { return e.dnsEndpoint(w, addrA, stop) }},
		{scenarioGuest, func() error {
			return rig.Until(scenarioTimeout, "the guest's kube-system/kubevip holding "+addrA, stop, func() (bool, error) {
				cm, err := e.guestKube.CoreV1().ConfigMaps("kube-system").Get(ctx, "kubevip", metav1.GetOptions{})
				a, errA := fip(w.a)
				return err == nil && errA == nil && cm.Data["cidr-global"] == addrA+"/32" &&
					v1.GuestConfigured.IsTrue(a), nil
			})
		}},
		{scenarioIngress, func() error { return e.guestIngress(w, addrA, stop) }},
		{scenarioHarvester, func() error { return e.harvesterRead(w, stop) }},
		{scenarioFIPConflict, func() error {
			// The operator's FloatingIP cache stops at the version it has; the FloatingIP moves
			// on without it. The guest pass a relabelled provisioning cluster starts finds the cluster
			// unprovisioned and writes that status from the stale copy: a conflict, after which
			// the FloatingIP must be read afresh.
			e.api.Hold("floatingips")
			defer e.api.Release("floatingips")
			defer e.proxy.SetMode(w.a.ID, guests.ProxyConnected)
			a, err := fip(w.a)
			if err != nil {
				return err
			}
			a.Labels = map[string]string{"kubefip.k8s.binbash.org/test-touched": "true"}
			if _, err := e.r.FIPs.FloatingIP().Update(a); err != nil {
				return err
			}
			e.proxy.SetMode(w.a.ID, guests.ProxyNotProvisioned)
			rig.Must(e.t, e.r.LabelCluster(w.a.Name, "kubefip.k8s.binbash.org/test-touched", time.Now().Format("150405.000000")))
			return rig.Until(scenarioTimeout, "the guest state written over a stale cache (Provisioning)", stop, func() (bool, error) {
				a, err := fip(w.a)
				return err == nil && a.Status.GuestState == "Provisioning", nil
			})
		}},
		{scenarioReload, func() error {
			// A bad value twice, so that its Warning Event is created, then aggregated.
			e.writeConfig(map[string]string{"logLevel": "debug", "operateGuestClusterInterval": "often"})
			if err := rig.Until(scenarioTimeout, "the Warning Event for the bad value", stop, func() (bool, error) {
				return e.configWarnings() >= 1, nil
			}); err != nil {
				return err
			}
			seen := len(p.Logs())
			e.writeConfig(map[string]string{"logLevel": "info", "operateGuestClusterInterval": "often"})
			return rig.Until(scenarioTimeout, "the new log level in force", stop, func() (bool, error) {
				return strings.Contains(p.Logs()[seen:], "log level is info"), nil
			})
		}},
		{scenarioEvents, func() error {
			return rig.Until(scenarioTimeout, "the operator's Events", stop, func() (bool, error) {
				return e.configWarnings() >= 2 &&
					e.s.HasEvent(e.t, rancher.FleetNamespace, w.a.Name, corev1.EventTypeNormal, v1.ReasonFloatingIPCreated, "") &&
					e.s.HasEvent(e.t, w.a.ID, w.a.Name+"-kubevip", corev1.EventTypeNormal, v1.ReasonAllocated, ""), nil
			})
		}},
		{scenarioDeletion, func() error {
			if err := e.r.Prov.Delete(rancher.FleetNamespace, w.a.Name, nil); err != nil {
				return err
			}
			return rig.Until(scenarioTimeout, "the deleted cluster's FloatingIP gone and its address retained", stop, func() (bool, error) {
				_, err := fip(w.a)
				r, errR := e.r.FIPs.FloatingIPRange().Get(w.rangeName, metav1.GetOptions{})
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
			defer func() { _ = e.r.FIPs.FloatingIPAllocation().Delete(taken, nil) }()
			name := w.rangeName + "-late"
			if _, err := e.r.FIPs.FloatingIP().Create(&v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns,
				Annotations: map[string]string{v1.AnnotationFloatingIPRange: w.rangeName}}}); err != nil {
				return err
			}
			w.late = append(w.late, name)
			return rig.Until(scenarioTimeout, "a FloatingIP allocated past an address another writer took", stop, func() (bool, error) {
				x, err := e.r.FIPs.FloatingIP().Get(e.ns, name, metav1.GetOptions{})
				return err == nil && suite.Allocated(x) && !strings.HasPrefix(taken, x.Status.IPAddress+"."), nil
			})
		}},
		{scenarioAllocationWatch, func() error {
			// Claims of other writers (another replica, the repair) reach the index through a
			// watch; a list alone would learn of them only at the next relist.
			return rig.Until(scenarioTimeout, "a watch of FloatingIPAllocations served", stop, func() (bool, error) {
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
			x, err := e.r.FIPs.FloatingIP().Get(e.ns, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if err := e.r.FIPs.FloatingIP().Delete(e.ns, name, nil); err != nil {
				return err
			}
			return rig.Until(scenarioTimeout, "the address of a FloatingIP deleted by hand released", stop, func() (bool, error) {
				_, err := e.r.FIPs.FloatingIP().Get(e.ns, name, metav1.GetOptions{})
				_, held := suite.HeldIn(e.t, e.r.FIPs, w.rangeName)[x.Status.IPAddress]
				return apierrors.IsNotFound(err) && !held, nil
			})
		}},
		{scenarioRenewal, func() error {
			return rig.Until(scenarioTimeout, "the leader Lease renewed", stop, func() (bool, error) {
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
	for _, ev := range e.s.Events(e.t, e.ns, config.ConfigMapName) {
		if ev.Type == corev1.EventTypeWarning && ev.Reason == string(config.ProblemInvalidValue) && ev.Count > n {
			n = ev.Count
		}
	}
	return n
}

// takeLowestFree creates, as another writer would, the allocation of the lowest address of w's
// range that nobody holds, for an owner the operator does not know, and returns its name.
func (e *lpEnv) takeLowestFree(w *lpWorld) (string, error) {
	r, err := e.r.FIPs.FloatingIPRange().Get(w.rangeName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	space := v1.SpaceOf(r)
	held, retained := suite.HeldIn(e.t, e.r.FIPs, w.rangeName), suite.RetainedIn(e.t, e.r.FIPs, w.rangeName)
	pfx := netip.MustParsePrefix(w.cidr)
	for a := pfx.Addr().Next(); pfx.Contains(a); a = a.Next() {
		_, isHeld := held[a.String()]
		if _, isRetained := retained[a.String()]; isHeld || isRetained {
			continue
		}
		name := v1.AllocationName(space, a)
		_, err := e.r.FIPs.FloatingIPAllocation().Create(&v1.FloatingIPAllocation{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelRange: v1.RangeLabelValue(w.rangeName)}},
			Spec: v1.FloatingIPAllocationSpec{Address: a.String(), Range: w.rangeName, Space: space,
				Owner: v1.FloatingIPReference{Namespace: e.ns, Name: "another-writer", UID: "another-writer-uid"}},
		})
		return name, err
	}
	return "", fmt.Errorf("range %s has no free address", w.rangeName)
}

// dnsEndpoint: the range asks for names, and guest a's FloatingIP gets its DNSEndpoint (create);
// a new TTL changes it (update); the range stops asking, and it goes (delete). The informer the
// operator keeps them in lists and watches.
func (e *lpEnv) dnsEndpoint(w *lpWorld, addr string, stop func() error) error {
	ctx := context.Background()
	endpoints := e.dyn.Resource(dnsname.Resource).Namespace(w.a.ID)
	name := w.a.Name + "-kubevip"
	setDNS := func(dns *v1.RangeDNS) error {
		r, err := e.r.FIPs.FloatingIPRange().Get(w.rangeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		r.Spec.DNS = dns
		_, err = e.r.FIPs.FloatingIPRange().Update(r)
		return err
	}
	records := func(ttl int64) func() (bool, error) {
		return func() (bool, error) {
			u, err := endpoints.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			seen, err := dnsname.Read(u)
			return err == nil && len(seen.Endpoints) == 1 && seen.Endpoints[0].RecordTTL == ttl &&
				len(seen.Endpoints[0].Targets) == 1 && seen.Endpoints[0].Targets[0] == addr, nil
		}
	}
	if err := setDNS(&v1.RangeDNS{Zone: "lp.example.test"}); err != nil {
		return err
	}
	if err := rig.Until(scenarioTimeout, "DNSEndpoint "+w.a.ID+"/"+name+" publishing "+addr, stop, records(60)); err != nil {
		return err
	}
	if err := setDNS(&v1.RangeDNS{Zone: "lp.example.test", TTL: 30}); err != nil {
		return err
	}
	if err := rig.Until(scenarioTimeout, "DNSEndpoint "+w.a.ID+"/"+name+" at TTL 30", stop, records(30)); err != nil {
		return err
	}
	if err := setDNS(nil); err != nil {
		return err
	}
	return rig.Until(scenarioTimeout, "DNSEndpoint "+w.a.ID+"/"+name+" deleted", stop, func() (bool, error) {
		_, err := endpoints.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// guestIngress: guest A's ingress controller (a pod of rke2-traefik, as its chart labels it; no
// node runs it here) and the cluster's label opting in: the operator writes the ingress Service
// asking for addr, and the FloatingIP shows it pending; the label set to false, the Service goes.
func (e *lpEnv) guestIngress(w *lpWorld, addr string, stop func() error) error {
	ctx := context.Background()
	services := e.guestKube.CoreV1().Services(kubevipconfig.IngressNamespace)
	traefik := kubevipconfig.IngressControllers()[1]
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rke2-traefik-lp", Namespace: kubevipconfig.IngressNamespace, Labels: traefik.Selector},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "rke2-traefik", Image: "rancher/hardened-traefik:lp"}}}}
	if _, err := e.guestKube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return err
	}
	defer func() { _ = e.guestKube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}) }()
	if err := e.r.LabelGuest(w.a.Name, w.a.ID, v1.LabelIngress, "true"); err != nil {
		return err
	}
	if err := rig.Until(scenarioTimeout, "the guest's ingress Service asking for "+addr, stop, func() (bool, error) {
		svc, err := services.Get(ctx, kubevipconfig.IngressServiceName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		a, err := e.r.FIPs.FloatingIP().Get(w.a.ID, w.a.Name+"-kubevip", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		c, shown := v1.GetCondition(a.Status.Conditions, v1.IngressServed)
		return svc.Annotations[kubevipconfig.LoadBalancerIPsAnnotation] == addr && shown && c.Reason == v1.ReasonIngressPending, nil
	}); err != nil {
		return err
	}
	if err := e.r.LabelGuest(w.a.Name, w.a.ID, v1.LabelIngress, "false"); err != nil {
		return err
	}
	return rig.Until(scenarioTimeout, "the guest's ingress Service taken out", stop, func() (bool, error) {
		_, err := services.Get(ctx, kubevipconfig.IngressServiceName, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
