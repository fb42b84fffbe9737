package helminstall

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kubefip/kube-fip-operator/pkg/guest"
)

// Release records read from a guest are bounded: a guest is untrusted, and one planted record
// must never take the operator's memory. What a record of the charts the operator installs
// takes, for comparison: about 8 KiB stored, 21 KiB of JSON, 400 JSON values.
const (
	// MaxReleaseRecord bounds the stored (base64) record of one release: an API server stores no
	// Secret larger than 1 MiB.
	MaxReleaseRecord = 1 << 20
	// MaxReleaseJSON bounds a record once decompressed.
	MaxReleaseJSON = 2 << 20
	// MaxReleaseValues bounds the JSON values of a record once decompressed (see
	// guest.LimitValues): decoded, a value takes far more room than its text.
	MaxReleaseValues = 1 << 15
	// MaxReleaseRecords bounds how many records of one release a query reads (the operator keeps
	// 5 revisions; Helm's CLI keeps 10 by default).
	MaxReleaseRecords = 256
	// ReleaseRecordPage is how many records one request lists: a page of records of these charts
	// is well under 100 KiB, far within guest.MaxGuestResponse (a page of planted records near
	// the API server's limit is not, and is an error of that guest's pass).
	ReleaseRecordPage = 8
	// MaxReleaseQueryJSON and MaxReleaseQueryValues bound the decompressed records of one query
	// together: what the operator holds of them at once.
	MaxReleaseQueryJSON   = 8 << 20
	MaxReleaseQueryValues = 1 << 17
	// releaseRequestTimeout bounds one request of the driver (the Helm driver API takes no context).
	releaseRequestTimeout = 30 * time.Second
)

// ErrReleaseRecordTooLarge means a release record is larger than the bounds allow.
var ErrReleaseRecordTooLarge = errors.New("the release record is larger than the operator reads")

// boundedSecrets is Helm's Secrets driver for the records of one release in one namespace, with
// every read bounded and every record's identity checked. A read decodes at most
// MaxReleaseRecord of storage into at most MaxReleaseJSON of JSON, a query lists at most
// MaxReleaseRecords records, ReleaseRecordPage at a time, and a record whose Secret and contents
// disagree on which release and revision it is refuses the whole read (see checkIdentity).
// Writes are Helm's own, but only of the release's records, each under its own key.
type boundedSecrets struct {
	*driver.Secrets
	impl      corev1client.SecretInterface
	namespace string
	release   string
}

func newBoundedSecrets(impl corev1client.SecretInterface, namespace, release string) *boundedSecrets {
	return &boundedSecrets{Secrets: driver.NewSecrets(impl), impl: impl, namespace: namespace, release: release}
}

func requestContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), releaseRequestTimeout)
}

func (s *boundedSecrets) Get(key string) (*release.Release, error) {
	_, r, err := s.get(key)
	return r, err
}

// get reads the record key of the release: its Secret and the release it holds.
func (s *boundedSecrets) get(key string) (*corev1.Secret, *release.Release, error) {
	if !strings.HasPrefix(key, recordPrefix(s.release)) {
		return nil, nil, s.refused(key, "it is not a record of release "+s.release)
	}
	ctx, cancel := requestContext()
	defer cancel()
	obj, err := s.impl.Get(ctx, key, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, driver.ErrReleaseNotFound
	}
	if err != nil {
		return nil, nil, fmt.Errorf("get: failed to get %q: %w", key, err)
	}
	if obj.Name != key {
		return nil, nil, s.refused(key, "the guest answered with Secret "+shortName(obj.Name))
	}
	r, err := s.decode(obj, &readBudget{json: MaxReleaseJSON, values: MaxReleaseValues})
	return obj, r, err
}

// List lists the release's records only: the driver serves one release.
func (s *boundedSecrets) List(filter func(*release.Release) bool) ([]*release.Release, error) {
	all, err := s.query(labels.Set{"owner": "helm", "name": s.release})
	return slices.DeleteFunc(all, func(r *release.Release) bool { return !filter(r) }), err
}

func (s *boundedSecrets) Query(set map[string]string) ([]*release.Release, error) {
	if set["name"] != s.release {
		return nil, s.refused("", fmt.Sprintf("a query for the records of release %q", shortName(set["name"])))
	}
	out, err := s.query(labels.Set(set))
	if err == nil && len(out) == 0 {
		return nil, driver.ErrReleaseNotFound
	}
	return out, err
}

