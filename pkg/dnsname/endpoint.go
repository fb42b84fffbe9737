package dnsname

import (
	"fmt"
	"net/netip"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// Resource is external-dns's DNSEndpoint, as sigs.k8s.io/external-dns v0.22.0 defines it (the CRD
// config/crd/standard/dnsendpoints.externaldns.k8s.io.yaml): its crd source (source/crd.go) reads
// spec.endpoints and, once it has read a generation, writes status.observedGeneration, before any
// record reaches the DNS provider.
var Resource = schema.GroupVersionResource{Group: "externaldns.k8s.io", Version: "v1alpha1", Resource: "dnsendpoints"}

// Kind is the DNSEndpoint kind.
const Kind = "DNSEndpoint"

// LabelFloatingIP on a DNSEndpoint names the FloatingIP, in its namespace, whose address it
// publishes. The operator watches, changes and deletes only DNSEndpoints that carry it.
const LabelFloatingIP = "kubefip.k8s.binbash.org/floatingip"

// Record types.
const (
	RecordA    = "A"
	RecordAAAA = "AAAA"
)

// Endpoint is one record of spec.endpoints: the fields the operator writes.
type Endpoint struct {
	DNSName    string   `json:"dnsName"`
	Targets    []string `json:"targets"`
	RecordType string   `json:"recordType"`
	RecordTTL  int64    `json:"recordTTL,omitempty"`
}

// RecordType is the record type of addr: A for IPv4, AAAA for IPv6.
func RecordType(addr netip.Addr) string {
	if addr.Is4() {
		return RecordA
	}
	return RecordAAAA
}

// Endpoints are the records publishing addr under names, with ttl.
func Endpoints(names []string, addr netip.Addr, ttl int64) []Endpoint {
	out := make([]Endpoint, 0, len(names))
	for _, n := range names {
		out = append(out, Endpoint{DNSName: n, Targets: []string{addr.String()}, RecordType: RecordType(addr), RecordTTL: ttl})
	}
	return out
}

// New is the DNSEndpoint of FloatingIP f with endpoints: named as f, in f's namespace, labelled
// LabelFloatingIP and owned by f, so that the garbage collector deletes it with f.
func New(f *v1.FloatingIP, endpoints []Endpoint) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(Resource.GroupVersion().String())
	u.SetKind(Kind)
	u.SetNamespace(f.Namespace)
	u.SetName(f.Name)
	u.SetLabels(map[string]string{LabelFloatingIP: f.Name})
	u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: v1.SchemeGroupVersion.String(), Kind: "FloatingIP",
		Name: f.Name, UID: f.UID, Controller: ptr.To(true)}})
	SetEndpoints(u, endpoints)
	return u
}

// SetEndpoints writes endpoints into u's spec.endpoints.
func SetEndpoints(u *unstructured.Unstructured, endpoints []Endpoint) {
	list := make([]interface{}, 0, len(endpoints))
	for _, e := range endpoints {
		m, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&e) // a plain struct: never fails
		list = append(list, m)
	}
	_ = unstructured.SetNestedSlice(u.Object, list, "spec", "endpoints") // a map of plain values
}

// maxEndpoints bounds what the operator reads of a DNSEndpoint: it writes two records at most.
const maxEndpoints = 16

// Observed is what the operator reads of a DNSEndpoint.
type Observed struct {
	Endpoints []Endpoint
	// Generation is the DNSEndpoint's metadata.generation, ObservedGeneration its
	// status.observedGeneration: the generation external-dns's crd source last took in.
	Generation, ObservedGeneration int64
}

// Read decodes what the operator reads of u, judging its shape: at most maxEndpoints records, each
// a name, a type and targets.
func Read(u *unstructured.Unstructured) (Observed, error) {
	out := Observed{Generation: u.GetGeneration()}
	if g, found, err := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); err == nil && found {
		out.ObservedGeneration = g
	}
	list, _, err := unstructured.NestedSlice(u.Object, "spec", "endpoints")
	if err != nil {
		return out, fmt.Errorf("spec.endpoints: %w", err)
	}
	if len(list) > maxEndpoints {
		return out, fmt.Errorf("spec.endpoints has %d records, more than %d", len(list), maxEndpoints)
	}
	for i, item := range list {
		m, ok := item.(map[string]interface{})
		if !ok {
			return out, fmt.Errorf("spec.endpoints[%d] is no object", i)
		}
		var e Endpoint
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &e); err != nil {
			return out, fmt.Errorf("spec.endpoints[%d]: %w", i, err)
		}
		if len(e.Targets) > maxEndpoints {
			return out, fmt.Errorf("spec.endpoints[%d] has %d targets, more than %d", i, len(e.Targets), maxEndpoints)
		}
		out.Endpoints = append(out.Endpoints, e)
	}
	return out, nil
}

// Same says whether a and b are the same records, in order.
func Same(a, b []Endpoint) bool {
	return slices.EqualFunc(a, b, func(x, y Endpoint) bool {
		return x.DNSName == y.DNSName && x.RecordType == y.RecordType && x.RecordTTL == y.RecordTTL && slices.Equal(x.Targets, y.Targets)
	})
}

// NamesOf lists the record names of endpoints.
func NamesOf(endpoints []Endpoint) []string {
	out := make([]string, 0, len(endpoints))
	for _, e := range endpoints {
		out = append(out, e.DNSName)
	}
	return out
}
