// Package crds builds the CustomResourceDefinitions of the kubefip kinds from their Go types: the
// schema comes from the types and the descriptions from their doc comments (through the generated
// SwaggerDoc methods), and this package adds what the types cannot say — printer columns, short
// names, the kubefip category and the address validation the API server applies at the door.
package crds

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/rancher/wrangler/v2/pkg/crd"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// groupVersion is spelled out rather than taken from the generated register file, so that the code
// generator, which imports this package, builds on a tree without generated code.
var groupVersion = schema.GroupVersion{Group: "kubefip.k8s.binbash.org", Version: "v1"}

const readyColumn = `.status.conditions[?(@.type=="Ready")].status`

// Category is the category of every kubefip kind: `kubectl get kubefip` lists every range, address
// and allocation.
const Category = "kubefip"

// maxAddressLength bounds every address-like string: the longest IPv6 CIDR text is 43 characters,
// an inclusive IPv6 range 79.
const maxAddressLength = 96

// mappedAddress matches text that starts with an IPv4-mapped IPv6 address (::ffff:10.0.0.1,
// 0:0:0:0:0:ffff:a00:1, ::ffff:a00:1): five zero groups, then ffff. Written with "::" before ffff,
// the address is mapped only when exactly two groups (or a dotted quad) follow ffff; "::ffff:1" is
// an ordinary IPv6 address. The API server of the oldest supported Kubernetes has no CEL IP
// library, so the rule is a regular expression (RE2, no look-ahead).
const mappedAddress = `(0{1,4}:){5}[fF]{4}:` +
	`|((0{1,4}:){1,4}|:)(:0{1,4})*:[fF]{4}:([0-9]{1,3}([.][0-9]{1,3}){3}|[0-9a-fA-F]{1,4}:[0-9a-fA-F]{1,4})(/|-|$)`

const mappedMessage = "IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are not allowed: write the IPv4 form"