// query lists the records matching set, ReleaseRecordPage at a time and at most
// MaxReleaseRecords; a record that is too large, does not decode, does not match set or is not
// what its Secret says is an error, so it is never taken for the release's absence.
func (s *boundedSecrets) query(set labels.Set) ([]*release.Release, error) {
	selector, err := labels.ValidatedSelectorFromSet(set)
	if err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	budget := &readBudget{json: MaxReleaseQueryJSON, values: MaxReleaseQueryValues}
	opts := metav1.ListOptions{LabelSelector: selector.String(), Limit: ReleaseRecordPage}
	var out []*release.Release
	for page := 0; ; page++ {
		if page > MaxReleaseRecords/ReleaseRecordPage {
			return nil, fmt.Errorf("query: more than %d pages of release records match %s", page, selector)
		}
		list, err := s.list(opts)
		if err != nil {
			return nil, fmt.Errorf("query: failed to query with labels: %w", err)
		}
		if len(out)+len(list.Items) > MaxReleaseRecords {
			return nil, fmt.Errorf("query: more than %d release records match %s", MaxReleaseRecords, selector)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			if !selector.Matches(labels.Set(obj.Labels)) {
				return nil, s.refused(obj.Name, "the guest listed it for "+selector.String()+", which its labels do not match")
			}
			r, err := s.decode(obj, budget)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

func (s *boundedSecrets) list(opts metav1.ListOptions) (*corev1.SecretList, error) {
	ctx, cancel := requestContext()
	defer cancel()
	return s.impl.List(ctx, opts)
}

func (s *boundedSecrets) Create(key string, r *release.Release) error {
	if err := s.writable(key, r); err != nil {
		return err
	}
	return s.Secrets.Create(key, r)
}

func (s *boundedSecrets) Update(key string, r *release.Release) error {
	if err := s.writable(key, r); err != nil {
		return err
	}
	return s.Secrets.Update(key, r)
}

// Delete deletes the record key of the release, as read: the Secret that was checked, not one
// put in its place since.
func (s *boundedSecrets) Delete(key string) (*release.Release, error) {
	obj, r, err := s.get(key)
	if err != nil {
		return nil, err
	}
	ctx, cancel := requestContext()
	defer cancel()
	var as metav1.DeleteOptions
	if obj.UID != "" && obj.ResourceVersion != "" {
		as.Preconditions = &metav1.Preconditions{UID: &obj.UID, ResourceVersion: &obj.ResourceVersion}
	}
	return r, s.impl.Delete(ctx, key, as)
}

// readBudget is what a read of records may still decompress: JSON bytes and values.
type readBudget struct {
	json   int64
	values int
}

// decode reads a release record as Helm stores it (base64 of gzip of JSON, or of JSON) within
// MaxReleaseJSON bytes and MaxReleaseValues values and what is left of budget, takes both from
// budget, and checks the record's identity.
func (s *boundedSecrets) decode(obj *corev1.Secret, budget *readBudget) (*release.Release, error) {
	data := obj.Data["release"]
	name := shortName(obj.Name)
	if len(data) > MaxReleaseRecord {
		return nil, fmt.Errorf("release record %s: %d bytes stored, at most %d: %w", name, len(data), MaxReleaseRecord, ErrReleaseRecordTooLarge)
	}
	raw, err := base64.StdEncoding.DecodeString(string(data))
	if err != nil {
		return nil, fmt.Errorf("release record %s is not base64: %w", name, err)
	}
	var r io.Reader = bytes.NewReader(raw)
	if bytes.HasPrefix(raw, []byte{0x1f, 0x8b, 0x08}) {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("release record %s: %w", name, err)
		}
		defer gz.Close()
		r = gz
	}
	max, values := min(budget.json, MaxReleaseJSON), min(budget.values, MaxReleaseValues)
	counted := guest.LimitValues(io.NopCloser(r), values, ErrReleaseRecordTooLarge)
	js, err := io.ReadAll(io.LimitReader(counted, max+1))
	if err != nil {
		return nil, fmt.Errorf("release record %s: %w", name, err)
	}
	if int64(len(js)) > max {
		return nil, fmt.Errorf("release record %s decompresses to more than %d bytes: %w", name, max, ErrReleaseRecordTooLarge)
	}
	budget.json -= int64(len(js))
	budget.values -= counted.Counted()
	var rel release.Release
	if err := json.Unmarshal(js, &rel); err != nil {
		return nil, fmt.Errorf("release record %s does not decode: %w", name, err)
	}
	if err := s.checkIdentity(obj, &rel); err != nil {
		return nil, err
	}
	rel.Labels = obj.Labels
	return &rel, nil
}
