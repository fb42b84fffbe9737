package approve

import (
	"strings"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/render"
)

// Recorded is the approval of manifest, the manifest of a revision of chart's release in
// namespace that the operator applied earlier (its digest is one the management side remembers):
// what restoring that revision may write. Each document is decoded as the API server reads it and
// held to the objects the chart may own there (Owned), as when it was approved; the manifest is
// not judged against today's configuration, because a restore puts back what was applied, and
// moving to anything else is an upgrade. A document that does not pass is a *guestchart.Refusal.
func Recorded(chart guestchart.Chart, namespace, manifest string) (*Approval, error) {
	j := &judge{chart: chart, namespace: namespace, name: ownedName(chart)}
	a := &Approval{Manifest: manifest, Digest: guestchart.Digest([]byte(manifest)), Owned: Owned(chart, namespace)}
	// The operator writes a manifest as "---\n" and each document (Judge); a line of its own
	// "---" cannot occur inside a document serialised from its typed form.
	for _, doc := range strings.Split("\n"+manifest, "\n---\n") {
		o, err := decode(chart, render.Doc{Template: "the release record", Content: doc})
		if err != nil {
			return nil, err
		}
		if o == nil {
			continue
		}
		if err := j.identity(o); err != nil {
			return nil, err
		}
		a.Objects = append(a.Objects, o.kind.ref(o.meta.GetNamespace(), o.meta.GetName()))
	}
	return a, nil
}
