// Package backup does what Rancher Backups does with the operator's ResourceSet: it collects the
// objects the set selects into a backup and restores them, CRDs first.
package backup
