package kubevipconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// The ConfigMap kube-vip-cloud-provider reads when its Deployment names none, and its global
// pool's key, which the operator writes.
const (
	KubevipConfigMapNamespace = "kube-system"
	KubevipConfigMap          = "kubevip"
	GlobalCIDRKey             = "cidr-global"
)

// ConfigMapRef names the ConfigMap the operator writes the address into.
type ConfigMapRef struct {
	Namespace string
	Name      string
}

func (r ConfigMapRef) String() string { return r.Namespace + "/" + r.Name }

// DefaultConfigMap is kube-system/kubevip: where a provider without KUBEVIP_NAMESPACE and
// KUBEVIP_CONFIG_MAP reads, and where the original operator always wrote.
func DefaultConfigMap() ConfigMapRef {
	return ConfigMapRef{Namespace: KubevipConfigMapNamespace, Name: KubevipConfigMap}
}

// CIDR renders addr as the single-address CIDR kube-vip-cloud-provider expects.
func CIDR(addr netip.Addr) string {
	return netip.PrefixFrom(addr, addr.BitLen()).String()
}

// ConfigMapResult says what EnsureAddresses did.
type ConfigMapResult int

const (
	ConfigMapUnchanged ConfigMapResult = iota
	ConfigMapCreated
	ConfigMapUpdated
	// ConfigMapLeftAlone: it exists with another value and updateConfigMap is not "true", or
	// (EnsureAddresses) a key the operator wants holds a person's value.
	ConfigMapLeftAlone
)

// The keys of kube-vip-cloud-provider's ConfigMap (v0.0.12, pkg/provider/loadBalancer.go,
// discoverPool and getConfig): for a Service in namespace ns the provider takes the first of
// cidr-<ns>, cidr-global, range-<ns>, range-global that exists. A cidr value is a list of CIDRs
// separated by commas alone: each part goes to netip.ParsePrefix untrimmed (pkg/ipam/
// addressbuilder.go, parseCidrs), so a space makes the whole key unusable. The order does not
// matter to the provider (the parts become one IP set, split by family), but it does to us: one
// set of addresses has one rendering, so an unchanged set is never written again.
const (
	// CIDRKeyPrefix starts every cidr key, the global one and the per-namespace ones.
	CIDRKeyPrefix = "cidr-"
	// RangeKeyPrefix starts every range key, which the operator never writes.
	RangeKeyPrefix = "range-"
	// GlobalPool is the provider's name for the pool of every namespace without a key of its own.
	GlobalPool = "global"
	// OwnedKeysAnnotation lists, sorted and separated by commas, the cidr-<namespace> keys of the
	// ConfigMap the operator wrote and may change or delete. It is there only while the operator
	// owns at least one such key: the ConfigMap of a guest with only global addresses carries
	// cidr-global and nothing else of ours.
	OwnedKeysAnnotation = "kubefip.k8s.binbash.org/owned-keys"
)

// MaxOwnedKeys is how many entries of an owned-keys annotation, which the guest may have filled
// with anything, are looked at; the rest are ignored.
const MaxOwnedKeys = 1024

// ErrInvalidAddresses means an Addresses holds something that can not be written as a pool.
var ErrInvalidAddresses = errors.New("invalid guest addresses")

// Addresses are the addresses the operator wants in one guest's kube-vip-cloud-provider
// ConfigMap: Global in cidr-global, for every namespace without a pool of its own, and
// Namespaced[ns] in cidr-<ns>, for the Services of namespace ns alone. A namespace with no
// address has no key.
type Addresses struct {
	Global     []netip.Addr
	Namespaced map[string][]netip.Addr
}

// CIDRKey is the key of namespace's pool: cidr-<namespace>, cidr-global for GlobalPool.
func CIDRKey(namespace string) string { return CIDRKeyPrefix + namespace }

// CIDRList renders addrs as one value of a cidr key: single-address CIDRs (/32, /128), IPv4
// before IPv6, each family in ascending order, without duplicates, separated by commas without
// spaces. One address renders as CIDR(addr).
func CIDRList(addrs []netip.Addr) string {
	sorted := slices.Clone(addrs)
	slices.SortFunc(sorted, netip.Addr.Compare)
	parts := make([]string, 0, len(sorted))
	for _, a := range slices.Compact(sorted) {
		parts = append(parts, CIDR(a))
	}
	return strings.Join(parts, ",")
}

