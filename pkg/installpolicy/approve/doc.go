// Package approve judges what a guest chart rendered: every document decoded as the API server
// decodes it, strictly and case-sensitively (decode.go), of a kind and name the chart creates in
// the release's namespace (kinds.go, judge.go), and held to the chart's own render with the
// product's defaults: only the places the values reach may differ (reference.go, Variables), each
// with a value its check allows. The approved objects are serialised again from their typed form,
// and that manifest is all Helm applies (approve.go).
package approve
