package helminstall

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	helmtime "helm.sh/helm/v3/pkg/time"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
)

// storedRecord is r as Helm's Secrets driver stores it: base64 of gzip of its JSON.
func storedRecord(t testing.TB, r interface{}) []byte {
	t.Helper()
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write(js)
	_ = w.Close()
	return []byte(base64.StdEncoding.EncodeToString(gz.Bytes()))
}

// recordSecret is a Secret named and labelled as Helm would for revision 2 of kube-vip in
// kube-system by the operator, holding inner, after edit.
func recordSecret(t testing.TB, inner interface{}, edit func(*corev1.Secret)) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.kube-vip.v2", Namespace: "kube-system", UID: "uid-1", ResourceVersion: "7",
			Labels: map[string]string{"owner": "helm", "name": "kube-vip", "version": "2", "status": "deployed", OwnerLabel: "kube-fip-operator"}},
		Type: "helm.sh/release.v1",
		Data: map[string][]byte{"release": storedRecord(t, inner)},
	}
	if edit != nil {
		edit(s)
	}
	return s
}

func kubevipRelease(edit func(*release.Release)) *release.Release {
	r := &release.Release{Name: "kube-vip", Namespace: "kube-system", Version: 2,
		Info:     &release.Info{Status: release.StatusDeployed, LastDeployed: helmtime.Unix(0, 0)},
		Manifest: "---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: kube-vip\n"}
	if edit != nil {
		edit(r)
	}
	return r
}

// answering is the Secrets of kube-system in a guest whose API server answers every read of a
// Secret with s, whatever was asked, label selector and all: as a hostile API server may.
func answering(t *testing.T, s *corev1.Secret) corev1client.SecretInterface {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var answer interface{} = s
		if strings.HasSuffix(r.URL.Path, "/secrets") {
			answer = &corev1.SecretList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "SecretList"}, Items: []corev1.Secret{*s}}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(answer)
	}))
	t.Cleanup(srv.Close)
	core, err := corev1client.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return core.Secrets("kube-system")
}

// TestReleaseRecordIdentity: a record is used only when its Secret's name, namespace and labels,
// the operator's label where it is set, and the name, namespace and revision of the release inside
// all agree; each disagreement alone refuses it, through a read of one record and through a query
// alike.
func TestReleaseRecordIdentity(t *testing.T) {
	cases := []struct {
		name   string
		inner  func(*release.Release)
		secret func(*corev1.Secret)
		why    string // "" when the record is used
	}{
		{name: "consistent"},
		{name: "consistent, of the original operator (no label of the operator's)", secret: func(s *corev1.Secret) { delete(s.Labels, OwnerLabel) }},
		{name: "consistent, pending", inner: func(r *release.Release) { r.Info.Status = release.StatusPendingUpgrade },
			secret: func(s *corev1.Secret) { s.Labels["status"] = "pending-upgrade" }},
		{name: "another release inside", inner: func(r *release.Release) { r.Name = "victim" }, why: `it holds release "victim"`},
		{name: "another namespace inside", inner: func(r *release.Release) { r.Namespace = "tenant" }, why: `namespace "tenant"`},
		{name: "another revision inside", inner: func(r *release.Release) { r.Version = 1 }, why: "is not sh.helm.release.v1.kube-vip.v1"},
		{name: "another status inside", inner: func(r *release.Release) { r.Info.Status = release.StatusSuperseded }, why: "label status"},
		{name: "no info inside", inner: func(r *release.Release) { r.Info = nil }, why: "label status"},
		{name: "label owner", secret: func(s *corev1.Secret) { s.Labels["owner"] = "tiller" }, why: "label owner"},
		{name: "label name", secret: func(s *corev1.Secret) { s.Labels["name"] = "victim" }, why: "label name"},
		{name: "label version", secret: func(s *corev1.Secret) { s.Labels["version"] = "3" }, why: "label version"},
		{name: "label status", secret: func(s *corev1.Secret) { s.Labels["status"] = "superseded" }, why: "label status"},
		{name: "no labels", secret: func(s *corev1.Secret) { s.Labels = nil }, why: "label"},
		{name: "the operator's label of another", secret: func(s *corev1.Secret) { s.Labels[OwnerLabel] = "someone" }, why: OwnerLabel},
		{name: "the Secret of another revision", secret: func(s *corev1.Secret) { s.Name = "sh.helm.release.v1.kube-vip.v3" }, why: "kube-vip.v3"},
		{name: "the Secret of another release", secret: func(s *corev1.Secret) { s.Name = "sh.helm.release.v1.victim.v2" }, why: "sh.helm.release.v1.victim.v2"},
		{name: "a Secret of another namespace", secret: func(s *corev1.Secret) { s.Namespace = "default" }, why: `namespace "default"`},
	}
	for _, c := range cases {
		s := recordSecret(t, kubevipRelease(c.inner), c.secret)
		records := newBoundedSecrets(answering(t, s), "kube-system", "kube-vip")
		reads := map[string]func() (*release.Release, error){
			"Get": func() (*release.Release, error) { return records.Get("sh.helm.release.v1.kube-vip.v2") },
			"Query": func() (*release.Release, error) {
				all, err := records.Query(map[string]string{"name": "kube-vip", "owner": "helm"})
				if err != nil || len(all) != 1 {
					return nil, err
				}
				return all[0], nil
			},
		}
		for read, fn := range reads {
			got, err := fn()
			var refused *RecordRefused
			switch {
			case c.why == "" && (err != nil || got == nil || got.Name != "kube-vip"):
				t.Errorf("%s, %s: %v, %v; want the record", c.name, read, got, err)
			case c.why != "" && !errors.As(err, &refused):
				t.Errorf("%s, %s: %v, %v; want RecordRefused", c.name, read, got, err)
			case c.why != "" && read == "Get" && !strings.Contains(err.Error(), c.why):
				t.Errorf("%s, %s: %q does not say %q", c.name, read, err, c.why)
			}
		}
	}
}

