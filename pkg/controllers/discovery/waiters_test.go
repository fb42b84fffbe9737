package discovery

import (
	"fmt"
	"testing"
	"time"

	"github.com/rancher/wrangler/v2/pkg/relatedresource"
)

func TestWaiters(t *testing.T) {
	w := newWaiters()
	w.add("fleet-default/b", managementDep("c-m-harv1"))
	w.add("fleet-default/a", managementDep("c-m-harv1"))
	w.add("fleet-default/a", rangeDep("harvester1"))
	w.add("fleet-default/a", rangeDep("harvester1")) // twice is once

	if got := fmt.Sprint(w.of(managementDep("c-m-harv1"))); got != "[{fleet-default a} {fleet-default b}]" {
		t.Errorf("waiting for the management cluster: %s", got)
	}
	if got := w.of(rangeDep("harvester1")); len(got) != 1 || got[0] != relatedresource.NewKey("fleet-default", "a") {
		t.Errorf("waiting for a range: %v", got)
	}
	w.forget("fleet-default/a")
	if got := fmt.Sprint(w.of(managementDep("c-m-harv1"))); got != "[{fleet-default b}]" {
		t.Errorf("after forgetting a: %s", got)
	}
	if got := w.of(rangeDep("harvester1")); len(got) != 0 {
		t.Errorf("after forgetting a, still waiting for the range: %v", got)
	}
	w.forget("fleet-default/b")
	if len(w.byDep) != 0 || len(w.byKey) != 0 {
		t.Errorf("forgetting everyone leaves %v / %v", w.byDep, w.byKey)
	}
}

func TestRecordedEvents(t *testing.T) {
	n := newRecordedEvents()
	if !n.isNew("k", "NoMatchingRange", "m1") {
		t.Error("a new note is not first")
	}
	if n.isNew("k", "NoMatchingRange", "m1") {
		t.Error("the same note twice is first twice")
	}
	if !n.isNew("k", "NoMatchingRange", "m2") || !n.isNew("other", "NoMatchingRange", "m1") {
		t.Error("another message or another cluster is a new note")
	}
	n.forget("k")
	if !n.isNew("k", "NoMatchingRange", "m1") {
		t.Error("a note after forget is not first")
	}
}

func TestCredentialRetriesDoubleUpToTheCap(t *testing.T) {
	r := newCredentialRetries()
	var got []time.Duration
	for range 10 {
		got = append(got, r.next("fleet-default/a"))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second,
		32 * time.Second, 64 * time.Second, maxCredentialRetry, maxCredentialRetry, maxCredentialRetry}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("retries %v, want %v", got, want)
	}
	if d := r.next("fleet-default/b"); d != firstCredentialRetry {
		t.Errorf("another cluster's first retry is %s, want %s", d, firstCredentialRetry)
	}
	r.forget("fleet-default/a")
	if d := r.next("fleet-default/a"); d != firstCredentialRetry {
		t.Errorf("after forget the retry is %s, want %s", d, firstCredentialRetry)
	}
}
