// Package guests stands in for how the operator reaches guest clusters: the test cluster proxy,
// through which Rancher serves each guest's API, and hostile Helm release records.
// kube-vip-cloud-provider's reading of its ConfigMap is test/rig/cloudprovider.
package guests
