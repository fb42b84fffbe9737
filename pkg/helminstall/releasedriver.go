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
	"time"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// Release records read from a guest are bounded: a guest is untrusted, and one planted record
// must never take the operator's memory.
const (
	// MaxReleaseRecord bounds the stored (base64) record of one release.
	MaxReleaseRecord = 4 << 20
	// MaxReleaseJSON bounds a record once decompressed.
	MaxReleaseJSON = 8 << 20
	// MaxReleaseRecords bounds how many records of one release a query reads (the operator keeps
	// 5 revisions; Helm's CLI keeps 10 by default).
	MaxReleaseRecords = 256
	// MaxReleaseQueryJSON bounds the decompressed records of one query together.
	MaxReleaseQueryJSON = 32 << 20
	// releaseRequestTimeout bounds one request of the driver (the Helm driver API takes no context).
	releaseRequestTimeout = 30 * time.Second
)

// ErrReleaseRecordTooLarge means a release record is larger than the bounds allow.
var ErrReleaseRecordTooLarge = errors.New("the release record is larger than the operator reads")

// boundedSecrets is Helm's Secrets driver with every read bounded: Get, List, Query and Delete
// decode at most MaxReleaseRecord of storage into at most MaxReleaseJSON of JSON, and a query
// reads at most MaxReleaseRecords records. Writes are Helm's own.
type boundedSecrets struct {
	*driver.Secrets
	impl corev1client.SecretInterface
}

func newBoundedSecrets(impl corev1client.SecretInterface) *boundedSecrets {
	return &boundedSecrets{Secrets: driver.NewSecrets(impl), impl: impl}
}

func requestContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), releaseRequestTimeout)
}

func (s *boundedSecrets) Get(key string) (*release.Release, error) {
	ctx, cancel := requestContext()
	defer cancel()
	obj, err := s.impl.Get(ctx, key, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, driver.ErrReleaseNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get: failed to get %q: %w", key, err)
	}
	r, _, err := decodeBounded(obj, MaxReleaseJSON)
	return r, err
}

func (s *boundedSecrets) List(filter func(*release.Release) bool) ([]*release.Release, error) {
	all, err := s.query(labels.Set{"owner": "helm"})
	if err != nil {
		return nil, err
	}
	var out []*release.Release
	for _, r := range all {
		if filter(r) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *boundedSecrets) Query(set map[string]string) ([]*release.Release, error) {
	out, err := s.query(labels.Set(set))
	if err == nil && len(out) == 0 {
		return nil, driver.ErrReleaseNotFound
	}
	return out, err
}

// query lists at most MaxReleaseRecords records matching set; a record that is too large or
// does not decode is an error, so it is never taken for the release's absence.
func (s *boundedSecrets) query(set labels.Set) ([]*release.Release, error) {
	ctx, cancel := requestContext()
	defer cancel()
	selector, err := labels.ValidatedSelectorFromSet(set)
	if err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	list, err := s.impl.List(ctx, metav1.ListOptions{LabelSelector: selector.String(), Limit: MaxReleaseRecords})
	if err != nil {
		return nil, fmt.Errorf("query: failed to query with labels: %w", err)
	}
	if list.Continue != "" {
		return nil, fmt.Errorf("query: more than %d release records match %s", MaxReleaseRecords, selector)
	}
	var out []*release.Release
	budget := int64(MaxReleaseQueryJSON)
	for i := range list.Items {
		r, size, err := decodeBounded(&list.Items[i], min(budget, MaxReleaseJSON))
		if err != nil {
			return nil, err
		}
		budget -= size
		out = append(out, r)
	}
	return out, nil
}

func (s *boundedSecrets) Delete(key string) (*release.Release, error) {
	r, err := s.Get(key)
	if err != nil {
		return nil, err
	}
	ctx, cancel := requestContext()
	defer cancel()
	return r, s.impl.Delete(ctx, key, metav1.DeleteOptions{})
}

// decodeBounded reads a release record as Helm stores it (base64 of gzip of JSON, or of JSON)
// into at most max bytes of JSON, and says how many it took.
func decodeBounded(obj *corev1.Secret, max int64) (*release.Release, int64, error) {
	data := obj.Data["release"]
	if len(data) > MaxReleaseRecord {
		return nil, 0, fmt.Errorf("release record %s: %d bytes stored, at most %d: %w", obj.Name, len(data), MaxReleaseRecord, ErrReleaseRecordTooLarge)
	}
	raw, err := base64.StdEncoding.DecodeString(string(data))
	if err != nil {
		return nil, 0, fmt.Errorf("release record %s is not base64: %w", obj.Name, err)
	}
	var r io.Reader = bytes.NewReader(raw)
	if bytes.HasPrefix(raw, []byte{0x1f, 0x8b, 0x08}) {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return nil, 0, fmt.Errorf("release record %s: %w", obj.Name, err)
		}
		defer gz.Close()
		r = gz
	}
	js, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, 0, fmt.Errorf("release record %s: %w", obj.Name, err)
	}
	if int64(len(js)) > max {
		return nil, 0, fmt.Errorf("release record %s decompresses to more than %d bytes: %w", obj.Name, max, ErrReleaseRecordTooLarge)
	}
	var rel release.Release
	if err := json.Unmarshal(js, &rel); err != nil {
		return nil, 0, fmt.Errorf("release record %s does not decode: %w", obj.Name, err)
	}
	rel.Labels = obj.Labels
	return &rel, int64(len(js)), nil
}