// Keys renders a as the ConfigMap keys it wants, key to value. Every invalid entry is left out
// and named in the error (wrapping ErrInvalidAddresses): an address that is not valid, carries a
// zone or is unspecified (the provider reads 0.0.0.0/32 as "ask DHCP"), a namespace that is not
// a DNS-1123 label or is "global", whose key would be the global pool's.
func (a Addresses) Keys() (map[string]string, error) {
	keys := map[string]string{}
	var errs []error
	add := func(pool string, addrs []netip.Addr) {
		valid := make([]netip.Addr, 0, len(addrs))
		for _, addr := range addrs {
			if err := checkAddr(addr); err != nil {
				errs = append(errs, fmt.Errorf("%w: %s: %v", ErrInvalidAddresses, CIDRKey(pool), err))
				continue
			}
			valid = append(valid, addr)
		}
		if len(valid) > 0 {
			keys[CIDRKey(pool)] = CIDRList(valid)
		}
	}
	add(GlobalPool, a.Global)
	for _, ns := range slices.Sorted(maps.Keys(a.Namespaced)) {
		if !IsNamespacePool(ns) {
			errs = append(errs, fmt.Errorf("%w: namespace %q is not a DNS-1123 label other than %q", ErrInvalidAddresses, ns, GlobalPool))
			continue
		}
		add(ns, a.Namespaced[ns])
	}
	return keys, errors.Join(errs...)
}

func checkAddr(addr netip.Addr) error {
	switch {
	case !addr.IsValid():
		return errors.New("an invalid address")
	case addr.Zone() != "":
		return fmt.Errorf("%s carries a zone", addr)
	case addr.IsUnspecified():
		return fmt.Errorf("%s is unspecified", addr)
	}
	return nil
}

// IsNamespacePool says whether ns may have a pool of its own, cidr-<ns>.
func IsNamespacePool(ns string) bool {
	return len(ns) <= validation.DNS1123LabelMaxLength && ns != GlobalPool && len(validation.IsDNS1123Label(ns)) == 0
}

// isNamespaceKey: key has the shape of a per-namespace cidr key, the only shape the operator
// ever deletes.
func isNamespaceKey(key string) bool {
	ns, ok := strings.CutPrefix(key, CIDRKeyPrefix)
	return ok && IsNamespacePool(ns)
}

// ParseOwnedKeys reads an owned-keys annotation defensively: its first MaxOwnedKeys entries,
// trimmed, and of those only the cidr-<namespace> keys, sorted, without duplicates. Anything else
// in it is ignored, so a key of another shape is never taken for the operator's.
func ParseOwnedKeys(value string) []string {
	entries := strings.SplitN(value, ",", MaxOwnedKeys+1)
	if len(entries) > MaxOwnedKeys {
		entries = entries[:MaxOwnedKeys]
	}
	var keys []string
	for _, entry := range entries {
		if entry = strings.TrimSpace(entry); isNamespaceKey(entry) {
			keys = append(keys, entry)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// AddressesResult says what EnsureAddresses did. Result is ConfigMapCreated or ConfigMapUpdated
// when it wrote anything, else ConfigMapLeftAlone when LeftAlone is not empty, else
// ConfigMapUnchanged.
type AddressesResult struct {
	Result ConfigMapResult
	// LeftAlone are the wanted keys, sorted, that do not hold the wanted value and that the
	// operator did not write: cidr-global when update is false, and, whatever update says, a
	// cidr-<namespace> key a person wrote (one not in the owned-keys annotation) or one that would
	// hide a person's range-<namespace>.
	LeftAlone []string
}

// EnsureAddresses makes the ConfigMap ref carry want, in one create or one merge patch, so that
// keys and annotations of anyone else survive. A missing ConfigMap is created with every wanted
// key. In an existing one:
//   - cidr-global, when want has global addresses, as EnsureConfigMap always did: when it does
//     not hold the wanted value (or is missing), it is written only if update is true (the
//     FloatingIP's updateConfigMap), else left alone, since the ConfigMap may be a person's and
//     cidr-global would hide their range-global. With no global address it is not touched:
//     nothing says whether a person wrote it.
//   - cidr-<ns>, for each namespace with addresses: written when the owned-keys annotation lists
//     it, or when the namespace has no pool yet (neither cidr-<ns> nor range-<ns>). A pool a
//     person made for the namespace is left alone, even with update true: updateConfigMap has
//     always spoken of the global pool, not of pools a person made for namespaces of their own.
//   - a key the annotation lists that is no longer wanted is deleted; the annotation is rewritten
//     to list what the operator now owns, and removed when that is nothing.
//
// The patch carries the resourceVersion it was decided on, so that an edit in between ends in a
// conflict and a new pass rather than in a decision on a ConfigMap that is no longer there. An
// invalid want writes nothing: the error wraps ErrInvalidAddresses.
func EnsureAddresses(ctx context.Context, core corev1client.ConfigMapsGetter, ref ConfigMapRef, want Addresses, update bool) (AddressesResult, error) {
	keys, err := want.Keys()
	if err != nil {
		return AddressesResult{}, fmt.Errorf("%s: %w", ref, err)
	}
	cms := core.ConfigMaps(ref.Namespace)
	cm, err := cms.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if len(keys) == 0 {
			return AddressesResult{Result: ConfigMapUnchanged}, nil
		}
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace}, Data: keys}
		if owned := ownedAnnotation(keys); owned != "" {
			cm.Annotations = map[string]string{OwnedKeysAnnotation: owned}
		}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return AddressesResult{}, fmt.Errorf("creating %s: %w", ref, err)
		}
		return AddressesResult{Result: ConfigMapCreated}, nil
	}
	if err != nil {
		return AddressesResult{}, fmt.Errorf("reading %s: %w", ref, err)
	}
	p := planAddresses(cm, keys, update)
	res := AddressesResult{Result: ConfigMapUnchanged, LeftAlone: p.leftAlone}
	if len(p.leftAlone) > 0 {
		res.Result = ConfigMapLeftAlone
	}
	if len(p.data) == 0 && len(p.annotations) == 0 {
		return res, nil
	}
	meta := map[string]interface{}{}
	if cm.ResourceVersion != "" {
		meta["resourceVersion"] = cm.ResourceVersion
	}
	patch := map[string]interface{}{"metadata": meta}
	if len(p.data) > 0 {
		patch["data"] = p.data
	}
	if len(p.annotations) > 0 {
		meta["annotations"] = p.annotations
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return AddressesResult{}, err
	}
	if _, err := cms.Patch(ctx, ref.Name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		return AddressesResult{}, fmt.Errorf("updating %s: %w", ref, err)
	}
	res.Result = ConfigMapUpdated
	return res, nil
}

