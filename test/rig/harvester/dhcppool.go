package harvester

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// What vm-dhcp-controller v1.8.1 writes (pkg/util/common.go).
const (
	// DHCPReserved marks the DHCP server's and the router's addresses in status.ipv4.allocated.
	DHCPReserved = "RESERVED"
	// DHCPExcluded marks each address of spec.ipv4Config.pool.exclude.
	DHCPExcluded = "EXCLUDED"
	// The labels the IP pool controller puts on the pool's network (ensureNADLabels).
	LabelDHCPPoolNamespace = "network.harvesterhci.io/ippool-namespace"
	LabelDHCPPoolName      = "network.harvesterhci.io/ippool-name"
)

// DHCPPool is an IP pool of Harvester's VM DHCP add-on (vm-dhcp-controller), namespaced: spec as a
// person writes it, Leases as the controller records the addresses it gave VMs.
type DHCPPool struct {
	Namespace, Name string
	// Network is the VM network the pool serves, "namespace/name" of a NAD.
	Network string
	// ServerIP is the agent's DHCP server address; CIDR the network's; Start..End the range handed
	// out, Exclude addresses in it never handed out; Router the default gateway, if any.
	ServerIP, CIDR, Start, End, Router string
	Exclude                            []string
	// Leases maps each address handed to a VM to the VM interface's MAC address.
	Leases map[string]string
}

// CreateDHCPPool creates the pool p as vm-dhcp-controller v1.8.1 leaves a running one: created
// with the spec a person writes (the webhook's defaulting of a missing serverIP or range is not
// done: give them), then its status written through the status subresource as the controller's
// OnChange and its status handlers do: ipv4.allocated holding the leases and the server, router
// and excluded addresses of the range marked RESERVED or EXCLUDED, used and available counted as
// its IPAM counts them, lastUpdate, and the conditions Registered, CacheReady and AgentReady True
// and Stopped False. The controller also labels the pool's network with the pool's namespace and
// name, and so does this. The agent pod's reference is left out: no agent runs here.
func (c *Cluster) CreateDHCPPool(ctx context.Context, p DHCPPool) (*unstructured.Unstructured, error) {
	if err := c.ensureNamespace(ctx, p.Namespace); err != nil {
		return nil, err
	}
	pool := newObject(DHCPPoolResource, "IPPool", p.Namespace, p.Name)
	ipv4 := map[string]interface{}{
		"serverIP": p.ServerIP, "cidr": p.CIDR,
		"pool": map[string]interface{}{"start": p.Start, "end": p.End},
	}
	if p.Router != "" {
		ipv4["router"] = p.Router
	}
	if len(p.Exclude) > 0 {
		exclude := make([]interface{}, len(p.Exclude))
		for i, ip := range p.Exclude {
			exclude[i] = ip
		}
		ipv4["pool"].(map[string]interface{})["exclude"] = exclude
	}
	pool.Object["spec"] = map[string]interface{}{"ipv4Config": ipv4, "networkName": p.Network}
	// The webhook refuses a pool whose network does not exist: labelling it first finds that out.
	if err := c.labelPoolNetwork(ctx, p); err != nil {
		return nil, err
	}
	if _, err := c.resource(DHCPPoolResource, p.Namespace).Create(ctx, pool, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating DHCP pool %s/%s: %w", p.Namespace, p.Name, err)
	}
	out, err := c.change(ctx, DHCPPoolResource, p.Namespace, p.Name, true, func(u *unstructured.Unstructured) error {
		u.Object["status"] = dhcpStatus(p, metav1.Now())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("writing the status of DHCP pool %s/%s: %w", p.Namespace, p.Name, err)
	}
	return out, nil
}

// dhcpStatus is the status the controller writes for p at now.
func dhcpStatus(p DHCPPool, now metav1.Time) map[string]interface{} {
	allocated := map[string]interface{}{}
	for ip, mac := range p.Leases {
		allocated[ip] = mac
	}
	// The IPAM revokes the server's, the router's and the excluded addresses of the range: they
	// are neither used nor available.
	revoked := map[string]bool{}
	for _, ip := range []string{p.ServerIP, p.Router} {
		if inRange(ip, p.Start, p.End) {
			allocated[ip] = DHCPReserved
			revoked[ip] = true
		}
	}
	for _, ip := range p.Exclude {
		allocated[ip] = DHCPExcluded
		if inRange(ip, p.Start, p.End) {
			revoked[ip] = true
		}
	}
	used := 0
	for ip := range p.Leases {
		if inRange(ip, p.Start, p.End) && !revoked[ip] {
			used++
		}
	}
	ipv4 := map[string]interface{}{"used": int64(used), "available": int64(rangeSize(p.Start, p.End) - len(revoked) - used)}
	if len(allocated) > 0 {
		ipv4["allocated"] = allocated
	}
	ts := stamp(now)
	condition := func(kind, status string) interface{} {
		return map[string]interface{}{"type": kind, "status": status, "lastUpdateTime": ts}
	}
	return map[string]interface{}{
		"lastUpdate": ts,
		"ipv4":       ipv4,
		"conditions": []interface{}{
			condition("Registered", "True"), condition("CacheReady", "True"),
			condition("AgentReady", "True"), condition("Stopped", "False"),
		},
	}
}

// labelPoolNetwork labels the pool's network with the pool, as the controller's ensureNADLabels
// does.
func (c *Cluster) labelPoolNetwork(ctx context.Context, p DHCPPool) error {
	namespace, name, ok := strings.Cut(p.Network, "/")
	if !ok {
		// The webhook reads a bare name as a network of the default namespace.
		namespace, name = "default", p.Network
	}
	_, err := c.change(ctx, NADResource, namespace, name, false, func(nad *unstructured.Unstructured) error {
		labels := nad.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[LabelDHCPPoolNamespace], labels[LabelDHCPPoolName] = p.Namespace, p.Name
		nad.SetLabels(labels)
		return nil
	})
	if err != nil {
		return fmt.Errorf("labelling network %s with DHCP pool %s/%s: %w", p.Network, p.Namespace, p.Name, err)
	}
	return nil
}

// DeleteDHCPPool deletes pool namespace/name; one already gone is no error.
func (c *Cluster) DeleteDHCPPool(ctx context.Context, namespace, name string) error {
	return c.remove(ctx, DHCPPoolResource, namespace, name)
}
