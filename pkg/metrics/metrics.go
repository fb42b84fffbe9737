// Package metrics holds the operator's Prometheus collectors and the HTTP server that exposes them
// with the health endpoints. The metric names and labels of the original kube-fip-operator are kept
// unchanged so existing dashboards and alerts keep working. Collectors live in a registry passed to
// whoever needs them; nothing is registered globally. lasso's controller and work queue collectors,
// which lasso registers on Prometheus's default registry, are served beside them (Gatherer).
package metrics

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
	dto "github.com/prometheus/client_model/go"
)

// Label names of the original operator.
const (
	LabelRangeName            = "fiprangename"
	LabelRange                = "fiprange"
	LabelHarvesterClusterName = "harvesterclustername"
	LabelHarvesterNetworkName = "harvesternetworkname"
	LabelGuestClusterName     = "guestclustername"
	LabelEvent                = "event"
	LabelStatus               = "status"
	// LabelState is a guest cluster's state after a pass, as in a FloatingIP's status.guestState.
	LabelState = "state"
	// LabelNamespace and LabelName identify a FloatingIP.
	LabelNamespace = "namespace"
	LabelName      = "name"
	// LabelReason is an Event's reason.
	LabelReason = "reason"
)

// Guest cluster event names and statuses of the original operator.
const (
	EventAPIConnection                       = "api_connection"
	EventConfigMapManagement                 = "configmap_management"
	EventKubevipInstall                      = "kubevip_install"
	EventKubevipCloudProviderInstall         = "kubevipcloudprovider_install"
	StatusSuccess                            = "success"
	StatusError                              = "error"
	GuestClusterUp                   float64 = 1
	GuestClusterDown                 float64 = 0
	// GuestClusterProvisioning: Rancher is still provisioning the cluster; not down, no alert.
	GuestClusterProvisioning float64 = 2
)

func rangeLabels() []string {
	return []string{LabelRangeName, LabelRange, LabelHarvesterClusterName, LabelHarvesterNetworkName}
}

func guestLabels() []string { return []string{LabelGuestClusterName, LabelHarvesterClusterName} }

// Metrics is the set of collectors, registered in Registry.
type Metrics struct {
	Registry *prometheus.Registry

	// RangeCapacity and RangeReserved are the original range gauges; RangeAvailable is their
	// difference, kept exact (an IPv6 range's capacity is stored as a float, as Prometheus does).
	RangeCapacity  *prometheus.GaugeVec
	RangeReserved  *prometheus.GaugeVec
	RangeAvailable *prometheus.GaugeVec
	// RangeRetained counts the addresses kept for deleted guest clusters, apart from those held.
	RangeRetained *prometheus.GaugeVec
	// RangeWithheld counts a range's addresses its Harvester cluster hands out or uses on the
	// range's segment, held back; RangeInUse its held addresses a virtual machine of another guest
	// (or of none) reports there.
	RangeWithheld *prometheus.GaugeVec
	RangeInUse    *prometheus.GaugeVec
	// HarvesterReads counts the reads of each Harvester cluster by result (read, limited,
	// failed); HarvesterRequests the requests they made to it.
	HarvesterReads    *prometheus.CounterVec
	HarvesterRequests *prometheus.CounterVec
	// AllocationConflicts counts FloatingIPs refused an address another one holds.
	AllocationConflicts *prometheus.CounterVec
	// AllocationClaimSeconds is the time one new claim took, collisions with other writers
	// included: a FloatingIPAllocation created.
	AllocationClaimSeconds prometheus.Histogram
	// EventsLeftOut counts the Normal Events not recorded because their reason had used up its
	// budget (a backlog of many clusters at once), by reason.
	EventsLeftOut *prometheus.CounterVec

	// GuestClusterStatus is 1 when a guest cluster answered its last operation, 0 when it did not.
	GuestClusterStatus *prometheus.GaugeVec
	// GuestClusterEvents counts guest operations by event and status.
	GuestClusterEvents *prometheus.CounterVec
	// GuestOperationDuration is the time one pass over one guest cluster took.
	GuestOperationDuration *prometheus.HistogramVec
	// GuestWatches is the number of watch requests open to guest clusters (pkg/guestwatch).
	GuestWatches prometheus.Gauge
	// GuestPasses counts the passes over each guest cluster by the state they left it in.
	GuestPasses *prometheus.CounterVec
	// DiscoveryNoRange counts guest clusters for which no FloatingIPRange matched.
	DiscoveryNoRange *prometheus.CounterVec

	// ConfigReloads counts reloads of kube-fip-config by result (success, error).
	ConfigReloads *prometheus.CounterVec

	// FloatingIPReady is 1 while a FloatingIP's Ready condition is True, 0 otherwise.
	FloatingIPReady *prometheus.GaugeVec
	// FloatingIPServed is what the guest showed of a FloatingIP's address at the last look:
	// ServedYes, ServedIdle or ServedNo; no series before the first look.
	FloatingIPServed *prometheus.GaugeVec
	// FloatingIPKubevipInstalled is whether the operator's kube-vip is installed in a FloatingIP's
	// guest: KubevipInstalledYes, KubevipInstalledNo or KubevipNotWanted; no series before a guest
	// pass says.
	FloatingIPKubevipInstalled *prometheus.GaugeVec
	// readyGuest is, per FloatingIP (namespace/name), the guest cluster name of its FloatingIPReady
	// series, set through SetFloatingIP; readyMu guards it and keeps it in step with the
	// series.
	readyMu    sync.Mutex
	readyGuest map[string]string
}

