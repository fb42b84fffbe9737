package discovery

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/rancher/wrangler/v2/pkg/kv"
	"github.com/rancher/wrangler/v2/pkg/relatedresource"
)

// Dependencies a cluster can wait for that no index on the provisioning cluster can find: the
// cluster names its Harvester management cluster only inside a credential, and its ranges only
// through that management cluster's display name.
func managementDep(id string) string       { return "management/" + id }
func rangeDep(harvesterName string) string { return "range/" + harvesterName }

// waiters remembers which provisioning clusters wait for which dependency. A cluster registers a
// dependency before it reads it from the cache: an object arriving after the read wakes it through
// this registry, one arriving before is seen by the read, so no arrival is missed. It lives in
// memory only, which is enough: at start every cluster is handled once and registers again.
type waiters struct {
	mu    sync.Mutex
	byDep map[string]map[string]struct{}
	byKey map[string]map[string]struct{}
}

func newWaiters() *waiters {
	return &waiters{byDep: map[string]map[string]struct{}{}, byKey: map[string]map[string]struct{}{}}
}

// add records that the cluster key waits for dep.
func (w *waiters) add(key, dep string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	addTo(w.byDep, dep, key)
	addTo(w.byKey, key, dep)
}

// forget drops everything the cluster key waits for.
func (w *waiters) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for dep := range w.byKey[key] {
		delete(w.byDep[dep], key)
		if len(w.byDep[dep]) == 0 {
			delete(w.byDep, dep)
		}
	}
	delete(w.byKey, key)
}

// of returns the clusters waiting for dep, in a stable order.
func (w *waiters) of(dep string) []relatedresource.Key {
	w.mu.Lock()
	keys := slices.Sorted(maps.Keys(w.byDep[dep]))
	w.mu.Unlock()
	out := make([]relatedresource.Key, 0, len(keys))
	for _, key := range keys {
		out = append(out, relatedresource.NewKey(kv.RSplit(key, "/")))
	}
	return out
}

// recordedEvents remembers the Events already recorded on each cluster, so that a resync or a wake-up that
// finds the same problem again writes nothing: an Event repeats only when its reason or message
// changed, or after the cluster got its FloatingIP and lost it again.
type recordedEvents struct {
	mu   sync.Mutex
	seen map[string]map[string]struct{}
}

func newRecordedEvents() *recordedEvents {
	return &recordedEvents{seen: map[string]map[string]struct{}{}}
}

// isNew reports whether reason and message are new for the cluster key, and remembers them.
func (n *recordedEvents) isNew(key, reason, message string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	note := reason + "\x00" + message
	if _, ok := n.seen[key][note]; ok {
		return false
	}
	addTo(n.seen, key, note)
	return true
}

func (n *recordedEvents) forget(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.seen, key)
}

func addTo(m map[string]map[string]struct{}, key, value string) {
	set, ok := m[key]
	if !ok {
		set = map[string]struct{}{}
		m[key] = set
	}
	set[value] = struct{}{}
}

// Retry times for a cluster whose cloud credential is missing or unusable. No watch can tell when
// a credential arrives or is fixed (the operator may not list or watch Secrets), so the cluster
// reads it again after firstCredentialRetry, doubling up to maxCredentialRetry: a credential that
// arrives with its cluster is found within seconds, and one missing for good costs one GET every
// few minutes.
const (
	firstCredentialRetry = time.Second
	maxCredentialRetry   = 2 * time.Minute
)

// credentialRetries counts, per cluster, the reads of a credential that found it missing or
// unusable since the cluster last got past it.
type credentialRetries struct {
	mu    sync.Mutex
	tries map[string]int
}

func newCredentialRetries() *credentialRetries {
	return &credentialRetries{tries: map[string]int{}}
}

// next counts one more failed read for the cluster key and returns when to read again.
func (r *credentialRetries) next(key string) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.tries[key]
	r.tries[key] = n + 1
	d := firstCredentialRetry
	for ; n > 0 && d < maxCredentialRetry; n-- {
		d *= 2
	}
	return min(d, maxCredentialRetry)
}

func (r *credentialRetries) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.tries, key)
}
