// Package admission is the operator's validating admission webhook: it refuses, at apply time,
// what the controllers would otherwise only report after the write (an overlapping range, a range
// edit or delete that takes away held addresses, a static address that is taken or in no range,
// a kube-fip-config the install policy refuses). Every replica serves it, leader or not, over TLS
// with a certificate it keeps in one Secret (certs.go). The controllers stay the last word: the
// webhook only answers sooner, and the operator's own writes never pass through it (the chart's
// matchConditions).
package admission

import (
	"context"
	"fmt"
	"net/http"

	"github.com/rancher/wrangler/v2/pkg/webhook"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	kubefipv1 "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
)

// Path is where the webhook answers AdmissionReviews.
const Path = "/v1/webhook/validation"

// AnnotationAllowOrphans on a FloatingIPRange, set to "true", lets an edit or a delete through
// that takes away addresses FloatingIPs hold; the controller then keeps those allocations and
// reports OrphanedAllocations, or holds the deletion, as it does without the webhook.
const AnnotationAllowOrphans = "kubefip.k8s.binbash.org/allow-orphans"

// Deps are what the webhook reads: straight from the API server, not from caches, since a
// standby replica has none and an answer must see the latest writes.
type Deps struct {
	Ranges      kubefipv1.FloatingIPRangeClient
	FloatingIPs kubefipv1.FloatingIPClient
	Allocations kubefipv1.FloatingIPAllocationClient
	// Namespace is the operator's namespace, where kube-fip-config lives.
	Namespace string
	// Policy gives the install policy kube-fip-config's chart settings are judged by, as the
	// deployment sets it at the time of the request.
	Policy PolicySource
	// Harvester reads the Harvester cluster a range names, for its pools; nil checks none.
	Harvester HarvesterReader
}

// PolicySource gives the install policy as it is now, or why it cannot be had; kube-fip-config is
// then refused.
type PolicySource func(ctx context.Context) (installpolicy.Policy, error)

// Validator judges admission requests.
type Validator struct {
	deps Deps
}

// NewValidator returns a Validator reading through deps.
func NewValidator(deps Deps) *Validator {
	return &Validator{deps: deps}
}

// Handler routes AdmissionReviews to the validator's rules with wrangler's webhook router, as
// Rancher's own webhook does. A request no rule is for is allowed: the webhook configuration
// decides what is sent here, and an unexpected kind must not block anything.
func (v *Validator) Handler() http.Handler {
	r := webhook.NewRouter()
	r.Kind("FloatingIPRange").Group(v1.SchemeGroupVersion.Group).Type(&v1.FloatingIPRange{}).Handle(rule(v.ranges))
	r.Kind("FloatingIP").Group(v1.SchemeGroupVersion.Group).Type(&v1.FloatingIP{}).Handle(rule(v.floatingIP))
	r.Kind("ConfigMap").Group("").Namespace(v.deps.Namespace).Type(&corev1.ConfigMap{}).Handle(rule(v.config))
	r.HandleFunc(func(resp *webhook.Response, _ *webhook.Request) error {
		resp.Allowed = true
		return nil
	})
	return r
}

// verdict is a rule's answer: refused with a message, or allowed with warnings.
type verdict struct {
	refusal  string
	warnings []string
}

func allow(warnings ...string) verdict { return verdict{warnings: warnings} }

func refuse(format string, args ...interface{}) verdict {
	return verdict{refusal: fmt.Sprintf(format, args...)}
}

// rule adapts a rule to the router: a refusal is a 422 Invalid status whose message the API
// server hands to kubectl and to the Rancher UI as it is.
func rule(judge func(*webhook.Request) (verdict, error)) webhook.HandlerFunc {
	return func(resp *webhook.Response, req *webhook.Request) error {
		out, err := judge(req)
		if err != nil {
			return err
		}
		resp.Warnings = out.warnings
		if out.refusal == "" {
			resp.Allowed = true
			return nil
		}
		resp.Allowed = false
		resp.Result = &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusUnprocessableEntity,
			Reason:  metav1.StatusReasonInvalid,
			Message: out.refusal,
		}
		return nil
	}
}

// decode reads the request's object (old and new); for a DELETE the new one is nil, for a CREATE
// the old one.
func decode[T any, P interface {
	*T
}](req *webhook.Request) (old, obj P, err error) {
	if old, err = decodeAs[T, P]("old object", req.OldObject.Raw, req.DecodeOldObject); err != nil {
		return nil, nil, err
	}
	if req.Operation == admissionv1.Delete {
		return old, nil, nil
	}
	if obj, err = decodeAs[T, P]("object", req.Object.Raw, req.DecodeObject); err != nil {
		return nil, nil, err
	}
	return old, obj, nil
}

// decodeAs decodes raw, when there is any, with decodeFn into a P.
func decodeAs[T any, P interface {
	*T
}](what string, raw []byte, decodeFn func() (runtime.Object, error)) (P, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	o, err := decodeFn()
	if err != nil {
		return nil, fmt.Errorf("decoding the %s: %w", what, err)
	}
	p, ok := any(o).(P)
	if !ok {
		return nil, fmt.Errorf("the %s is a %T", what, o)
	}
	return p, nil
}

// maxNamed is how many other objects a message names before it counts the rest.
const maxNamed = 3
