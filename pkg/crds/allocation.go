package crds

import (
	"slices"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

// spaceSuffix ends every allocation name: '.' and the space's hash, v1.SpaceHashDigits lower-case
// hex digits.
const spaceSuffix = `[.][0-9a-f]{10}$`

// allocationIPv6Name is the shape of v1.AllocationName for an IPv6 address: eight groups of four
// lower-case hex digits joined by '-', then the space suffix.
const allocationIPv6Name = `^[0-9a-f]{4}(-[0-9a-f]{4}){7}` + spaceSuffix

// canonicalIPv4 is a dotted quad without leading zeros; the ipv4 format bounds each octet.
const canonicalIPv4 = `^(0|[1-9][0-9]{0,2})([.](0|[1-9][0-9]{0,2})){3}$`

// allocationValidation makes the API server keep what the operator relies on: an allocation's name
// is its address and its space, so that the uniqueness of names is the uniqueness of addresses in
// a space, its address, range and space never change, so that deleting the object is the only way
// to release the address, and its holder changes only when a retained address is taken back.
// Every rule works on Kubernetes v1.30 and uses no CEL IP library: the oldest supported API server
// has none. A name of the releases before address spaces (the bare address) is refused: such an
// object is only ever deleted, once its successor exists.
func allocationValidation(root *apiextv1.JSONSchemaProps) {
	// Root rules may read metadata.name. For IPv4 the name is the canonical address itself and the
	// space suffix. For IPv6 only the shape can be checked: expanding the compressed form needs
	// the IP library; nor can CEL compute the space's hash. The operator reads the address and the
	// space from the name and flags an object whose spec disagrees.
	root.XValidations = apiextv1.ValidationRules{{
		Rule: "self.spec.address.contains(':') ? self.metadata.name.matches('" + allocationIPv6Name + "')" +
			" : self.metadata.name.startsWith(self.spec.address + '.') && size(self.metadata.name) == size(self.spec.address) + 11" +
			" && self.metadata.name.matches('" + spaceSuffix + "')",
		Message: "metadata.name must be the address and the space's hash: the dotted quad for IPv4, the fully " +
			"expanded lower-case IPv6 address with - for : (fd00-0000-0000-0000-0000-0000-0000-0005), then " +
			"'.' and 10 hex digits (10.0.0.5.3f2a9c1b0d)",
	}}
	if !slices.Contains(root.Required, "spec") {
		root.Required = append(root.Required, "spec")
	}

	spec := root.Properties["spec"]
	spec.Required = []string{"address", "range", "owner"}
	// Transition rules: they run on updates only.
	spec.XValidations = apiextv1.ValidationRules{
		{
			Rule: "self.address == oldSelf.address && self.range == oldSelf.range && has(self.space) == has(oldSelf.space)" +
				" && (!has(self.space) || self.space == oldSelf.space)",
			Message: "spec.address, spec.range and spec.space are immutable: an address is released by deleting its FloatingIPAllocation",
		},
		{
			Rule:    "self.owner == oldSelf.owner || has(oldSelf.retained) && !has(self.retained)",
			Message: "spec.owner changes only when a retained address is taken back",
		},
	}

	space := spec.Properties["space"]
	for _, field := range []string{"harvesterClusterName", "harvesterNetworkName"} {
		prop := space.Properties[field]
		prop.Nullable = false
		prop.MaxLength = ptr.To[int64](1024)
		space.Properties[field] = prop
	}
	spec.Properties["space"] = space

	retained := spec.Properties["retained"]
	retained.Required = []string{"cluster", "until"}
	retained.Properties["cluster"] = requiredStrings(retained.Properties["cluster"], map[string]int64{"namespace": 63, "name": 253})
	spec.Properties["retained"] = retained

	address := spec.Properties["address"]
	address.Nullable = false
	address.MaxLength = ptr.To[int64](39)
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
	rng.MinLength = ptr.To[int64](1)
	rng.MaxLength = ptr.To[int64](253)
	spec.Properties["range"] = rng

	spec.Properties["owner"] = requiredStrings(spec.Properties["owner"], map[string]int64{"namespace": 63, "name": 253, "uid": 36})
	root.Properties["spec"] = spec
}

// requiredStrings makes each field of obj a required, non-empty string of at most its length.
func requiredStrings(obj apiextv1.JSONSchemaProps, maxLengths map[string]int64) apiextv1.JSONSchemaProps {
	obj.Required = nil
	for field, max := range maxLengths {
		prop := obj.Properties[field]
		prop.Nullable = false
		prop.MinLength = ptr.To[int64](1)
		prop.MaxLength = ptr.To(max)
		obj.Properties[field] = prop
		obj.Required = append(obj.Required, field)
	}
	slices.Sort(obj.Required)
	return obj
}