// personsPool: the per-namespace key, not the operator's, holds a pool of a person's, or would
// hide one: the provider takes cidr-<ns> before range-<ns> (loadBalancer.go, discoverPool).
func personsPool(cm *corev1.ConfigMap, key string) bool {
	_, cidr := cm.Data[key]
	_, ipRange := cm.Data[RangeKeyPrefix+strings.TrimPrefix(key, CIDRKeyPrefix)]
	return cidr || ipRange
}

// ownedAnnotation is the owned-keys annotation for the keys the operator holds: its
// per-namespace keys, sorted; "" for none.
func ownedAnnotation(keys map[string]string) string {
	owned := slices.DeleteFunc(slices.Sorted(maps.Keys(keys)), func(key string) bool { return key == GlobalCIDRKey })
	return strings.Join(owned, ",")
}

// addressesPlan is what EnsureAddresses changes in an existing ConfigMap, as merge-patch fields
// (nil deletes), and what it reports; no field: nothing to write.
type addressesPlan struct {
	data        map[string]interface{}
	annotations map[string]interface{}
	leftAlone   []string
}

// planAddresses decides, from the ConfigMap as read, which of the wanted keys are written, which
// owned keys are deleted and what the owned-keys annotation becomes.
func planAddresses(cm *corev1.ConfigMap, want map[string]string, update bool) addressesPlan {
	p := addressesPlan{data: map[string]interface{}{}, annotations: map[string]interface{}{}}
	previously := ParseOwnedKeys(cm.Annotations[OwnedKeysAnnotation])
	holds := map[string]string{}
	for _, key := range slices.Sorted(maps.Keys(want)) {
		value := want[key]
		current, exists := cm.Data[key]
		owned := slices.Contains(previously, key)
		switch {
		case exists && current == value:
		case key == GlobalCIDRKey && !update, key != GlobalCIDRKey && !owned && personsPool(cm, key):
			p.leftAlone = append(p.leftAlone, key)
			continue
		default:
			p.data[key] = value
		}
		if owned || !exists {
			holds[key] = value
		}
	}
	for _, key := range previously {
		if _, wanted := want[key]; wanted {
			continue
		}
		if _, exists := cm.Data[key]; exists {
			p.data[key] = nil
		}
	}
	current, annotated := cm.Annotations[OwnedKeysAnnotation]
	switch owned := ownedAnnotation(holds); {
	case owned == "" && annotated:
		p.annotations[OwnedKeysAnnotation] = nil
	case owned != "" && owned != current:
		p.annotations[OwnedKeysAnnotation] = owned
	}
	return p
}
