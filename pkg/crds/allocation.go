package crds

import (
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// allocationIPv6Name is the shape of v1.AllocationName for an IPv6 address: eight groups of four
// lower-case hex digits joined by '-'.
const allocationIPv6Name = `^[0-9a-f]{4}(-[0-9a-f]{4}){7}$`

// canonicalIPv4 is a dotted quad without leading zeros; the ipv4 format bounds each octet.
const canonicalIPv4 = `^(0|[1-9][0-9]{0,2})([.](0|[1-9][0-9]{0,2})){3}$`

// allocationValidation makes the API server keep what the operator relies on: an allocation's name
// is its address, so that the uniqueness of names is the uniqueness of addresses, and its spec
// never changes, so that deleting the object is the only way to release the address. Every rule
// works on Kubernetes v1.30 and uses no CEL IP library: the oldest supported API server has none.
func allocationValidation(root *apiextv1.JSONSchemaProps) {
	// Root rules may read metadata.name. For IPv4 the name is the canonical address itself. For
	// IPv6 only the shape can be checked: expanding the compressed form needs the IP library. The
	// operator reads the address from the name and flags an object whose spec disagrees.
	root.XValidations = apiextv1.ValidationRules{{
		Rule: "self.spec.address.contains(':') ? self.metadata.name.matches('" + allocationIPv6Name + "')" +
			" : self.metadata.name == self.spec.address",
		Message: "metadata.name must be the address: the dotted quad for IPv4, the fully expanded " +
			"lower-case IPv6 address with - for : (fd00-0000-0000-0000-0000-0000-0000-0005)",
	}}
	root.Required = appendMissing(root.Required, "spec")

	spec := root.Properties["spec"]
	spec.Required = []string{"address", "range", "owner"}
	// A transition rule: it runs on updates only.
	spec.XValidations = apiextv1.ValidationRules{{
		Rule:    "self == oldSelf",
		Message: "spec is immutable: an address is released by deleting its FloatingIPAllocation",
	}}

	address := spec.Properties["address"]
	address.Nullable = false
	address.MaxLength = int64Ptr(39)
	address.AnyOf = []apiextv1.JSONSchemaProps{{Format: "ipv4"}, {Format: "ipv6"}}
	address.XValidations = apiextv1.ValidationRules{
		{Rule: "!self.matches('^(" + mappedAddress + ")')", Message: mappedMessage},
		{
			Rule: "self.contains(':') ? self.matches('^[0-9a-f:]+$') && !self.matches('(^|:)0[0-9a-f]')" +
				" : self.matches('" + canonicalIPv4 + "')",
			Message: "the address must be in canonical form: no leading zeros, IPv6 in lower case",
		},
	}
	spec.Properties["address"] = address

	rng := spec.Properties["range"]
	rng.Nullable = false
	rng.MinLength = int64Ptr(1)
	rng.MaxLength = int64Ptr(253)
	spec.Properties["range"] = rng

	owner := spec.Properties["owner"]
	owner.Required = []string{"namespace", "name", "uid"}
	for field, max := range map[string]int64{"namespace": 63, "name": 253, "uid": 36} {
		prop := owner.Properties[field]
		prop.Nullable = false
		prop.MinLength = int64Ptr(1)
		prop.MaxLength = int64Ptr(max)
		owner.Properties[field] = prop
	}
	spec.Properties["owner"] = owner
	root.Properties["spec"] = spec
}

func appendMissing(list []string, item string) []string {
	for _, s := range list {
		if s == item {
			return list
		}
	}
	return append(list, item)
}
