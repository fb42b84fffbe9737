// Package chartrepo serves charts the way the operator fetches them: stand-ins for the kube-vip
// and provider charts, a Helm chart repository over HTTP and an OCI registry, all on loopback.
package chartrepo