// TestReleaseDriverWritesOnlyTheRelease: the driver Helm writes through refuses to create, update
// or delete anything but a record of the release it serves, in its namespace, under the key of its
// own revision, and reads no other release's records.
func TestReleaseDriverWritesOnlyTheRelease(t *testing.T) {
	kube := fake.NewSimpleClientset()
	records := newBoundedSecrets(kube.CoreV1().Secrets("kube-system"), "kube-system", "kube-vip")
	refusals := []struct {
		name string
		key  string
		rel  *release.Release
	}{
		{"another release", "sh.helm.release.v1.victim.v1", kubevipRelease(func(r *release.Release) { r.Name, r.Version = "victim", 1 })},
		{"another release under the release's key", "sh.helm.release.v1.kube-vip.v2", kubevipRelease(func(r *release.Release) { r.Name = "victim" })},
		{"another namespace", "sh.helm.release.v1.kube-vip.v2", kubevipRelease(func(r *release.Release) { r.Namespace = "tenant" })},
		{"another revision's key", "sh.helm.release.v1.kube-vip.v1", kubevipRelease(nil)},
		{"another release's key", "sh.helm.release.v1.victim.v2", kubevipRelease(nil)},
		{"no release", "sh.helm.release.v1.kube-vip.v2", nil},
	}
	for _, c := range refusals {
		for op, write := range map[string]func(string, *release.Release) error{"Create": records.Create, "Update": records.Update} {
			var refused *RecordRefused
			if err := write(c.key, c.rel); !errors.As(err, &refused) {
				t.Errorf("%s %s: %v; want RecordRefused", op, c.name, err)
			}
		}
	}
	if w := writes(kube); len(w) > 0 {
		t.Errorf("the guest was written to: %v", w)
	}
	// Another release's records are not read either.
	victim := recordSecret(t, kubevipRelease(func(r *release.Release) { r.Name, r.Version = "victim", 1 }), func(s *corev1.Secret) {
		s.Name, s.Labels["name"], s.Labels["version"] = "sh.helm.release.v1.victim.v1", "victim", "1"
	})
	if _, err := kube.CoreV1().Secrets("kube-system").Create(context.Background(), victim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var refused *RecordRefused
	if _, err := records.Delete(victim.Name); !errors.As(err, &refused) {
		t.Errorf("Delete of another release's record: %v; want RecordRefused", err)
	}
	if _, err := records.Query(map[string]string{"name": "victim", "owner": "helm"}); !errors.As(err, &refused) {
		t.Errorf("Query of another release's records: %v; want RecordRefused", err)
	}
	if all, err := records.List(func(*release.Release) bool { return true }); err != nil || len(all) != 0 {
		t.Errorf("List = %v, %v; want none of another release's records", all, err)
	}
	// The release's own record, under its key, is written; and deleted as it was read.
	if err := records.Create("sh.helm.release.v1.kube-vip.v2", kubevipRelease(nil)); err != nil {
		t.Fatalf("Create of the release's record: %v", err)
	}
	if err := records.Update("sh.helm.release.v1.kube-vip.v2", kubevipRelease(func(r *release.Release) { r.Info.Status = release.StatusSuperseded })); err != nil {
		t.Errorf("Update of the release's record: %v", err)
	}
	if r, err := storage.Init(records).Get("kube-vip", 2); err != nil || r.Info.Status != release.StatusSuperseded {
		t.Errorf("the release's record after Update: %v, %v", r, err)
	}
	if _, err := records.Delete("sh.helm.release.v1.kube-vip.v2"); err != nil {
		t.Errorf("Delete of the release's record: %v", err)
	}
}

// TestEnsureOverARecordOfAnotherRelease: a record named and labelled for the operator's release
// but holding another release is refused before anything is fetched or written, with kubevipUpdate
// on: the other release's record stays as it was.
func TestEnsureOverARecordOfAnotherRelease(t *testing.T) {
	victim := recordSecret(t, kubevipRelease(func(r *release.Release) { r.Name, r.Version = "victim", 1 }), func(s *corev1.Secret) {
		s.Name, s.Labels["name"], s.Labels["version"] = "sh.helm.release.v1.victim.v1", "victim", "1"
		delete(s.Labels, OwnerLabel)
	})
	forged := recordSecret(t, kubevipRelease(func(r *release.Release) {
		r.Name, r.Version = "victim", 1
		r.Chart = &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: "kube-vip", Version: "0.9.9"}}
		r.Hooks = []*release.Hook{{Name: "x", Kind: "ClusterRoleBinding", Events: []release.HookEvent{release.HookPreDelete}}}
	}), func(s *corev1.Secret) { s.Name, s.Labels["version"] = "sh.helm.release.v1.kube-vip.v1", "1" })
	c, kube := fakeGuest(victim, forged)
	in := newTestInstaller(t, DefaultLimits())
	_, err := in.Ensure(context.Background(), c, Release{Namespace: "kube-system", Name: "kube-vip", Chart: "kube-vip", RepoURL: "http://127.0.0.1:1",
		Version: "0.9.9", Update: true, Plan: defaultPlan(t, "0.9.9")})
	var refused *RecordRefused
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), `holds release "victim"`) {
		t.Errorf("Ensure = %v; want RecordRefused naming the release inside", err)
	}
	if w := writes(kube); len(w) > 0 {
		t.Errorf("the guest was written to: %v", w)
	}
}

