package harvester

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// The labels load-balancer-harvester v1.8.2's IPPool webhook sets (pkg/utils/const.go, vid.go).
const (
	LabelLBVid        = "loadbalancer.harvesterhci.io/vid"
	LabelLBGlobalPool = "loadbalancer.harvesterhci.io/global-ip-pool"
	// All is the wildcard of a pool's scope (pkg/ipam/selector.go).
	All = "*"
)

// LBPool is an IP pool of Harvester's load balancer, cluster-scoped: spec as a person writes it,
// Allocated as the load balancer controller leaves it.
type LBPool struct {
	Name        string
	Description string
	Ranges      []Range
	// Network is the VM network ("namespace/name" of a NAD) the pool serves, if any.
	Network string
	// Global makes the pool the cluster's global pool, scope [{project, namespace, guestCluster:
	// "*"}], which the selector falls back to whatever the network.
	Global bool
	// Scope is the pool's scope when not Global.
	Scope    []Scope
	Priority uint32
	// Allocated maps each address handed out to its load balancer, "namespace/name".
	Allocated map[string]string
}

// Range is one range of addresses of a pool, CNI host-local's allocator.Range: Subnet alone is
// the whole subnet but its network, broadcast and gateway (by default .1) addresses.
type Range struct {
	Subnet     string `json:"subnet"`
	RangeStart string `json:"rangeStart,omitempty"`
	RangeEnd   string `json:"rangeEnd,omitempty"`
	Gateway    string `json:"gateway,omitempty"`
}

// Scope is who may take addresses from a pool.
type Scope struct {
	Project      string `json:"project,omitempty"`
	Namespace    string `json:"namespace,omitempty"`
	GuestCluster string `json:"guestCluster,omitempty"`
}

