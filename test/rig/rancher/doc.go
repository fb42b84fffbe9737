// Package rancher stands in for Rancher on the test control plane: its CRDs, built from
// rancher/pkg/apis as Rancher builds them, and the objects Rancher keeps for a Harvester guest
// cluster (namespaces, cloud credentials, machine configs, provisioning and management clusters).
package rancher
