// Package chartvalues is the typed schema of the value keys each guest chart generation supports: the
// kube-vip chart's (kubevip.go) with the allow-list of kube-vip's variables by mode
// (envrules.go), the kube-vip-cloud-provider chart's (provider.go), and the scheduling keys of
// both (scheduling.go), decoded strictly and validated as the API server validates them. The
// values handed to Helm are serialised from the typed values, never passed on as written, and no
// string in them may hold a control or format character or a line separator (cleantext.go).
package chartvalues
