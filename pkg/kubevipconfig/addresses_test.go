package kubevipconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	k8stesting "k8s.io/client-go/testing"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig/cloudprovider"
)

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, 0, len(ss))
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

// kubevip is kube-system/kubevip as a person or an earlier pass left it.
func kubevip(data, annotations map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: KubevipConfigMapNamespace, Name: KubevipConfigMap, ResourceVersion: "7", Annotations: annotations},
		Data:       data,
	}
}

func fakeGuest(objects ...runtime.Object) (corev1client.CoreV1Interface, *fake.Clientset) {
	kube := fake.NewSimpleClientset(objects...)
	return kube.CoreV1(), kube
}

// writes are the actions of kube that are not reads.
func writes(kube *fake.Clientset) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range kube.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			out = append(out, a)
		}
	}
	return out
}

func readKubevip(t *testing.T, kube kubernetes.Interface) *corev1.ConfigMap {
	t.Helper()
	cm, err := kube.CoreV1().ConfigMaps(KubevipConfigMapNamespace).Get(context.Background(), KubevipConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func ensure(t *testing.T, c corev1client.ConfigMapsGetter, want Addresses, update bool) AddressesResult {
	t.Helper()
	res, err := EnsureAddresses(context.Background(), c, DefaultConfigMap(), want, update)
	if err != nil {
		t.Fatalf("EnsureAddresses(%+v, update=%v): %v", want, update, err)
	}
	return res
}

// ensureOne is EnsureAddresses with addr as the one global address: what a guest of one
// FloatingIP gets.
func ensureOne(ctx context.Context, c corev1client.ConfigMapsGetter, addr netip.Addr, update bool) (ConfigMapResult, error) {
	res, err := EnsureAddresses(ctx, c, DefaultConfigMap(), Addresses{Global: []netip.Addr{addr}}, update)
	return res.Result, err
}

// previousEnsureConfigMap is EnsureConfigMap as it was before EnsureAddresses, word for word but
// for the client it is handed: the reference a single global address must still match.
func previousEnsureConfigMap(ctx context.Context, kube kubernetes.Interface, ref ConfigMapRef, addr netip.Addr, update bool) (ConfigMapResult, error) {
	want := CIDR(addr)
	cms := kube.CoreV1().ConfigMaps(ref.Namespace)
	cm, err := cms.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace},
			Data:       map[string]string{GlobalCIDRKey: want},
		}, metav1.CreateOptions{})
		if err != nil {
			return ConfigMapUnchanged, err
		}
		return ConfigMapCreated, nil
	}
	if err != nil {
		return ConfigMapUnchanged, err
	}
	if cm.Data[GlobalCIDRKey] == want {
		return ConfigMapUnchanged, nil
	}
	if !update {
		return ConfigMapLeftAlone, nil
	}
	patch, err := json.Marshal(map[string]interface{}{"data": map[string]string{GlobalCIDRKey: want}})
	if err != nil {
		return ConfigMapUnchanged, err
	}
	if _, err := cms.Patch(ctx, ref.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return ConfigMapUnchanged, err
	}
	return ConfigMapUpdated, nil
}

