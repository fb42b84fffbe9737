// Package outbound builds the one HTTP transport of the operator's calls out of the cluster: the
// digest checks at the guest image registry (pkg/imagedigest) and the chart sources
// (pkg/helminstall). It trusts the system's roots and the additional CA bundle the deployment
// names (the chart's additionalTrustedCAs, as Rancher's), and goes through the proxy the
// deployment names (HTTP_PROXY, HTTPS_PROXY and NO_PROXY, the chart's proxy and noProxy). The
// Network is a value: built once at start from the Settings and passed to whoever calls out.
//
// The operator's other calls do not use it: the management cluster's API server is in the
// cluster, and the guest clusters and Harvester are reached through Rancher's cluster proxy with
// the CA of the kubeconfig Rancher writes (pkg/guest); client-go takes the proxy of those calls
// from the same environment variables.
package outbound
