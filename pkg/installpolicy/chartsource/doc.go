// Package chartsource holds the chart repositories and OCI registries a deployment allows charts
// to come from (sources.go), and where a fetch from them may be sent on to: a redirect's target,
// or an archive a repository's index lists, within the allowed sources or the download locations
// of the upstream kube-vip sources (downloads.go).
package chartsource