// CreateLBPool creates the pool p as load-balancer-harvester v1.8.2 leaves it: created with the
// labels its webhook's mutator adds (the VLAN id of the selected network, "0" without one, and
// whether the pool is global), then given, with a plain Update as the IPPool CRD has no status
// subresource, the status its controller writes (total, available, lastAllocated, Ready) and the
// allocations its IPAM store records. The webhook's checks (no overlap with other pools, one
// global pool, distinct priorities) are not made: a test may write what Harvester would refuse.
func (c *Cluster) CreateLBPool(ctx context.Context, p LBPool) (*unstructured.Unstructured, error) {
	vid, err := c.networkVid(ctx, p.Network)
	if err != nil {
		return nil, fmt.Errorf("IP pool %s: %w", p.Name, err)
	}
	total, err := poolTotal(p.Ranges)
	if err != nil {
		return nil, fmt.Errorf("IP pool %s: %w", p.Name, err)
	}
	scope := p.Scope
	if p.Global {
		scope = []Scope{{Project: All, Namespace: All, GuestCluster: All}}
	}
	spec := struct {
		Description string  `json:"description,omitempty"`
		Ranges      []Range `json:"ranges"`
		Selector    struct {
			Priority uint32  `json:"priority,omitempty"`
			Network  string  `json:"network,omitempty"`
			Scope    []Scope `json:"scope,omitempty"`
		} `json:"selector"`
	}{Description: p.Description, Ranges: p.Ranges}
	spec.Selector.Priority, spec.Selector.Network, spec.Selector.Scope = p.Priority, p.Network, scope
	pool := newObject(LBPoolResource, "IPPool", "", p.Name)
	if pool.Object["spec"], err = toMap(&spec); err != nil {
		return nil, err
	}
	pool.SetLabels(map[string]string{LabelLBVid: strconv.Itoa(vid), LabelLBGlobalPool: strconv.FormatBool(isGlobal(scope))})
	if _, err := c.resource(LBPoolResource, "").Create(ctx, pool, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating IP pool %s: %w", p.Name, err)
	}
	out, err := c.change(ctx, LBPoolResource, "", p.Name, false, func(pool *unstructured.Unstructured) error {
		now := stamp(metav1.Now())
		status := map[string]interface{}{
			"total": total, "available": total - int64(len(p.Allocated)), "lastAllocated": lastAllocated(p.Allocated),
			"conditions": []interface{}{map[string]interface{}{"type": "Ready", "status": "True", "lastUpdateTime": now}},
		}
		if len(p.Allocated) > 0 {
			status["allocated"] = stringMap(p.Allocated)
		}
		pool.Object["status"] = status
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("writing the status of IP pool %s: %w", p.Name, err)
	}
	return out, nil
}

// AllocateLBAddress records ip of pool as held by load balancer lbNamespace/lbName, as the IPAM
// store's Reserve does: into status.allocated, out of allocatedHistory, as lastAllocated, one
// fewer available.
func (c *Cluster) AllocateLBAddress(ctx context.Context, pool, ip, lbNamespace, lbName string) error {
	_, err := c.change(ctx, LBPoolResource, "", pool, false, func(u *unstructured.Unstructured) error {
		available, _, _ := unstructured.NestedInt64(u.Object, "status", "available")
		unstructured.RemoveNestedField(u.Object, "status", "allocatedHistory", ip)
		if err := unstructured.SetNestedField(u.Object, lbNamespace+"/"+lbName, "status", "allocated", ip); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(u.Object, ip, "status", "lastAllocated"); err != nil {
			return err
		}
		return unstructured.SetNestedField(u.Object, available-1, "status", "available")
	})
	if err != nil {
		return fmt.Errorf("allocating %s of IP pool %s: %w", ip, pool, err)
	}
	return nil
}

// ReleaseLBAddress gives ip of pool back, as the IPAM store's Release does: its holder moves to
// allocatedHistory, one more is available.
func (c *Cluster) ReleaseLBAddress(ctx context.Context, pool, ip string) error {
	_, err := c.change(ctx, LBPoolResource, "", pool, false, func(u *unstructured.Unstructured) error {
		holder, found, _ := unstructured.NestedString(u.Object, "status", "allocated", ip)
		if !found {
			return nil
		}
		available, _, _ := unstructured.NestedInt64(u.Object, "status", "available")
		unstructured.RemoveNestedField(u.Object, "status", "allocated", ip)
		if err := unstructured.SetNestedField(u.Object, holder, "status", "allocatedHistory", ip); err != nil {
			return err
		}
		return unstructured.SetNestedField(u.Object, available+1, "status", "available")
	})
	if err != nil {
		return fmt.Errorf("releasing %s of IP pool %s: %w", ip, pool, err)
	}
	return nil
}

// DeleteLBPool deletes the pool name. Harvester's webhook would refuse while addresses are
// allocated; the rig does not, so that a test can take a pool away under a guest.
func (c *Cluster) DeleteLBPool(ctx context.Context, name string) error {
	return c.remove(ctx, LBPoolResource, "", name)
}

// networkVid is the VLAN id the webhook labels a pool of network with (pkg/utils/vid.go GetVid):
// the NAD's vlan-id label, else the vlan of its config, 0 without a network. A network that does
// not exist is an error, as the webhook's is.
func (c *Cluster) networkVid(ctx context.Context, network string) (int, error) {
	if network == "" {
		return 0, nil
	}
	namespace, name, ok := strings.Cut(network, "/")
	if !ok || strings.Contains(name, "/") {
		return 0, fmt.Errorf("invalid network %s", network)
	}
	nad, err := c.resource(NADResource, namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	if vlan, ok := nad.GetLabels()[LabelVlanID]; ok {
		vid, err := strconv.Atoi(vlan)
		if err != nil {
			return 0, fmt.Errorf("invalid vlan %s", vlan)
		}
		return vid, nil
	}
	config, _, _ := unstructured.NestedString(nad.Object, "spec", "config")
	var conf struct {
		Vlan int `json:"vlan"`
	}
	if err := json.Unmarshal([]byte(config), &conf); err != nil {
		return 0, err
	}
	return conf.Vlan, nil
}

// isGlobal is the webhook's isGlobalIPPool: one scope, all of whose fields are "*".
func isGlobal(scope []Scope) bool {
	return len(scope) == 1 && scope[0] == Scope{Project: All, Namespace: All, GuestCluster: All}
}

// lastAllocated is the greatest of the allocated addresses: the IPAM allocator hands them out in
// order, so the last it recorded is the highest, "" when none.
func lastAllocated(allocated map[string]string) string {
	last := ""
	for ip := range allocated {
		if last == "" || compareIPs(ip, last) > 0 {
			last = ip
		}
	}
	return last
}

// toMap is the struct v points to as an unstructured object, numbers as int64.
func toMap(v interface{}) (map[string]interface{}, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(v)
}

// stringMap is m as an unstructured object.
func stringMap(m map[string]string) map[string]interface{} {
	out := make(map[string]interface{}, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