// New creates the collectors in a fresh registry, with the Go and process collectors beside them.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := promauto.With(reg)
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return f.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return f.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	return &Metrics{
		Registry:   reg,
		readyGuest: map[string]string{},
		RangeCapacity: gauge("kubefipoperator_fipranges_capacity",
			"Number of addresses a FloatingIPRange can hand out.", rangeLabels()...),
		RangeReserved: gauge("kubefipoperator_fipranges_reserved",
			"Number of addresses of a FloatingIPRange held by FloatingIPs.", rangeLabels()...),
		RangeAvailable: gauge("kubefipoperator_fipranges_available",
			"Number of addresses of a FloatingIPRange still free.", rangeLabels()...),
		RangeRetained: gauge("kubefipoperator_fipranges_retained",
			"Number of addresses of a FloatingIPRange kept for deleted guest clusters until they come back or their retention ends.", rangeLabels()...),
		AllocationConflicts: counter("kubefipoperator_allocation_conflicts_total",
			"FloatingIPs refused an address because another FloatingIP holds it.", LabelRangeName),
		AllocationClaimSeconds: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubefipoperator_allocation_claim_seconds",
			Help:    "Duration of one new address claim, the creation of its FloatingIPAllocation included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		EventsLeftOut: counter("kubefipoperator_events_left_out_total",
			"Normal Events not recorded because their reason used up its budget in a backlog; each object's conditions say the same.", LabelReason),
		GuestClusterStatus: gauge("kubefipoperator_guestcluster_status",
			"Whether a guest cluster is up (1) or down (0) as seen by the last guest operation.", guestLabels()...),
		GuestClusterEvents: counter("kubefipoperator_guestcluster_events",
			"Guest cluster operations (connection, ConfigMap management, installs) by result.", append(guestLabels(), LabelEvent, LabelStatus)...),
		GuestOperationDuration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kubefipoperator_guestcluster_operation_duration_seconds",
			Help:    "Duration of one pass of guest operations over one guest cluster.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
		}, []string{LabelHarvesterClusterName}),
		GuestWatches: f.NewGauge(prometheus.GaugeOpts{Name: "kubefipoperator_guestcluster_watches",
			Help: "Watch requests open to guest clusters through Rancher's cluster proxy, of the Services and kube-vip DaemonSets that say whether their addresses are served."}),
		GuestPasses: counter("kubefipoperator_guestcluster_passes_total",
			"Passes of guest operations over a guest cluster, by the state they left it in.", append(guestLabels(), LabelState)...),
		DiscoveryNoRange: counter("kubefipoperator_discovery_no_matching_range_total",
			"Guest clusters found for which no FloatingIPRange matched their Harvester cluster.", LabelHarvesterClusterName),
		ConfigReloads: counter("kubefipoperator_config_reloads_total",
			"Reloads of the kube-fip-config ConfigMap by result (success, error).", LabelStatus),
		RangeWithheld: gauge("kubefipoperator_fipranges_withheld",
			"Number of addresses of a FloatingIPRange its Harvester cluster hands out or uses on the range's layer-2 segment (load balancer and DHCP pools, VM addresses): never handed out.", LabelRangeName),
		RangeInUse: gauge("kubefipoperator_fipranges_in_use_elsewhere",
			"Number of addresses of a FloatingIPRange held by a FloatingIP that a VM of another guest cluster, or of none, reports on the range's segment.", LabelRangeName),
		HarvesterReads: counter("kubefipoperator_harvester_reads_total",
			"Reads of a Harvester cluster's networks, pools and VM addresses, by result: read, limited (cut short by a read limit) or failed.", LabelHarvesterClusterName, "result"),
		HarvesterRequests: counter("kubefipoperator_harvester_requests_total",
			"Requests made to a Harvester cluster through Rancher's cluster proxy by its reads.", LabelHarvesterClusterName),
		FloatingIPReady: gauge("kubefipoperator_floatingip_ready",
			"Whether a FloatingIP is Ready (1) or not (0): it holds its address, its guest cluster uses it, and the address is served or nothing asks for it yet.",
			LabelNamespace, LabelName, LabelGuestClusterName),
		FloatingIPServed: gauge("kubefipoperator_floatingip_served",
			"What the guest showed of a FloatingIP's address at the last look: 1 a LoadBalancer Service's status holds it, 2 nothing asks for it yet, 0 it is not served (kube-vip not ready, or asked for and not bound).",
			LabelNamespace, LabelName, LabelGuestClusterName),
		FloatingIPKubevipInstalled: gauge("kubefipoperator_floatingip_kubevip_installed",
			"Whether the operator's kube-vip is installed in a FloatingIP's guest cluster: 1 installed, 0 not (refused or failed; its KubevipInstalled condition says why), 2 the guest does not want the operator's kube-vip.",
			LabelNamespace, LabelName, LabelGuestClusterName),
	}
}

