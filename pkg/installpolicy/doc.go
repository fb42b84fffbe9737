// Package installpolicy decides what the operator may install into a guest cluster, where it is
// cluster-owner: from which chart sources, which charts, with which images and values, and which
// rendered objects reach the guest's API server. Every decision is an allow-list: what is not
// named here is refused.
//
//   - Sources (sources.go, downloads.go): the chart repositories and OCI registries the deployment
//     allows, and where a fetch from them may be sent on to.
//   - Images (images.go): exact image repositories per chart, and the releases of each.
//   - Values (values*.go): a typed schema of the value keys each chart generation supports. The
//     values handed to Helm are serialised from the typed values, never passed on as written.
//   - Archives (pinned.go, package.go, bundle.go): a chart archive is loaded only when its digest
//     is that of the pinned upstream archive or one the deployment allows for that chart, checked
//     before anything is unpacked, and within bounds; the pinned archives ship with the operator.
//   - Charts (chart.go): a chart package with hooks, CRDs, dependencies, or another name or version
//     than the one asked for is refused before anything renders.
//   - Rendered objects (render.go, decode.go, judge.go, reference.go, approve.go): the chart is
//     rendered here, client-only, within a budget of time, output and memory (budget.go; in a
//     process of its own, renderproc.go), every object decoded as the API server decodes it
//     (strict and case-sensitive), of a kind and name the chart creates in the release's
//     namespace, and held to the render with the operator's defaults: only the places the values
//     reach may differ (Variables), each with a value its check allows. The approved objects are
//     serialised again from their typed form, and that manifest is all Helm applies.
//
// config parses the text of kube-fip-config; guest applies what this package approved.
package installpolicy
