package helminstall

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// ErrReleaseRecordTooLarge means a release record is larger than the bounds allow.
var ErrReleaseRecordTooLarge = errors.New("the release record is larger than the operator reads")

// RecordRefused is a release record in the guest that the operator does not use: its Secret and
// the release it holds disagree on which release and revision it is, or it is not the release's
// at all. Helm would write what it holds back under the name inside, over another release's
// record, hooks and all; so nothing is upgraded, recovered, rolled back or uninstalled over it.
type RecordRefused struct {
	Namespace string
	// Secret is the record's Secret name, shortened; "" when the refusal is of a query.
	Secret string
	Why    string
}

func (e *RecordRefused) Error() string {
	what := "release record " + e.Namespace + "/" + e.Secret
	if e.Secret == "" {
		what = "a read of release records in " + e.Namespace
	}
	return fmt.Sprintf("%s is refused: %s; nothing is upgraded, recovered or removed over it: delete it in the guest if it is not meant to be there",
		what, e.Why)
}

func (s *boundedSecrets) refused(key, why string) error {
	return &RecordRefused{Namespace: s.namespace, Secret: shortName(key), Why: why}
}

// shortName is a name read from a guest, as a message may quote it.
func shortName(s string) string { return redact.Shorten(s, 253) }

// recordKey is the name of the Secret of revision version of release name, as Helm's Secrets
// driver names it.
func recordKey(name string, version int) string {
	return recordPrefix(name) + strconv.Itoa(version)
}

func recordPrefix(name string) string { return "sh.helm.release.v1." + name + ".v" }

// checkIdentity refuses a record unless everything that says which release and revision it is
// agrees: the Secret's name, namespace and labels (owner, name, version, status, and the
// operator's own label where it is set), and the name, namespace and revision of the release
// inside. Helm's own records always agree.
func (s *boundedSecrets) checkIdentity(obj *corev1.Secret, r *release.Release) error {
	var why []string
	disagree := func(format string, args ...interface{}) { why = append(why, fmt.Sprintf(format, args...)) }
	if r.Name != s.release {
		disagree("it holds release %q", shortName(r.Name))
	}
	if r.Namespace != s.namespace {
		disagree("it holds a release of namespace %q", shortName(r.Namespace))
	}
	if obj.Namespace != s.namespace {
		disagree("the guest gave it from namespace %q", shortName(obj.Namespace))
	}
	if want := recordKey(s.release, r.Version); obj.Name != want {
		disagree("the Secret's name is not %s, as revision %d inside says", want, r.Version)
	}
	status := ""
	if r.Info != nil {
		status = r.Info.Status.String()
	}
	for label, want := range map[string]string{"owner": "helm", "name": r.Name, "version": strconv.Itoa(r.Version), "status": status} {
		if got := obj.Labels[label]; got != want {
			disagree("its label %s is %q, the release inside says %q", label, shortName(got), shortName(want))
		}
	}
	if got, ok := obj.Labels[OwnerLabel]; ok && got != ownedLabels()[OwnerLabel] {
		disagree("its label %s is %q", OwnerLabel, shortName(got))
	}
	if len(why) == 0 {
		return nil
	}
	// The order of a map's labels is not the order of a message.
	slices.Sort(why)
	return s.refused(obj.Name, strings.Join(why, "; "))
}

// readBudget is what a read of records may still decompress: JSON bytes and values.
type readBudget struct {
	json   int64
	values int
}

func newReadBudget(json int64, values int) *readBudget {
	return &readBudget{json: json, values: values}
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