// RangeLabels identifies one FloatingIPRange's series.
type RangeLabels struct {
	Name, CIDR, HarvesterCluster, HarvesterNetwork string
}

func (l RangeLabels) labels() prometheus.Labels {
	return prometheus.Labels{
		LabelRangeName:            l.Name,
		LabelRange:                l.CIDR,
		LabelHarvesterClusterName: l.HarvesterCluster,
		LabelHarvesterNetworkName: l.HarvesterNetwork,
	}
}

// SetRange records a range's counts: reserved are the addresses FloatingIPs hold, retained those
// kept for deleted guest clusters.
func (m *Metrics) SetRange(l RangeLabels, capacity, reserved, retained, available float64) {
	m.RangeCapacity.With(l.labels()).Set(capacity)
	m.RangeReserved.With(l.labels()).Set(reserved)
	m.RangeRetained.With(l.labels()).Set(retained)
	m.RangeAvailable.With(l.labels()).Set(available)
}

// DeleteRange removes every series of the range with that name, whatever its other labels were
// (a range whose CIDR or annotations changed must not leave its old series behind).
func (m *Metrics) DeleteRange(name string) {
	match := prometheus.Labels{LabelRangeName: name}
	m.RangeCapacity.DeletePartialMatch(match)
	m.RangeReserved.DeletePartialMatch(match)
	m.RangeAvailable.DeletePartialMatch(match)
	m.RangeRetained.DeletePartialMatch(match)
	m.RangeWithheld.DeletePartialMatch(match)
	m.RangeInUse.DeletePartialMatch(match)
	m.AllocationConflicts.DeletePartialMatch(match)
}

// DeleteGuestCluster removes every series of a guest cluster.
func (m *Metrics) DeleteGuestCluster(cluster string) {
	match := prometheus.Labels{LabelGuestClusterName: cluster}
	m.GuestClusterStatus.DeletePartialMatch(match)
	m.GuestClusterEvents.DeletePartialMatch(match)
	m.GuestPasses.DeletePartialMatch(match)
}

// The values of kubefipoperator_floatingip_served.
const (
	ServedNo   = 0
	ServedYes  = 1
	ServedIdle = 2
	// ServedUnknown: no series, the guest not looked at yet.
	ServedUnknown = -1
)

// The values of kubefipoperator_floatingip_kubevip_installed.
const (
	KubevipInstalledNo  = 0
	KubevipInstalledYes = 1
	// KubevipNotWanted: kubevipGuestInstall leaves the guest to its owner; nothing to alert on.
	KubevipNotWanted = 2
	// KubevipInstalledUnknown: no series, no guest pass has said yet.
	KubevipInstalledUnknown = -1
)