// TestSingleGlobalAddressIsWrittenAsBefore: with one address, EnsureAddresses leaves the ConfigMap
// exactly as the previous EnsureConfigMap did — same data, same annotations
// (none of ours), same labels — and answer the same.
func TestSingleGlobalAddressIsWrittenAsBefore(t *testing.T) {
	person := map[string]string{"range-development": "10.0.1.10-10.0.1.20", "skip-end-ips-in-cidr": "true"}
	withPerson := func(global string) map[string]string {
		data := map[string]string{GlobalCIDRKey: global}
		for k, v := range person {
			data[k] = v
		}
		return data
	}
	cases := []struct {
		name   string
		start  *corev1.ConfigMap
		addr   string
		update bool
		want   ConfigMapResult
	}{
		{"missing", nil, "10.0.0.5", false, ConfigMapCreated},
		{"missing, IPv6", nil, "fd00::5", true, ConfigMapCreated},
		{"no data", kubevip(nil, nil), "10.0.0.5", false, ConfigMapLeftAlone},
		{"no data, update", kubevip(nil, nil), "10.0.0.5", true, ConfigMapUpdated},
		{"a person's pools without cidr-global", kubevip(person, nil), "10.0.0.5", false, ConfigMapLeftAlone},
		{"same address", kubevip(withPerson("10.0.0.5/32"), nil), "10.0.0.5", false, ConfigMapUnchanged},
		{"another address", kubevip(withPerson("10.0.0.9/32"), nil), "10.0.0.5", false, ConfigMapLeftAlone},
		{"another address, update", kubevip(withPerson("10.0.0.9/32"), map[string]string{"note": "mine"}), "10.0.0.5", true, ConfigMapUpdated},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var seed []runtime.Object
			if tc.start != nil {
				seed = append(seed, tc.start)
			}
			_, before := fakeGuest(copies(seed)...)
			res, err := previousEnsureConfigMap(context.Background(), before, DefaultConfigMap(), netip.MustParseAddr(tc.addr), tc.update)
			if err != nil || res != tc.want {
				t.Fatalf("previous EnsureConfigMap = %v, %v; want %v", res, err, tc.want)
			}
			reference := readKubevip(t, before)

			c, kube := fakeGuest(copies(seed)...)
			got, err := ensureOne(context.Background(), c, netip.MustParseAddr(tc.addr), tc.update)
			if err != nil || got != tc.want {
				t.Errorf("EnsureAddresses = %v, %v; want %v", got, err, tc.want)
			}
			cm := readKubevip(t, kube)
			if !reflect.DeepEqual(cm.Data, reference.Data) || !reflect.DeepEqual(cm.BinaryData, reference.BinaryData) ||
				!reflect.DeepEqual(cm.Annotations, reference.Annotations) || !reflect.DeepEqual(cm.Labels, reference.Labels) {
				t.Errorf("EnsureAddresses left data %v annotations %v; the previous EnsureConfigMap left data %v annotations %v",
					cm.Data, cm.Annotations, reference.Data, reference.Annotations)
			}
		})
	}

	c, kube := fakeGuest()
	if _, err := ensureOne(context.Background(), c, netip.MustParseAddr("10.0.0.5"), false); err != nil {
		t.Fatal(err)
	}
	if cm := readKubevip(t, kube); !reflect.DeepEqual(cm.Data, map[string]string{"cidr-global": "10.0.0.5/32"}) || cm.Annotations != nil {
		t.Errorf("a new ConfigMap holds data %v annotations %v; want only cidr-global 10.0.0.5/32", cm.Data, cm.Annotations)
	}
}

func copies(objects []runtime.Object) []runtime.Object {
	out := make([]runtime.Object, 0, len(objects))
	for _, o := range objects {
		out = append(out, o.DeepCopyObject())
	}
	return out
}

