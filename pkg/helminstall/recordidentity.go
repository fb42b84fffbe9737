package helminstall

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

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
	why := s.disagreements(obj.Name, r)
	disagree := func(format string, args ...interface{}) { why = append(why, fmt.Sprintf(format, args...)) }
	if obj.Namespace != s.namespace {
		disagree("the guest gave it from namespace %q", shortName(obj.Namespace))
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

// writable refuses a write of anything but a record of the release, in its namespace, under the
// key of its own revision: whatever Helm was shown, it writes no other release's record.
func (s *boundedSecrets) writable(key string, r *release.Release) error {
	if r == nil {
		return s.refused(key, "Helm was to write it without a release")
	}
	if why := s.disagreements(key, r); len(why) > 0 {
		return s.refused(key, "Helm was to write it where "+strings.Join(why, "; "))
	}
	return nil
}

// disagreements are what keeps r from being a revision of the release, in its namespace, under
// key.
func (s *boundedSecrets) disagreements(key string, r *release.Release) []string {
	var why []string
	if r.Name != s.release {
		why = append(why, fmt.Sprintf("it holds release %q", shortName(r.Name)))
	}
	if r.Namespace != s.namespace {
		why = append(why, fmt.Sprintf("it holds a release of namespace %q", shortName(r.Namespace)))
	}
	if want := recordKey(s.release, r.Version); key != want {
		why = append(why, fmt.Sprintf("the Secret's name is not %s, as revision %d inside says", want, r.Version))
	}
	return why
}

// OwnerLabel marks the Helm releases the operator installed (a label of the release record).
const OwnerLabel = "kubefip.k8s.binbash.org/installed-by"

func ownedLabels() map[string]string { return map[string]string{OwnerLabel: "kube-fip-operator"} }

// ForeignRelease is a release of the configured name that holds another chart: the operator
// leaves it alone rather than replace, recover or uninstall someone else's release.
type ForeignRelease struct {
	Namespace, Name, Chart, Want string
}

func (e *ForeignRelease) Error() string {
	return fmt.Sprintf("release %s/%s holds chart %q, not %s: it is not one the operator installs, so it is left alone; "+
		"name another release in kube-fip-config", e.Namespace, e.Name, e.Chart, e.Want)
}

// chartName is the name the chart is published under.
func (r Release) chartName() string {
	if r.Ref != "" {
		return path.Base(strings.TrimSuffix(strings.TrimPrefix(r.Ref, "oci://"), "/"))
	}
	return r.Chart
}

// owns reports whether last, of release namespace/name, is a release of chart: one the operator
// installed (its label), or an earlier one of the same chart (the original operator's, adopted by
// the next upgrade, which adds the label). Anything else is a *ForeignRelease.
func owns(namespace, name, chart string, last *release.Release) error {
	held := ""
	if last.Chart != nil && last.Chart.Metadata != nil {
		held = last.Chart.Metadata.Name
	}
	if held != chart {
		return &ForeignRelease{Namespace: namespace, Name: name, Chart: redact.Shorten(held, maxChartName), Want: chart}
	}
	return nil
}

// maxChartName bounds how much of a chart name read from a guest's release a message repeats.
const maxChartName = 63
