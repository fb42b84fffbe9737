package crds

import (
	"context"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/runtime"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// allocationUpdates admits an update of a FloatingIPAllocation as the API server's CEL rules of
// the generated CRD do.
type allocationUpdates struct {
	structural *schema.Structural
	validator  *cel.Validator
}

func newAllocationUpdates(t *testing.T) allocationUpdates {
	t.Helper()
	def := crdOf(t, "FloatingIPAllocation")
	var internal apiextensions.JSONSchemaProps
	if err := apiextv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(def.Spec.Versions[0].Schema.OpenAPIV3Schema, &internal, nil); err != nil {
		t.Fatal(err)
	}
	structural, err := schema.NewStructural(&internal)
	if err != nil {
		t.Fatal(err)
	}
	return allocationUpdates{structural: structural, validator: cel.NewValidator(structural, true, celconfig.PerCallLimit)}
}

func (u allocationUpdates) admits(t *testing.T, old, updated *v1.FloatingIPAllocation) bool {
	t.Helper()
	toMap := func(a *v1.FloatingIPAllocation) map[string]interface{} {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	errs, _ := u.validator.Validate(context.Background(), nil, u.structural, toMap(updated), toMap(old), celconfig.RuntimeCELCostBudget)
	return len(errs) == 0
}

// mutableAllocationFields returns the spec fields of a FloatingIPAllocation some update the CRD's
// rules admit changes: each field is changed alone, and together with each other field.
func mutableAllocationFields(t *testing.T) map[string]bool {
	t.Helper()
	u := newAllocationUpdates(t)
	space := v1.AddressSpace{HarvesterClusterName: "harvester1", HarvesterNetworkName: "default/vlan10"}
	addr := netip.MustParseAddr("10.0.0.5")
	retained := &v1.Retention{Cluster: v1.ClusterReference{Namespace: "fleet-default", Name: "demo"}}
	base := func(withRetained bool) *v1.FloatingIPAllocation {
		a := &v1.FloatingIPAllocation{Spec: v1.FloatingIPAllocationSpec{
			Address: addr.String(), Range: "guest-vlan", Space: space,
			Owner: v1.FloatingIPReference{Namespace: "c-m-aaaaaaaa", Name: "demo-kubevip", UID: "11111111-1111-1111-1111-111111111111"},
		}}
		a.APIVersion, a.Kind = v1.SchemeGroupVersion.String(), "FloatingIPAllocation"
		a.Name = v1.AllocationName(space, addr)
		if withRetained {
			a.Spec.Retained = retained.DeepCopy()
		}
		return a
	}
	changes := map[string]func(a *v1.FloatingIPAllocation){
		"address": func(a *v1.FloatingIPAllocation) { a.Spec.Address = "10.0.0.6" },
		"range":   func(a *v1.FloatingIPAllocation) { a.Spec.Range = "other-vlan" },
		"space":   func(a *v1.FloatingIPAllocation) { a.Spec.Space.HarvesterNetworkName = "default/vlan11" },
		"owner": func(a *v1.FloatingIPAllocation) {
			a.Spec.Owner = v1.FloatingIPReference{Namespace: "c-m-bbbbbbbb", Name: "demo-kubevip", UID: "22222222-2222-2222-2222-222222222222"}
		},
		"retained": func(a *v1.FloatingIPAllocation) {
			if a.Spec.Retained == nil {
				a.Spec.Retained = retained.DeepCopy()
			} else {
				a.Spec.Retained = nil
			}
		},
	}
	mutable := map[string]bool{}
	for field, change := range changes {
		for other, also := range changes {
			for _, withRetained := range []bool{false, true} {
				old, updated := base(withRetained), base(withRetained)
				change(updated)
				if other != field {
					also(updated)
				}
				if !u.admits(t, old, updated) {
					continue
				}
				mutable[field] = true
				if other != field {
					mutable[other] = true
				}
			}
		}
	}
	if !u.admits(t, base(true), base(true)) || u.admits(t, base(false), func() *v1.FloatingIPAllocation { a := base(false); changes["address"](a); return a }()) {
		t.Fatal("the rules do not run as the test expects: an unchanged object must pass, a changed address must not")
	}
	return mutable
}

// immutabilityClaim matches the words with which a description says something cannot change.
var immutabilityClaim = regexp.MustCompile(`(?i)\bimmutable\b|\bnever changes?\b|\bcannot change\b|\bdoes not change\b`)

// TestAllocationDescriptionsMatchTheRules: what kubectl explain and the Rancher UI say of a
// FloatingIPAllocation's spec agrees with the CRD's own transition rules: a sentence that says
// something never changes names, before it says so, only fields no update the API server admits
// can change, and a sentence saying so of the spec as a whole (naming no field first) is there
// only when every field is fixed. The rules let the owner (when a retained address is taken back) and the retention
// change.
func TestAllocationDescriptionsMatchTheRules(t *testing.T) {
	mutable := mutableAllocationFields(t)
	if !mutable["owner"] || !mutable["retained"] || mutable["address"] || mutable["range"] || mutable["space"] {
		t.Errorf("mutable fields %v; the rules were expected to fix address, range and space and let owner and retained change", mutable)
	}
	def := crdOf(t, "FloatingIPAllocation")
	root := def.Spec.Versions[0].Schema.OpenAPIV3Schema
	spec := root.Properties["spec"]
	fields := make([]string, 0, len(spec.Properties))
	for name := range spec.Properties {
		fields = append(fields, name)
	}
	slices.Sort(fields)
	check := func(where, description, self string) {
		for _, sentence := range regexp.MustCompile(`[^.]+(\.|$)`).FindAllString(description, -1) {
			claim := immutabilityClaim.FindStringIndex(sentence)
			if claim == nil {
				continue
			}
			// The fields the claim is about are named before it ("its address, range and space
			// never change"); "it is immutable" names none and speaks of the whole.
			var named []string
			for _, f := range fields {
				if regexp.MustCompile(`\b` + f + `\b`).MatchString(sentence[:claim[0]]) {
					named = append(named, f)
				}
			}
			if len(named) == 0 && self != "" {
				named = []string{self}
			}
			if len(named) == 0 {
				for f := range mutable {
					named = append(named, f)
				}
			}
			for _, f := range named {
				if mutable[f] {
					t.Errorf("%s: %q says %s cannot change, but the CRD's rules let it change", where, strings.TrimSpace(sentence), f)
				}
			}
		}
	}
	check("FloatingIPAllocation", root.Description, "")
	check("spec", spec.Description, "")
	for _, f := range fields {
		check("spec."+f, spec.Properties[f].Description, f)
	}
}