// List returns the CRDs of the kubefip kinds, ready to be written or applied.
func List() ([]*apiextv1.CustomResourceDefinition, error) {
	defs := []struct {
		def crd.CRD
		// wide columns show with kubectl get -o wide. They are added after the conversion, which
		// cannot carry a column's int32 priority through wrangler's unstructured CRD.
		wide   []apiextv1.CustomResourceColumnDefinition
		obj    interface{}
		mutate func(*apiextv1.JSONSchemaProps)
	}{
		{
			def: crd.CRD{
				GVK:          groupVersion.WithKind("FloatingIPRange"),
				PluralName:   "floatingipranges",
				SingularName: "floatingiprange",
				NonNamespace: true,
				Status:       true,
				ShortNames:   []string{"fiprange", "fipranges"},
				Categories:   []string{Category},
				Columns: []apiextv1.CustomResourceColumnDefinition{
					{Name: "Harvester", Type: "string", JSONPath: ".metadata.annotations." + v1.AnnotationHarvesterClusterName,
						Description: "Harvester cluster whose VM network the pool is on"},
					{Name: "Network", Type: "string", JSONPath: ".metadata.annotations." + v1.AnnotationHarvesterNetworkName,
						Description: "Harvester VM network the pool's addresses are on"},
					{Name: "CIDR", Type: "string", JSONPath: ".spec.iprange", Description: "Pool of addresses, an IPv4 or IPv6 CIDR"},
					// The integer counts are absent, and the cells empty, for a pool too large
					// for an int64; the exact counts are the wide Exact- columns.
					{Name: "Capacity", Type: "integer", JSONPath: ".status.capacityCount",
						Description: "Addresses the pool can hand out (empty when too many to count here: see Exact-Capacity)"},
					{Name: "Used", Type: "integer", JSONPath: ".status.used", Description: "Addresses held by FloatingIPs"},
					{Name: "Available", Type: "integer", JSONPath: ".status.availableCount",
						Description: "Addresses still free to hand out (empty when too many to count here: see Exact-Available)"},
					{Name: "Used%", Type: "integer", JSONPath: ".status.usedPercent",
						Description: "Share of the pool held or retained, in whole percent rounded down"},
					{Name: "Priority", Type: "integer", JSONPath: ".spec.priority",
						Description: "Selection order among the ranges of one network: the higher first, then by name (empty is 0)"},
					{Name: "Ready", Type: "string", JSONPath: readyColumn, Description: "Whether the pool is valid and hands out addresses"},
					{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp", Description: "Time since the range was created"},
				},
			}.WithSchemaFromStruct(v1.FloatingIPRange{}),
			wide: []apiextv1.CustomResourceColumnDefinition{
				{Name: "Per-Cluster", Type: "integer", JSONPath: ".spec.maxAddressesPerCluster", Priority: 1,
					Description: "Most addresses of the range one guest cluster may hold (empty: no limit)"},
				{Name: "Selector", Type: "string", JSONPath: ".status.clusterSelector", Priority: 1,
					Description: "Labels of the Rancher provisioning clusters the range is for (empty: every cluster)"},
				{Name: "Retained", Type: "integer", JSONPath: ".status.retained", Priority: 1,
					Description: "Addresses kept for deleted guest clusters until they return or retention ends"},
				{Name: "Exact-Capacity", Type: "string", JSONPath: ".status.capacity", Priority: 1,
					Description: "Capacity as an exact decimal number, however large the pool"},
				{Name: "Exact-Available", Type: "string", JSONPath: ".status.available", Priority: 1,
					Description: "Available addresses as an exact decimal number, however large the pool"},
			},
			obj:    v1.FloatingIPRange{},
			mutate: rangeValidation,
		},
		{
			def: crd.CRD{
				GVK:          groupVersion.WithKind("FloatingIP"),
				PluralName:   "floatingips",
				SingularName: "floatingip",
				Status:       true,
				ShortNames:   []string{"fip", "fips"},
				Categories:   []string{Category},
				Columns: []apiextv1.CustomResourceColumnDefinition{
					{Name: "IP", Type: "string", JSONPath: ".status.ipaddress", Description: "Address held in the range; empty while none is"},
					{Name: "Range", Type: "string", JSONPath: ".metadata.annotations." + v1.AnnotationFloatingIPRange,
						Description: "FloatingIPRange the address comes from"},
					{Name: "Cluster", Type: "string", JSONPath: ".metadata.annotations." + v1.AnnotationClusterName,
						Description: "Rancher guest cluster the address is for"},
					{Name: "Guest", Type: "string", JSONPath: ".status.guestState",
						Description: "Guest cluster state: Pending, Provisioning, Disconnected, Configured or Error"},
					{Name: "Served", Type: "string", JSONPath: `.status.conditions[?(@.type=="Served")].reason`,
						Description: "What the guest shows of the address: Served (a Service's status holds it), Idle (nothing asks for it yet), or why not"},
					{Name: "Ready", Type: "string", JSONPath: readyColumn, Description: "Whether the address is held, the guest cluster configured and the address served (or nothing asks for it yet)"},
					{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp", Description: "Time since the FloatingIP was created"},
				},
			}.WithSchemaFromStruct(v1.FloatingIP{}),
			wide: []apiextv1.CustomResourceColumnDefinition{
				{Name: "Served-By", Type: "string", JSONPath: ".status.servedBy", Priority: 1,
					Description: "LoadBalancer Services of the guest whose status holds the address"},
				{Name: "Guest-Addresses", Type: "string", JSONPath: ".status.guestAddresses", Priority: 1,
					Description: "Addresses last written to the guest cluster's kube-vip ConfigMap"},
			},
			obj:    v1.FloatingIP{},
			mutate: floatingIPValidation,
		},
		{
			def: crd.CRD{
				GVK:          groupVersion.WithKind("FloatingIPAllocation"),
				PluralName:   "floatingipallocations",
				SingularName: "floatingipallocation",
				NonNamespace: true,
				ShortNames:   []string{"fipalloc", "fipallocs"},
				Categories:   []string{Category},
				// JSONPath cannot join namespace/name: OWNER is the FloatingIP's name (the last
				// one, for a retained address), its namespace is a wide column. RETAINED-FOR and
				// UNTIL are empty while a FloatingIP holds the address.
				Columns: []apiextv1.CustomResourceColumnDefinition{
					{Name: "Address", Type: "string", JSONPath: ".spec.address", Description: "The allocated address"},
					{Name: "Harvester", Type: "string", JSONPath: ".spec.space.harvesterClusterName",
						Description: "Harvester cluster of the address space the address is unique in"},
					{Name: "Network", Type: "string", JSONPath: ".spec.space.harvesterNetworkName",
						Description: "Harvester VM network of the address space the address is unique in"},
					{Name: "Range", Type: "string", JSONPath: ".spec.range", Description: "FloatingIPRange the address was taken from"},
					{Name: "Owner", Type: "string", JSONPath: ".spec.owner.name",
						Description: "FloatingIP holding the address (the last one, for a retained address)"},
					{Name: "Retained-For", Type: "string", JSONPath: ".spec.retained.cluster.name",
						Description: "Deleted guest cluster the address is kept for; empty while a FloatingIP holds it"},
					{Name: "Until", Type: "date", JSONPath: ".spec.retained.until",
						Description: "When a retained address is released; empty while a FloatingIP holds it"},
					{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp", Description: "Time since the address was allocated"},
				},
			}.WithSchemaFromStruct(v1.FloatingIPAllocation{}),
			wide: []apiextv1.CustomResourceColumnDefinition{
				{Name: "Owner-Namespace", Type: "string", JSONPath: ".spec.owner.namespace", Priority: 1,
					Description: "Namespace of the FloatingIP holding the address"},
			},
			obj:    v1.FloatingIPAllocation{},
			mutate: allocationValidation,
		},
	}

	var result []*apiextv1.CustomResourceDefinition
	for _, d := range defs {
		obj, err := d.def.ToCustomResourceDefinition()
		if err != nil {
			return nil, fmt.Errorf("building CRD %s: %w", d.def.GVK.Kind, err)
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return nil, fmt.Errorf("building CRD %s: unexpected type %T", d.def.GVK.Kind, obj)
		}
		def := &apiextv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, def); err != nil {
			return nil, fmt.Errorf("building CRD %s: %w", d.def.GVK.Kind, err)
		}
		def.APIVersion = "apiextensions.k8s.io/v1"
		def.Kind = "CustomResourceDefinition"
		version := &def.Spec.Versions[0]
		version.AdditionalPrinterColumns = beforeAge(version.AdditionalPrinterColumns, d.wide)
		root := version.Schema.OpenAPIV3Schema
		d.mutate(root)
		describe(root, reflect.TypeOf(d.obj))
		result = append(result, def)
	}
	return result, nil
}

// rangeValidation: spec.iprange must be an IPv4 or IPv6 CIDR; excludes are bounded strings whose
// exact form (address, CIDR or range inside the pool) the range controller checks and reports.
func rangeValidation(root *apiextv1.JSONSchemaProps) {
	spec := root.Properties["spec"]
	spec.Required = []string{"iprange"}
	iprange := spec.Properties["iprange"]
	iprange.Nullable = false
	iprange.Format = "cidr"
	iprange.MaxLength = ptr.To[int64](maxAddressLength)
	iprange.XValidations = apiextv1.ValidationRules{{
		Rule:    "!self.matches('^(" + mappedAddress + ")')",
		Message: mappedMessage,
	}}
	spec.Properties["iprange"] = iprange

	exclude := spec.Properties["exclude"]
	exclude.MaxItems = ptr.To[int64](1024)
	items := *exclude.Items.Schema
	items.MinLength = ptr.To[int64](1)
	items.MaxLength = ptr.To[int64](maxAddressLength)
	items.Pattern = `^[0-9A-Fa-f:.]+(/[0-9]{1,3}|-[0-9A-Fa-f:.]+)?$`
	// Either end of a range may be the mapped one.
	items.XValidations = apiextv1.ValidationRules{{
		Rule:    "!self.matches('(^|-)(" + mappedAddress + ")')",
		Message: mappedMessage,
	}}
	exclude.Items.Schema = &items
	spec.Properties["exclude"] = exclude

	// Both are int32 in the Go type: a larger number would pass an integer schema and then fail
	// to decode, keeping the whole list from the operator's cache.
	limit := spec.Properties["maxAddressesPerCluster"]
	limit.Format, limit.Minimum, limit.Maximum = "int32", ptr.To[float64](0), ptr.To[float64](math.MaxInt32)
	spec.Properties["maxAddressesPerCluster"] = limit
	priority := spec.Properties["priority"]
	priority.Format, priority.Minimum, priority.Maximum = "int32", ptr.To[float64](math.MinInt32), ptr.To[float64](math.MaxInt32)
	spec.Properties["priority"] = priority
	spec.Properties["clusterSelector"] = labelSelectorSchema(spec.Properties["clusterSelector"])
	spec.Properties["dns"] = dnsSchema(spec.Properties["dns"])
	root.Properties["spec"] = spec
}

// dnsSchema bounds a range's spec.dns: the zone is lowercase DNS labels, the name DNS labels in
// which {cluster} may stand, the TTL a day at most. What a name renders to for one cluster is
// judged where it is rendered (pkg/dnsname).
func dnsSchema(dns apiextv1.JSONSchemaProps) apiextv1.JSONSchemaProps {
	const label, part = `[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?`, `([-a-z0-9]|\{cluster\})+`
	dns.Required = []string{"zone"}
	zone := dns.Properties["zone"]
	zone.MinLength, zone.MaxLength = ptr.To[int64](1), ptr.To[int64](200)
	zone.Pattern = `^(` + label + `\.)*` + label + `$`
	dns.Properties["zone"] = zone
	name := dns.Properties["name"]
	name.MaxLength = ptr.To[int64](120)
	name.Pattern = `^` + part + `(\.` + part + `)*$`
	dns.Properties["name"] = name
	ttl := dns.Properties["ttl"]
	ttl.Minimum, ttl.Maximum = ptr.To[float64](1), ptr.To[float64](86400)
	dns.Properties["ttl"] = ttl
	return dns
}

// labelSelectorSchema bounds a label selector and names its operators, as Kubernetes' own
// validation does, so that a mistyped operator is refused at the door rather than shown as an
// invalid range.
func labelSelectorSchema(sel apiextv1.JSONSchemaProps) apiextv1.JSONSchemaProps {
	matchLabels := sel.Properties["matchLabels"]
	matchLabels.MaxProperties = ptr.To[int64](32)
	sel.Properties["matchLabels"] = matchLabels
	exprs := sel.Properties["matchExpressions"]
	exprs.MaxItems = ptr.To[int64](32)
	item := *exprs.Items.Schema
	op := item.Properties["operator"]
	op.Enum = nil
	for _, o := range []string{"In", "NotIn", "Exists", "DoesNotExist"} {
		op.Enum = append(op.Enum, apiextv1.JSON{Raw: []byte(`"` + o + `"`)})
	}
	item.Properties["operator"] = op
	values := item.Properties["values"]
	values.MaxItems = ptr.To[int64](64)
	item.Properties["values"] = values
	exprs.Items.Schema = &item
	sel.Properties["matchExpressions"] = exprs
	return sel
}

// floatingIPValidation: spec.ipaddress, when given, must be a single IPv4 or IPv6 address.
func floatingIPValidation(root *apiextv1.JSONSchemaProps) {
	spec := root.Properties["spec"]
	ip := spec.Properties["ipaddress"]
	ip.Nullable = false
	ip.MaxLength = ptr.To[int64](maxAddressLength)
	ip.AnyOf = []apiextv1.JSONSchemaProps{
		{Format: "ipv4"},
		{Format: "ipv6"},
		{MaxLength: ptr.To[int64](0)},
	}
	spec.Properties["ipaddress"] = ip
	root.Properties["spec"] = spec
}

// beforeAge inserts extra columns ahead of a trailing Age column, where kubectl users expect it.
func beforeAge(columns, extra []apiextv1.CustomResourceColumnDefinition) []apiextv1.CustomResourceColumnDefinition {
	if n := len(columns); n > 0 && columns[n-1].Name == "Age" {
		return slices.Insert(columns, n-1, extra...)
	}
	return append(columns, extra...)
}

// WriteFiles writes one YAML file per CRD into dir, named after the CRD.
func WriteFiles(dir string) error {
	list, err := List()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, def := range list {
		data, err := Marshal(def)
		if err != nil {
			return err
		}
		file := filepath.Join(dir, strings.ReplaceAll(def.Name, ".", "_")+".yaml")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", file, err)
		}
	}
	return nil
}

// Marshal renders a CRD as YAML without the server-side fields a file must not carry.
func Marshal(def *apiextv1.CustomResourceDefinition) ([]byte, error) {
	out := def.DeepCopy()
	out.Status = apiextv1.CustomResourceDefinitionStatus{}
	// Keep the CRDs (and so every FloatingIP and range) when the CRD chart is uninstalled.
	metav1.SetMetaDataAnnotation(&out.ObjectMeta, "helm.sh/resource-policy", "keep")
	data, err := yaml.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("marshalling CRD %s: %w", def.Name, err)
	}
	// creationTimestamp: null and an empty status are noise in a chart template.
	lines := slices.DeleteFunc(strings.Split(string(data), "\n"), func(line string) bool {
		return strings.TrimSpace(line) == "creationTimestamp: null"
	})
	text := strings.Join(lines, "\n")
	if i := strings.Index(text, "\nstatus:\n"); i >= 0 {
		text = text[:i+1]
	}
	return []byte("# Generated by pkg/codegen from pkg/apis/kubefip.k8s.binbash.org/v1; do not edit.\n" + text), nil
}