// SetFloatingIP records whether the FloatingIP namespace/name of guest cluster guest is Ready,
// whether its address is served (ServedUnknown: no series) and whether the operator's kube-vip is
// installed in the guest (KubevipInstalledUnknown: no series). A FloatingIP has one series of each:
// one left under another guest cluster name is removed.
func (m *Metrics) SetFloatingIP(namespace, name, guest string, ready bool, served, kubevip float64) {
	value := 0.0
	if ready {
		value = 1
	}
	key := namespace + "/" + name
	m.readyMu.Lock()
	defer m.readyMu.Unlock()
	// The guest cluster name its series has now, if any: looked up rather than found by
	// collecting every FloatingIP's series, which costs each update the whole vector.
	if previous, ok := m.readyGuest[key]; ok && previous != guest {
		old := prometheus.Labels{LabelNamespace: namespace, LabelName: name, LabelGuestClusterName: previous}
		m.FloatingIPReady.Delete(old)
		m.FloatingIPServed.Delete(old)
		m.FloatingIPKubevipInstalled.Delete(old)
	}
	m.readyGuest[key] = guest
	labels := prometheus.Labels{LabelNamespace: namespace, LabelName: name, LabelGuestClusterName: guest}
	m.FloatingIPReady.With(labels).Set(value)
	setOrDelete(m.FloatingIPServed, labels, served, ServedUnknown)
	setOrDelete(m.FloatingIPKubevipInstalled, labels, kubevip, KubevipInstalledUnknown)
}

// setOrDelete sets the series of g with labels to value, or removes it when value is unknown.
func setOrDelete(g *prometheus.GaugeVec, labels prometheus.Labels, value, unknown float64) {
	if value == unknown {
		g.Delete(labels)
		return
	}
	g.With(labels).Set(value)
}

// DeleteFloatingIP removes the series of the FloatingIP namespace/name, whatever its guest cluster.
func (m *Metrics) DeleteFloatingIP(namespace, name string) {
	m.readyMu.Lock()
	defer m.readyMu.Unlock()
	delete(m.readyGuest, namespace+"/"+name)
	match := prometheus.Labels{LabelNamespace: namespace, LabelName: name}
	m.FloatingIPReady.DeletePartialMatch(match)
	m.FloatingIPServed.DeletePartialMatch(match)
	m.FloatingIPKubevipInstalled.DeletePartialMatch(match)
}

// GuestClusters lists the guest clusters that have series.
func (m *Metrics) GuestClusters() []string {
	ch := make(chan prometheus.Metric, 16)
	go func() {
		m.GuestClusterStatus.Collect(ch)
		m.GuestClusterEvents.Collect(ch)
		m.GuestPasses.Collect(ch)
		close(ch)
	}()
	seen := map[string]bool{}
	for metric := range ch {
		var pb dto.Metric
		if metric.Write(&pb) != nil {
			continue
		}
		for _, l := range pb.GetLabel() {
			if l.GetName() == LabelGuestClusterName {
				seen[l.GetValue()] = true
			}
		}
	}
	return slices.Collect(maps.Keys(seen))
}

// controllerSeries are the prefixes of the series lasso registers on Prometheus's default registry:
// its controllers' handler executions, reconcile times and cached objects, and the series of every
// client-go work queue (lasso's controllers' and the guest queue), labelled by queue name.
func controllerSeries() []string { return []string{"lasso_controller_", "workqueue_"} }

// Gatherer is what /metrics serves: the operator's own collectors, and beside them lasso's
// controller and work queue collectors, which lasso registers on Prometheus's default registry
// when the process starts with CATTLE_PROMETHEUS_METRICS=true, as the chart's Deployment sets it
// (lasso reads the variable once, in its package's init). Only those series are taken from the default registry, so
// that nothing else registered there globally is served, and the Go and process collectors are
// not served twice.
func (m *Metrics) Gatherer() prometheus.Gatherer {
	return prometheus.Gatherers{m.Registry, prefixGatherer{prometheus.DefaultGatherer, controllerSeries()}}
}

// prefixGatherer gathers the metric families of g whose names start with one of prefixes.
type prefixGatherer struct {
	g        prometheus.Gatherer
	prefixes []string
}

func (p prefixGatherer) Gather() ([]*dto.MetricFamily, error) {
	all, err := p.g.Gather()
	kept := all[:0]
	for _, mf := range all {
		for _, prefix := range p.prefixes {
			if strings.HasPrefix(mf.GetName(), prefix) {
				kept = append(kept, mf)
				break
			}
		}
	}
	return kept, err
}