// TestReleaseRecordsAreReadWithinBudgets: a record of many empty values, within the bytes
// allowed, is refused by its values; records that are each within bounds but together exceed a
// query's budget are refused; and a guest that pages without end is asked a bounded number of
// times.
func TestReleaseRecordsAreReadWithinBudgets(t *testing.T) {
	values := recordSecret(t, map[string]interface{}{"name": "kube-vip", "namespace": "kube-system", "version": 2,
		"info": map[string]string{"status": "deployed"}, "config": map[string]interface{}{"a": json.RawMessage("[" + strings.Repeat("{},", 100000) + "{}]")}}, nil)
	records := newBoundedSecrets(answering(t, values), "kube-system", "kube-vip")
	if _, err := records.Get(values.Name); !errors.Is(err, ErrReleaseRecordTooLarge) {
		t.Errorf("a record of 100000 empty objects (%d KiB stored): %v; want ErrReleaseRecordTooLarge", len(values.Data["release"])>>10, err)
	}

	big := kubevipRelease(func(r *release.Release) { r.Manifest = strings.Repeat("#", MaxReleaseJSON-(64<<10)) })
	kube := fake.NewSimpleClientset()
	for v := 1; v <= MaxReleaseQueryJSON/MaxReleaseJSON+1; v++ {
		s := recordSecret(t, kubevipRelease(func(r *release.Release) { *r = *big; r.Version = v }), func(s *corev1.Secret) {
			s.Name, s.Labels["version"] = recordKey("kube-vip", v), fmt.Sprint(v)
		})
		if _, err := kube.CoreV1().Secrets("kube-system").Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	records = newBoundedSecrets(kube.CoreV1().Secrets("kube-system"), "kube-system", "kube-vip")
	if _, err := records.Get(recordKey("kube-vip", 1)); err != nil {
		t.Errorf("one record of %d KiB: %v", MaxReleaseJSON>>10, err)
	}
	if _, err := storage.Init(records).History("kube-vip"); !errors.Is(err, ErrReleaseRecordTooLarge) {
		t.Errorf("%d records of %d KiB: %v; want ErrReleaseRecordTooLarge", MaxReleaseQueryJSON/MaxReleaseJSON+1, MaxReleaseJSON>>10, err)
	}

	endless := fake.NewSimpleClientset()
	lists := 0
	one := recordSecret(t, kubevipRelease(nil), nil)
	endless.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists++
		return true, &corev1.SecretList{ListMeta: metav1.ListMeta{Continue: "more"}, Items: []corev1.Secret{*one}}, nil
	})
	records = newBoundedSecrets(endless.CoreV1().Secrets("kube-system"), "kube-system", "kube-vip")
	if _, err := records.Query(map[string]string{"name": "kube-vip", "owner": "helm"}); err == nil {
		t.Error("a guest paging without end: no error")
	}
	if max := MaxReleaseRecords/ReleaseRecordPage + 1; lists > max {
		t.Errorf("a guest paging without end was asked %d times; want at most %d", lists, max)
	}
	t.Logf("a guest paging without end was asked %d times", lists)
}
