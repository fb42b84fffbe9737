package cleanup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// report reads the report ConfigMap of kube-fip, nil when there is none.
func report(t *testing.T, kube *kubefake.Clientset) *corev1.ConfigMap {
	t.Helper()
	cm, err := kube.CoreV1().ConfigMaps("kube-fip").Get(context.Background(), ReportConfigMapName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// TestReportNamesTheGuestsNotCleaned: the report has a line for each guest not (wholly) cleaned,
// with why and what was done there all the same, and none for a guest cleaned; no credential a
// problem quotes is kept; a report of an earlier uninstall is replaced.
func TestReportNamesTheGuestsNotCleaned(t *testing.T) {
	kube := kubefake.NewSimpleClientset(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ReportConfigMapName, Namespace: "kube-fip"},
		Data:       map[string]string{ReportKeyGuests: "earlier: not reached\n"},
	})
	outcomes := []GuestOutcome{
		{Cluster: "cleaned", Done: []string{"release kube-system/kube-vip uninstalled"}},
		{Cluster: "gone", Problem: `not reached: Get "https://admin:hunter22@rancher.example.com/k8s/clusters/c-m-1": Authorization: Bearer abcdefgh12345678 refused`},
		{Cluster: "half", Done: []string{"release kube-system/kube-vip uninstalled"}, Problem: "deleting kube-system/kubevip: token=s3cr3t-t0ken timed out"},
	}
	text := notCleaned(outcomes, nil)
	when := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	if err := writeReport(context.Background(), kube, "kube-fip", ModeDelete, text, when); err != nil {
		t.Fatal(err)
	}
	cm := report(t, kube)
	if cm == nil {
		t.Fatal("no report")
	}
	lines := strings.Split(strings.TrimSuffix(cm.Data[ReportKeyGuests], "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "gone: not reached: ") ||
		!strings.HasPrefix(lines[1], "half: deleting kube-system/kubevip") || !strings.Contains(lines[1], "release kube-system/kube-vip uninstalled") {
		t.Errorf("report lines %q; want gone and half, each with its problem, and what was done in half", lines)
	}
	for _, secret := range []string{"hunter22", "abcdefgh12345678", "s3cr3t-t0ken", "earlier"} {
		if strings.Contains(cm.Data[ReportKeyGuests], secret) {
			t.Errorf("the report keeps %q:\n%s", secret, cm.Data[ReportKeyGuests])
		}
	}
	if cm.Data[ReportKeyMode] != "delete" || cm.Data[ReportKeyTime] != "2025-03-04T05:06:07Z" {
		t.Errorf("report mode %q, time %q; want delete at 2025-03-04T05:06:07Z", cm.Data[ReportKeyMode], cm.Data[ReportKeyTime])
	}
	if got := notCleaned(nil, errors.New("listing FloatingIPs: forbidden")); got != "the guest clusters were not cleaned: listing FloatingIPs: forbidden" {
		t.Errorf("no guest cleaned at all: report %q; want the reason", got)
	}
}

// TestReportIsBounded: thousands of guests with long problems make a report far below a
// ConfigMap's limit, ending with how many guests it does not name.
func TestReportIsBounded(t *testing.T) {
	var outcomes []GuestOutcome
	for i := 0; i < 5000; i++ {
		outcomes = append(outcomes, GuestOutcome{Cluster: fmt.Sprintf("guest-%04d", i) + strings.Repeat("x", 1000), Problem: "not reached: " + strings.Repeat("y", 5000)})
	}
	text := notCleaned(outcomes, nil)
	lines := strings.Split(text, "\n")
	if len(text) > maxReportBytes+100 || len(lines) < 100 {
		t.Fatalf("report of %d bytes in %d lines; want at most about %d bytes naming many guests", len(text), len(lines), maxReportBytes)
	}
	last := lines[len(lines)-1]
	if want := fmt.Sprintf("and %d more guest clusters not cleaned", 5000-(len(lines)-1)); last != want {
		t.Errorf("the report ends with %q; want %q", last, want)
	}
}

// TestRunKeepsTheGuestsNotCleaned: a clean-up that cleans the guests and cannot reach one writes
// the report naming it; one that keeps the guests, or reaches them all, writes none.
func TestRunKeepsTheGuestsNotCleaned(t *testing.T) {
	gone := object("FloatingIP", "c-m-gone", "gone-kubevip", "10.0.0.4", fipFinalizer)
	gone.SetAnnotations(map[string]string{v1.AnnotationClusterName: "gone"})
	for _, tc := range []struct {
		name   string
		clean  bool
		guest  bool
		report bool
	}{
		{"guests kept", false, true, false},
		{"nothing to clean", true, false, false},
		{"a guest not reached", true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := world()
			if tc.guest {
				objs = append(objs, gone.DeepCopy())
			}
			kube := kubefake.NewSimpleClientset()
			opts := Options{Mode: ModeKeep, Namespace: "kube-fip", Guests: GuestOptions{Clean: tc.clean, FleetNamespace: "fleet-default"}}
			if _, err := Run(context.Background(), kube, newDynamic(objs...), opts); err != nil {
				t.Fatal(err)
			}
			cm := report(t, kube)
			switch {
			case !tc.report && cm != nil:
				t.Errorf("a report with nothing to report: %v", cm.Data)
			case tc.report && (cm == nil || !strings.HasPrefix(cm.Data[ReportKeyGuests], "gone: not reached: ")):
				t.Errorf("report %v; want one naming the guest gone", cm)
			}
		})
	}
}