func TestCIDRListIsSortedDeduplicatedWithoutSpaces(t *testing.T) {
	cases := []struct {
		in   []netip.Addr
		want string
	}{
		{addrs("10.0.0.5"), "10.0.0.5/32"},
		{addrs("fd00::5"), "fd00::5/128"},
		{addrs("10.0.0.9", "10.0.0.5"), "10.0.0.5/32,10.0.0.9/32"},
		{addrs("10.0.0.5", "10.0.0.5", "10.0.0.10"), "10.0.0.5/32,10.0.0.10/32"},
		{addrs("fd00::2", "10.0.0.9", "fd00::1", "10.0.0.5"), "10.0.0.5/32,10.0.0.9/32,fd00::1/128,fd00::2/128"},
		{nil, ""},
	}
	for _, tc := range cases {
		if got := CIDRList(tc.in); got != tc.want {
			t.Errorf("CIDRList(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
	in := addrs("10.0.0.9", "10.0.0.5")
	CIDRList(in)
	if in[0] != netip.MustParseAddr("10.0.0.9") {
		t.Error("CIDRList sorted its argument in place")
	}
}

func TestTwoGlobalAddresses(t *testing.T) {
	c, kube := fakeGuest()
	if res := ensure(t, c, Addresses{Global: addrs("10.0.0.9", "10.0.0.5", "10.0.0.9")}, false); res.Result != ConfigMapCreated {
		t.Fatalf("result = %+v, want created", res)
	}
	if cm := readKubevip(t, kube); !reflect.DeepEqual(cm.Data, map[string]string{"cidr-global": "10.0.0.5/32,10.0.0.9/32"}) || cm.Annotations != nil {
		t.Errorf("ConfigMap holds data %v annotations %v", cm.Data, cm.Annotations)
	}
}

func TestMixedFamiliesIPv4First(t *testing.T) {
	c, kube := fakeGuest(kubevip(map[string]string{"cidr-global": "10.0.0.5/32"}, nil))
	want := Addresses{
		Global:     addrs("fd00::1", "10.0.0.5"),
		Namespaced: map[string][]netip.Addr{"team-a": addrs("fd00::a", "10.0.0.20", "fd00::9")},
	}
	// cidr-global holds another value and update is false: the new key is written all the same.
	if res := ensure(t, c, want, false); res.Result != ConfigMapUpdated || !slices.Equal(res.LeftAlone, []string{"cidr-global"}) {
		t.Errorf("result without update = %+v; want updated, cidr-global left alone", res)
	}
	if res := ensure(t, c, want, true); res.Result != ConfigMapUpdated || res.LeftAlone != nil {
		t.Fatalf("result with update = %+v, want updated", res)
	}
	cm := readKubevip(t, kube)
	if cm.Data["cidr-global"] != "10.0.0.5/32,fd00::1/128" || cm.Data["cidr-team-a"] != "10.0.0.20/32,fd00::9/128,fd00::a/128" {
		t.Errorf("ConfigMap data = %v", cm.Data)
	}
}

// TestNamespacedAddressAddedThenRemoved: a namespace's key comes with its address and goes with
// it; the owned-keys annotation follows; the person's keys and annotations stay.
func TestNamespacedAddressAddedThenRemoved(t *testing.T) {
	person := map[string]string{"range-development": "10.0.1.10-10.0.1.20", "cidr-team-x": "10.0.3.0/24", "interface-global": "eth1"}
	start := map[string]string{"cidr-global": "10.0.0.5/32"}
	for k, v := range person {
		start[k] = v
	}
	c, kube := fakeGuest(kubevip(start, map[string]string{"note": "mine"}))
	global := addrs("10.0.0.5")

	steps := []struct {
		namespaced map[string][]netip.Addr
		keys       map[string]string
		owned      string
	}{
		{map[string][]netip.Addr{"team-a": addrs("10.0.0.20")}, map[string]string{"cidr-team-a": "10.0.0.20/32"}, "cidr-team-a"},
		{map[string][]netip.Addr{"team-a": addrs("10.0.0.20"), "team-b": addrs("10.0.0.30", "fd00::30")},
			map[string]string{"cidr-team-a": "10.0.0.20/32", "cidr-team-b": "10.0.0.30/32,fd00::30/128"}, "cidr-team-a,cidr-team-b"},
		{map[string][]netip.Addr{"team-b": addrs("10.0.0.31")}, map[string]string{"cidr-team-b": "10.0.0.31/32"}, "cidr-team-b"},
		{nil, nil, ""},
	}
	for i, step := range steps {
		res := ensure(t, c, Addresses{Global: global, Namespaced: step.namespaced}, false)
		if res.Result != ConfigMapUpdated || res.LeftAlone != nil {
			t.Errorf("step %d: result = %+v, want updated", i, res)
		}
		cm := readKubevip(t, kube)
		want := map[string]string{"cidr-global": "10.0.0.5/32"}
		for k, v := range person {
			want[k] = v
		}
		for k, v := range step.keys {
			want[k] = v
		}
		if !reflect.DeepEqual(cm.Data, want) {
			t.Errorf("step %d: data = %v, want %v", i, cm.Data, want)
		}
		wantAnnotations := map[string]string{"note": "mine"}
		if step.owned != "" {
			wantAnnotations[OwnedKeysAnnotation] = step.owned
		}
		if !reflect.DeepEqual(cm.Annotations, wantAnnotations) {
			t.Errorf("step %d: annotations = %v, want %v", i, cm.Annotations, wantAnnotations)
		}
	}
}

// TestPersonsNamespacedKeyIsLeftAlone: a cidr-<ns> key not in the owned-keys annotation is a
// person's: not overwritten even with update true, not taken over when it holds the wanted value,
// not deleted when the namespace's address goes.
func TestPersonsNamespacedKeyIsLeftAlone(t *testing.T) {
	data := map[string]string{"cidr-global": "10.0.0.9/32", "cidr-team-a": "10.0.2.0/24", "cidr-team-b": "10.0.0.30/32", "range-team-d": "10.0.4.1-10.0.4.9"}
	c, kube := fakeGuest(kubevip(data, nil))
	want := Addresses{Global: addrs("10.0.0.5"), Namespaced: map[string][]netip.Addr{
		"team-a": addrs("10.0.0.20"), "team-b": addrs("10.0.0.30"), "team-c": addrs("10.0.0.40"), "team-d": addrs("10.0.0.50"),
	}}
	res := ensure(t, c, want, true)
	if res.Result != ConfigMapUpdated || !slices.Equal(res.LeftAlone, []string{"cidr-team-a", "cidr-team-d"}) {
		t.Errorf("result = %+v; want updated, cidr-team-a and cidr-team-d (hiding range-team-d) left alone", res)
	}
	cm := readKubevip(t, kube)
	wantData := map[string]string{"cidr-global": "10.0.0.5/32", "cidr-team-a": "10.0.2.0/24", "cidr-team-b": "10.0.0.30/32", "cidr-team-c": "10.0.0.40/32", "range-team-d": "10.0.4.1-10.0.4.9"}
	if !reflect.DeepEqual(cm.Data, wantData) || cm.Annotations[OwnedKeysAnnotation] != "cidr-team-c" {
		t.Errorf("data %v, owned keys %q; want %v, only cidr-team-c owned", cm.Data, cm.Annotations[OwnedKeysAnnotation], wantData)
	}

	kube.ClearActions()
	res = ensure(t, c, want, true)
	if res.Result != ConfigMapLeftAlone || !slices.Equal(res.LeftAlone, []string{"cidr-team-a", "cidr-team-d"}) || len(writes(kube)) != 0 {
		t.Errorf("second pass = %+v with writes %v; want left alone and no write", res, writes(kube))
	}

	ensure(t, c, Addresses{Global: addrs("10.0.0.5")}, true)
	cm = readKubevip(t, kube)
	wantData = map[string]string{"cidr-global": "10.0.0.5/32", "cidr-team-a": "10.0.2.0/24", "cidr-team-b": "10.0.0.30/32", "range-team-d": "10.0.4.1-10.0.4.9"}
	if !reflect.DeepEqual(cm.Data, wantData) || len(cm.Annotations) != 0 {
		t.Errorf("after the namespaces' addresses went: data %v annotations %v; want %v and no annotation", cm.Data, cm.Annotations, wantData)
	}
}

// TestGarbageOwnedKeysAnnotation: only cidr-<dns-label> entries of the annotation count; nothing
// of another shape is ever deleted, however the annotation names it.
func TestGarbageOwnedKeysAnnotation(t *testing.T) {
	garbage := strings.Repeat("x,", MaxOwnedKeys) + "cidr-late"
	data := map[string]string{
		"cidr-global": "10.0.0.5/32", "range-global": "10.0.1.1-10.0.1.9", "cidr-Team": "10.0.2.0/24", "cidr-": "x",
		"kube-system": "y", "cidr-team-b": "10.0.0.30/32", "cidr-late": "10.0.0.50/32", " cidr-team-b": "z",
	}
	annotation := "cidr-global, range-global,cidr-Team,cidr-,,kube-system,\x00,cidr-a/b, cidr-team-b ,cidr-team-b," + garbage
	c, kube := fakeGuest(kubevip(data, map[string]string{OwnedKeysAnnotation: annotation}))
	if res := ensure(t, c, Addresses{Global: addrs("10.0.0.5")}, true); res.Result != ConfigMapUpdated {
		t.Errorf("result = %+v, want updated", res)
	}
	cm := readKubevip(t, kube)
	delete(data, "cidr-team-b")
	if !reflect.DeepEqual(cm.Data, data) || len(cm.Annotations) != 0 {
		t.Errorf("data %v annotations %v; want only cidr-team-b gone (%v) and the annotation removed", cm.Data, cm.Annotations, data)
	}

	if got := ParseOwnedKeys(annotation); !slices.Equal(got, []string{"cidr-team-b"}) {
		t.Errorf("ParseOwnedKeys = %v, want [cidr-team-b]", got)
	}
	if got := ParseOwnedKeys("cidr-b,cidr-a,cidr-b,cidr-" + strings.Repeat("a", 64) + ",cidr-" + strings.Repeat("a", 63)); !slices.Equal(got, []string{"cidr-a", "cidr-" + strings.Repeat("a", 63), "cidr-b"}) {
		t.Errorf("ParseOwnedKeys of labels = %v", got)
	}

	// An annotation of ours in a form we do not write is rewritten, though nothing else changes.
	c, kube = fakeGuest(kubevip(map[string]string{"cidr-global": "10.0.0.5/32", "cidr-team-a": "10.0.0.20/32"},
		map[string]string{OwnedKeysAnnotation: " cidr-team-a ,junk"}))
	want := Addresses{Global: addrs("10.0.0.5"), Namespaced: map[string][]netip.Addr{"team-a": addrs("10.0.0.20")}}
	if res := ensure(t, c, want, false); res.Result != ConfigMapUpdated {
		t.Errorf("result = %+v, want updated", res)
	}
	if cm := readKubevip(t, kube); cm.Annotations[OwnedKeysAnnotation] != "cidr-team-a" {
		t.Errorf("owned keys = %q, want cidr-team-a", cm.Annotations[OwnedKeysAnnotation])
	}
}

// TestGlobalLeftAloneWithoutUpdate: another cidr-global with update false is not written, and
// said so; the namespaced keys are written all the same.
func TestGlobalLeftAloneWithoutUpdate(t *testing.T) {
	c, kube := fakeGuest(kubevip(map[string]string{"cidr-global": "10.0.0.9/32"}, nil))
	res := ensure(t, c, Addresses{Global: addrs("10.0.0.5")}, false)
	if res.Result != ConfigMapLeftAlone || !slices.Equal(res.LeftAlone, []string{"cidr-global"}) || len(writes(kube)) != 0 {
		t.Errorf("result = %+v with writes %v; want left alone, no write", res, writes(kube))
	}
	res = ensure(t, c, Addresses{Global: addrs("10.0.0.5"), Namespaced: map[string][]netip.Addr{"team-a": addrs("10.0.0.20")}}, false)
	if res.Result != ConfigMapUpdated || !slices.Equal(res.LeftAlone, []string{"cidr-global"}) {
		t.Errorf("result = %+v; want updated with cidr-global left alone", res)
	}
	if cm := readKubevip(t, kube); cm.Data["cidr-global"] != "10.0.0.9/32" || cm.Data["cidr-team-a"] != "10.0.0.20/32" {
		t.Errorf("data = %v", cm.Data)
	}
}

// TestEnsureAddressesIsIdempotent: a second pass with the same want reads and writes nothing.
func TestEnsureAddressesIsIdempotent(t *testing.T) {
	wants := []Addresses{
		{Global: addrs("10.0.0.5")},
		{Global: addrs("fd00::1", "10.0.0.5", "10.0.0.6")},
		{Global: addrs("10.0.0.5"), Namespaced: map[string][]netip.Addr{"team-a": addrs("10.0.0.20"), "team-b": addrs("fd00::b")}},
		{Namespaced: map[string][]netip.Addr{"team-a": addrs("10.0.0.20")}},
	}
	for i, want := range wants {
		for _, start := range []*corev1.ConfigMap{nil, kubevip(map[string]string{"other": "x"}, nil)} {
			var seed []runtime.Object
			if start != nil {
				seed = append(seed, start)
			}
			c, kube := fakeGuest(seed...)
			if res := ensure(t, c, want, true); res.Result != ConfigMapCreated && res.Result != ConfigMapUpdated {
				t.Errorf("want %d: first pass = %+v", i, res)
			}
			kube.ClearActions()
			if res := ensure(t, c, want, true); res.Result != ConfigMapUnchanged || res.LeftAlone != nil || len(writes(kube)) != 0 {
				t.Errorf("want %d: second pass = %+v with writes %v; want unchanged, no write", i, res, writes(kube))
			}
		}
	}
}

// TestPatchIsConditional: the merge patch carries only the changed keys and the resourceVersion
// it was decided on.
func TestPatchIsConditional(t *testing.T) {
	c, kube := fakeGuest(kubevip(map[string]string{"cidr-global": "10.0.0.9/32", "other": "x"}, nil))
	ensure(t, c, Addresses{Global: addrs("10.0.0.8")}, true)
	w := writes(kube)
	if len(w) != 1 {
		t.Fatalf("writes = %v, want one patch", w)
	}
	patch, ok := w[0].(k8stesting.PatchAction)
	if !ok || patch.GetPatchType() != types.MergePatchType {
		t.Fatalf("write = %#v, want a merge patch", w[0])
	}
	if got, want := string(patch.GetPatch()), `{"data":{"cidr-global":"10.0.0.8/32"},"metadata":{"resourceVersion":"7"}}`; got != want {
		t.Errorf("patch = %s, want %s", got, want)
	}
}

// TestInvalidAddressesWriteNothing: a namespace that can not be a pool's, or an address that can
// not be one, fails the whole pass before anything is read or written.
func TestInvalidAddressesWriteNothing(t *testing.T) {
	cases := map[string]Addresses{
		"uppercase namespace": {Namespaced: map[string][]netip.Addr{"Team": addrs("10.0.0.20")}},
		"global namespace":    {Namespaced: map[string][]netip.Addr{"global": addrs("10.0.0.20")}},
		"long namespace":      {Namespaced: map[string][]netip.Addr{strings.Repeat("a", 64): addrs("10.0.0.20")}},
		"comma namespace":     {Namespaced: map[string][]netip.Addr{"a,b": addrs("10.0.0.20")}},
		"zero address":        {Global: []netip.Addr{{}}},
		"zoned address":       {Global: addrs("fe80::1%eth0")},
		"unspecified address": {Global: addrs("0.0.0.0")},
	}
	for name, want := range cases {
		c, kube := fakeGuest()
		if _, err := EnsureAddresses(context.Background(), c, DefaultConfigMap(), want, true); !errors.Is(err, ErrInvalidAddresses) {
			t.Errorf("%s: error = %v, want ErrInvalidAddresses", name, err)
		}
		if len(kube.Actions()) != 0 {
			t.Errorf("%s: actions = %v, want none", name, kube.Actions())
		}
	}

	keys, err := Addresses{Global: addrs("10.0.0.5"), Namespaced: map[string][]netip.Addr{"Bad": addrs("10.0.0.1"), "ok": addrs("10.0.0.2"), "empty": nil}}.Keys()
	if !errors.Is(err, ErrInvalidAddresses) || !reflect.DeepEqual(keys, map[string]string{"cidr-global": "10.0.0.5/32", "cidr-ok": "10.0.0.2/32"}) {
		t.Errorf("Keys = %v, %v; want the valid keys and an error naming Bad", keys, err)
	}
	if err != nil && !strings.Contains(err.Error(), `"Bad"`) {
		t.Errorf("error %q does not name the namespace", err)
	}
}

// TestNothingWantedCreatesNothing: no address, no ConfigMap; an existing cidr-global, which may
// be a person's, is not deleted.
func TestNothingWantedCreatesNothing(t *testing.T) {
	c, kube := fakeGuest()
	if res := ensure(t, c, Addresses{}, true); res.Result != ConfigMapUnchanged || len(writes(kube)) != 0 {
		t.Errorf("result = %+v, writes %v; want nothing", res, writes(kube))
	}
	c, kube = fakeGuest(kubevip(map[string]string{"cidr-global": "10.0.0.5/32"}, nil))
	if res := ensure(t, c, Addresses{}, true); res.Result != ConfigMapUnchanged || len(writes(kube)) != 0 {
		t.Errorf("result = %+v, writes %v; want nothing", res, writes(kube))
	}
}

// TestProviderReadsTheWrittenPools: the ConfigMap as written, read the way kube-vip-cloud-provider
// reads it (cloudprovider.ProviderPool), gives each namespace its own addresses and every other one the
// global addresses, of both families.
func TestProviderReadsTheWrittenPools(t *testing.T) {
	c, kube := fakeGuest()
	want := Addresses{
		Global:     addrs("fd00::1", "10.0.0.9", "10.0.0.5", "10.0.0.6"),
		Namespaced: map[string][]netip.Addr{"team-a": addrs("fd00::a", "10.0.0.20")},
	}
	ensure(t, c, want, false)
	for _, tc := range []struct {
		namespace, key string
		pool           []netip.Addr
	}{
		{"default", "cidr-global", addrs("10.0.0.5", "10.0.0.6", "10.0.0.9", "fd00::1")},
		{"team-a", "cidr-team-a", addrs("10.0.0.20", "fd00::a")},
	} {
		pool, key, err := cloudprovider.ProviderPool(context.Background(), kube, KubevipConfigMapNamespace, KubevipConfigMap, tc.namespace)
		if err != nil || !slices.Equal(pool, tc.pool) || key != tc.key {
			t.Errorf("namespace %s: the provider's pool = %v from %s, %v; want %v from %s", tc.namespace, pool, key, err, tc.pool, tc.key)
		}
	}
}

func ExampleCIDRList() {
	fmt.Println(CIDRList(addrs("fd00::1", "10.0.0.9", "10.0.0.5", "10.0.0.9")))
	// Output: 10.0.0.5/32,10.0.0.9/32,fd00::1/128
}

// TestNotUpdatedRowSaysWhatUpdateOverwrites holds the Troubleshooting row of ConfigMapNotUpdated
// (v1.ReasonTable, from which the README's table is generated) to what EnsureAddresses does with
// update true: each kind of key a person wrote that a pass overwrites (cidr-global) is named in
// the sentence that offers updateConfigMap, and each kind it leaves alone even then (cidr-<ns>,
// and range-<ns>, which a cidr-<ns> would hide) is named in a sentence that says never.
func TestNotUpdatedRowSaysWhatUpdateOverwrites(t *testing.T) {
	person := map[string]string{"cidr-global": "10.0.0.9/32", "cidr-team-a": "10.0.2.0/24", "range-team-b": "10.0.4.1-10.0.4.9"}
	c, kube := fakeGuest(kubevip(person, nil))
	ensure(t, c, Addresses{Global: addrs("10.0.0.5"), Namespaced: map[string][]netip.Addr{
		"team-a": addrs("10.0.0.20"), "team-b": addrs("10.0.0.30"),
	}}, true)
	cm := readKubevip(t, kube)
	kinds := map[string]string{"cidr-global": "`cidr-global`", "cidr-team-a": "`cidr-<namespace>`", "range-team-b": "`range-<namespace>`"}
	overwritten := map[string]bool{}
	for key, value := range person {
		overwritten[kinds[key]] = cm.Data[key] != value || (strings.HasPrefix(key, RangeKeyPrefix) && cm.Data[CIDRKeyPrefix+strings.TrimPrefix(key, RangeKeyPrefix)] != "")
	}
	if !overwritten["`cidr-global`"] || overwritten["`cidr-<namespace>`"] || overwritten["`range-<namespace>`"] {
		t.Fatalf("with update true, data %v from %v; the test expects cidr-global alone overwritten", cm.Data, person)
	}

	var row string
	for _, r := range v1.ReasonTable() {
		if slices.Contains(r.Reasons, v1.ReasonConfigMapNotUpdated) {
			row = r.Do
		}
	}
	if row == "" {
		t.Fatalf("no row for %s", v1.ReasonConfigMapNotUpdated)
	}
	sentences := strings.SplitAfter(row, ". ")
	for kind, over := range overwritten {
		said := false
		for _, s := range sentences {
			if !strings.Contains(s, kind) {
				continue
			}
			offers := strings.Contains(s, `updateConfigMap: "true"`)
			never := strings.Contains(s, "never")
			if over && offers && !never || !over && never {
				said = true
			}
			if !over && offers && !never {
				t.Errorf("%s row: %q offers updateConfigMap to overwrite %s, which it never overwrites", v1.ReasonConfigMapNotUpdated, s, kind)
			}
		}
		if !said {
			t.Errorf("%s row %q: does not say that updateConfigMap %s %s", v1.ReasonConfigMapNotUpdated, row,
				map[bool]string{true: "overwrites", false: "never overwrites"}[over], kind)
		}
	}
	// The old row spoke of "a key a person wrote" in the sentence offering the overwrite.
	for _, s := range sentences {
		if strings.Contains(s, `updateConfigMap: "true"`) && strings.Contains(s, "a key a person wrote") {
			t.Errorf("%s row: %q offers to overwrite any key a person wrote", v1.ReasonConfigMapNotUpdated, s)
		}
	}
}
