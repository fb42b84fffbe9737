package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
	"github.com/kubefip/kube-fip-operator/test/rig/fakes"
)

func testRange(name, cidr, harvester string, annotations ...string) *v1.FloatingIPRange {
	r := &v1.FloatingIPRange{
		TypeMeta: metav1.TypeMeta{APIVersion: v1.SchemeGroupVersion.String(), Kind: "FloatingIPRange"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			v1.AnnotationHarvesterClusterName: harvester, v1.AnnotationHarvesterNetworkName: "vlan10",
		}},
		Spec: v1.FloatingIPRangeSpec{IPRange: cidr},
	}
	for i := 0; i+1 < len(annotations); i += 2 {
		r.Annotations[annotations[i]] = annotations[i+1]
	}
	return r
}

func testAllocation(r *v1.FloatingIPRange, addr, ns, name string) *v1.FloatingIPAllocation {
	a := netip.MustParseAddr(addr)
	space := v1.SpaceOf(r)
	return &v1.FloatingIPAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: v1.AllocationName(space, a), Labels: map[string]string{v1.LabelRange: v1.RangeLabelValue(r.Name)}},
		Spec: v1.FloatingIPAllocationSpec{Address: addr, Range: r.Name, Space: space,
			Owner: v1.FloatingIPReference{Namespace: ns, Name: name, UID: types.UID("uid-" + name)}},
	}
}

func testFIP(name, rangeName, ip string) *v1.FloatingIP {
	return &v1.FloatingIP{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1.SchemeGroupVersion.String(), Kind: "FloatingIP"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "c-m-a", Annotations: map[string]string{v1.AnnotationFloatingIPRange: rangeName}},
		Spec:       v1.FloatingIPSpec{IPAddress: ip},
	}
}

// review sends one AdmissionReview to the validator's handler, as the API server does, and
// returns its response.
func review(t *testing.T, h http.Handler, op admissionv1.Operation, kind metav1.GroupVersionKind, ns string, old, obj runtime.Object) *admissionv1.AdmissionResponse {
	t.Helper()
	raw := func(o runtime.Object) runtime.RawExtension {
		if o == nil {
			return runtime.RawExtension{}
		}
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: b}
	}
	req := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "1", Kind: kind, RequestKind: &kind, Namespace: ns, Operation: op,
			Object: raw(obj), OldObject: raw(old)},
	}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)))
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
		t.Fatalf("response %d %q: %v", rec.Code, rec.Body.String(), err)
	}
	return out.Response
}

func refusedWith(resp *admissionv1.AdmissionResponse) string {
	if resp.Allowed || resp.Result == nil {
		return ""
	}
	return resp.Result.Message
}

// TestRules: each rule's refusals and acceptances, judged on in-memory objects; the integration
// tests show the same through the real API server.
func TestRules(t *testing.T) {
	t.Parallel()
	a := testRange("a", "10.0.0.0/28", "h1")
	other := testRange("other", "10.0.0.0/28", "h2")
	ranges := fakes.NewRanges(a, other)
	allocs := fakes.NewAllocations(testAllocation(a, "10.0.0.1", "c-m-a", "held"))
	v := NewValidator(Deps{Ranges: ranges, FloatingIPs: fakes.NewFloatingIPs(), Allocations: allocs, Namespace: "kube-fip", Policy: func(context.Context) (installpolicy.Policy, error) { return installpolicy.Default(), nil }})
	h := v.Handler()
	rk := metav1.GroupVersionKind{Group: v1.SchemeGroupVersion.Group, Version: "v1", Kind: "FloatingIPRange"}
	fk := metav1.GroupVersionKind{Group: v1.SchemeGroupVersion.Group, Version: "v1", Kind: "FloatingIP"}
	ck := metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

	for _, tc := range []struct {
		name     string
		op       admissionv1.Operation
		kind     metav1.GroupVersionKind
		ns       string
		old, obj runtime.Object
		want     string // a part of the refusal; "" for allowed
	}{
		{"overlap in the same space", admissionv1.Create, rk, "", nil, testRange("b", "10.0.0.8/29", "h1"), "overlaps FloatingIPRange a (10.0.0.0/28)"},
		{"the same addresses in another space", admissionv1.Create, rk, "", nil, testRange("c", "10.0.0.0/28", "h3"), ""},
		{"an invalid iprange", admissionv1.Create, rk, "", nil, testRange("d", "10.0.0.0/99", "h3"), "correct spec.iprange"},
		{"a grow", admissionv1.Update, rk, "", a, testRange("a", "10.0.0.0/27", "h1"), ""},
		{"a shrink dropping a held address", admissionv1.Update, rk, "", a, testRange("a", "10.0.0.8/29", "h1"), "10.0.0.1 held by FloatingIP c-m-a/held"},
		{"the shrink forced", admissionv1.Update, rk, "", a, testRange("a", "10.0.0.8/29", "h1", AnnotationAllowOrphans, "true"), ""},
		{"a delete with a holder", admissionv1.Delete, rk, "", a, nil, "cannot be deleted while FloatingIPs hold its addresses"},
		{"a delete without one", admissionv1.Delete, rk, "", other, nil, ""},
		{"a held static address", admissionv1.Create, fk, "c-m-a", nil, testFIP("x", "a", "10.0.0.1"), "10.0.0.1 is held by FloatingIP c-m-a/held"},
		{"its holder keeps it", admissionv1.Update, fk, "c-m-a", testFIP("held", "a", ""), testFIP("held", "a", "10.0.0.1"), ""},
		{"a static address in no range", admissionv1.Create, fk, "c-m-a", nil, testFIP("x", "a", "10.9.0.1"), "is in no FloatingIPRange"},
		{"a free static address", admissionv1.Create, fk, "c-m-a", nil, testFIP("x", "a", "10.0.0.2"), ""},
		{"no static address", admissionv1.Create, fk, "c-m-a", nil, testFIP("x", "a", ""), ""},
		{"an invalid option", admissionv1.Create, ck, "kube-fip", nil, configMap("kube-fip-config", "operateGuestClusterInterval", "soon"), `key "operateGuestClusterInterval"`},
		{"a chart source the policy refuses", admissionv1.Update, ck, "kube-fip", nil, configMap("kube-fip-config", "kubevipChartRepoUrl", "https://charts.example.com"), `key "kubevipChartRepoUrl"`},
		{"a valid option", admissionv1.Create, ck, "kube-fip", nil, configMap("kube-fip-config", "logLevel", "Debug"), ""},
		{"another ConfigMap", admissionv1.Create, ck, "kube-fip", nil, configMap("other", "operateGuestClusterInterval", "soon"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := review(t, h, tc.op, tc.kind, tc.ns, tc.old, tc.obj)
			got := refusedWith(resp)
			switch {
			case tc.want == "" && !resp.Allowed:
				t.Errorf("refused: %+v", resp.Result)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("got allowed=%v %q; want refused with %q", resp.Allowed, got, tc.want)
			}
		})
	}
}

