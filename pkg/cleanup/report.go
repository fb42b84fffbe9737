package cleanup

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// ReportConfigMapName names the ConfigMap, in the operator's namespace, that keeps the guest
// clusters the clean-up could not clean once the uninstall is over: Helm deletes the hook's Job,
// and its log with it, when the Job succeeds. The chart does not render it, so Helm's uninstall
// leaves it; an administrator deletes it once the guests are seen to.
const ReportConfigMapName = "kube-fip-operator-uninstall-report"

// The keys of the report.
const (
	// ReportKeyGuests holds one line per guest cluster not (wholly) cleaned: its name, why, and
	// what was taken out of it all the same.
	ReportKeyGuests = "guests"
	// ReportKeyMode is the clean-up's mode (keep or delete).
	ReportKeyMode = "mode"
	// ReportKeyTime is when the clean-up wrote the report, in RFC 3339.
	ReportKeyTime = "time"
)

// maxReportBytes bounds the report's lines, far below the 1 MiB a ConfigMap may hold: each line is
// capped to redact.MaxMessage, so at least 250 guests are named, and how many more there are.
const maxReportBytes = 256 << 10

// notCleaned is the report's text: a line per guest of outcomes the clean-up could not clean, or
// the reason no guest was cleaned (err); "" when there is nothing to report. Every line goes
// through redact.Text, whichever path built it, so that no credential is kept.
func notCleaned(outcomes []GuestOutcome, err error) string {
	var lines []string
	if err != nil {
		lines = append(lines, "the guest clusters were not cleaned: "+redact.Error(err))
	}
	size, left := 0, 0
	for _, o := range outcomes {
		if o.Problem == "" {
			continue
		}
		// A line is at most redact.MaxMessage long once redacted: past the budget the rest are
		// only counted, so that thousands of guests cost no more than the lines kept.
		if size+redact.MaxMessage+1 > maxReportBytes {
			left++
			continue
		}
		line := redact.Shorten(o.Cluster, redact.MaxValue) + ": " + o.Problem
		if len(o.Done) > 0 {
			line += " (done all the same: " + strings.Join(o.Done, "; ") + ")"
		}
		line = redact.Text(line)
		size += len(line) + 1
		lines = append(lines, line)
	}
	if left > 0 {
		lines = append(lines, fmt.Sprintf("and %d more guest clusters not cleaned", left))
	}
	return strings.Join(lines, "\n")
}

// keepReport writes text, when there is any, into the report ConfigMap of the operator's namespace.
// A report that cannot be written is logged and does not fail the uninstall: the log names the
// guests all the same.
func keepReport(ctx context.Context, kube kubernetes.Interface, opts Options, text string) {
	if text == "" {
		return
	}
	if err := writeReport(ctx, kube, opts.Namespace, opts.Mode, text, time.Now()); err != nil {
		logrus.Warnf("the guest clusters not cleaned are not kept after the uninstall: %s", redact.Error(err))
		return
	}
	logrus.Infof("the guest clusters not cleaned are kept in ConfigMap %s/%s until it is deleted", opts.Namespace, ReportConfigMapName)
}

// writeReport keeps text in the ConfigMap ReportConfigMapName of namespace, replacing the report
// of an earlier uninstall. It is written whole, without reading it first: the hook may create it
// and update it by name, and nothing more.
func writeReport(ctx context.Context, kube kubernetes.Interface, namespace string, mode Mode, text string, now time.Time) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ReportConfigMapName, Namespace: namespace, Labels: map[string]string{
			"app.kubernetes.io/name":      "kube-fip-operator",
			"app.kubernetes.io/component": "uninstall-report",
		}},
		Data: map[string]string{ReportKeyGuests: text + "\n", ReportKeyMode: string(mode), ReportKeyTime: now.UTC().Format(time.RFC3339)},
	}
	configMaps := kube.CoreV1().ConfigMaps(namespace)
	_, err := configMaps.Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = configMaps.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing ConfigMap %s/%s: %w", namespace, ReportConfigMapName, err)
	}
	return nil
}
