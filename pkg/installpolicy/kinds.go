package installpolicy

import (
	"sort"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kind is one kind either chart may render, as a REST client maps it to its API resource.
type Kind struct {
	schema.GroupVersionKind
	// Resource is the kind's API resource (plural, lower case).
	Resource      string
	ClusterScoped bool
}

// Kinds are the kinds the policy lets either chart render, in a stable order: all Helm needs
// mapped to apply an approved manifest, so that nothing of a guest's API discovery is read.
func Kinds() []Kind {
	var out []Kind
	for gvk := range kinds() {
		out = append(out, Kind{GroupVersionKind: gvk, Resource: resources()[gvk.Kind], ClusterScoped: clusterScoped(gvk.Kind)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