func configMap(name, key, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-fip"}, Data: map[string]string{key: value}}
}

// TestMalformedReview: a body that is not an AdmissionReview, or an object that does not decode,
// is an error answer, never a panic; a body over the bound is cut off.
func TestMalformedReview(t *testing.T) {
	t.Parallel()
	v := NewValidator(Deps{Ranges: fakes.NewRanges(), FloatingIPs: fakes.NewFloatingIPs(), Allocations: fakes.NewAllocations(), Namespace: "kube-fip"})
	s := NewServer("127.0.0.1", 0, nil, v)
	for name, body := range map[string]string{
		"not JSON":   "{",
		"no request": `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`,
		"bad object": `{"request":{"uid":"1","requestKind":{"group":"kubefip.k8s.binbash.org","version":"v1","kind":"FloatingIPRange"},"operation":"CREATE","object":{"spec":{"iprange":7}}}}`,
		"too large":  `{"request":{"uid":"1","object":"` + strings.Repeat("a", maxReviewBytes) + `"}}`,
	} {
		rec := httptest.NewRecorder()
		s.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, strings.NewReader(body)))
		var out admissionv1.AdmissionReview
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		if rec.Code == http.StatusOK && out.Response != nil && out.Response.Allowed {
			t.Errorf("%s: allowed", name)
		}
	}
}

// TestConfigNotJudgedWithoutPolicy: while the deployment's security settings cannot be read, every
// write of kube-fip-config is refused, a valid one too, saying why; other ConfigMaps pass.
func TestConfigNotJudgedWithoutPolicy(t *testing.T) {
	t.Parallel()
	v := NewValidator(Deps{Ranges: fakes.NewRanges(), FloatingIPs: fakes.NewFloatingIPs(), Allocations: fakes.NewAllocations(), Namespace: "kube-fip",
		Policy: func(context.Context) (installpolicy.Policy, error) {
			return installpolicy.Policy{}, errors.New("the deployment's security Secret kube-fip/kube-fip-operator-security does not exist")
		}})
	h := v.Handler()
	ck := metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	resp := review(t, h, admissionv1.Update, ck, "kube-fip", nil, configMap("kube-fip-config", "logLevel", "Debug"))
	if got := refusedWith(resp); resp.Allowed || !strings.Contains(got, "kube-fip-config cannot be judged") || !strings.Contains(got, "does not exist") {
		t.Errorf("a valid kube-fip-config without a readable policy: allowed %v, %q; want it refused, saying why", resp.Allowed, got)
	}
	if resp := review(t, h, admissionv1.Update, ck, "kube-fip", nil, configMap("other", "logLevel", "Debug")); !resp.Allowed {
		t.Errorf("another ConfigMap refused: %+v", resp.Result)
	}
}
