package harvesterview

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubefip/kube-fip-operator/pkg/metrics"
	"github.com/kubefip/kube-fip-operator/pkg/segments"
)

// DefaultInterval is how often each Harvester cluster a range names is read again: a pool or a VM
// address that comes after a range is known within it. A read is a handful of paged lists,
// whatever the number of guests and ranges (see docs/design.md).
const DefaultInterval = 2 * time.Minute

// Reader reads one Harvester cluster: it reaches it, then lists within limits.
type Reader struct {
	Reacher *Reacher
	Limits  segments.Limits
}

// Read reaches the Harvester cluster named display and reads its view; withVMs false leaves out
// its virtual machines, for the webhook, which judges pools only and must answer quickly.
func (r *Reader) Read(ctx context.Context, display string, withVMs bool) (*segments.View, error) {
	get, id, err := r.Reacher.Reach(ctx, display)
	if err != nil {
		return nil, err
	}
	lim := r.Limits
	lim.NoVMs = !withVMs
	return segments.Read(ctx, get, id, lim)
}

// Entry is what the operator knows of one Harvester cluster.
type Entry struct {
	// View is the last read that succeeded, whole or cut short by a limit (View.Limited); nil
	// before any did. A cluster that cannot be read keeps it: its pools are still withheld.
	View *segments.View
	// Err says why the latest read failed; empty when it succeeded.
	Err string
	// At is when the latest read ended.
	At time.Time
}

// Views keeps the last view of every Harvester cluster a range names and reads each again every
// interval. It is a value the controllers share, never a global.
type Views struct {
	reader   *Reader
	interval time.Duration
	metrics  *metrics.Metrics
	// wanted tells whether a range still names the cluster; one no range names is forgotten.
	wanted func(display string) bool
	// changed hear of a cluster whose view or error changed: the one New was given, and those
	// added with OnChange.
	changed []func(display string)

	queue workqueue.TypedDelayingInterface[string]
	mu    sync.Mutex
	known map[string]known
}

// known is an Entry and the fingerprint of its view, which tells a changed view from one read
// again the same.
type known struct {
	Entry
	print [sha256.Size]byte
}

// New returns the views of the clusters reader reaches, read every interval.
func New(reader *Reader, interval time.Duration, m *metrics.Metrics, wanted func(display string) bool, changed func(display string)) *Views {
	if interval <= 0 {
		interval = DefaultInterval
	}
	return &Views{reader: reader, interval: interval, metrics: m, wanted: wanted, changed: []func(string){changed},
		queue: workqueue.NewTypedDelayingQueue[string](), known: map[string]known{}}
}

// OnChange adds fn to what hears of a cluster whose view or error changed; only before Run.
func (v *Views) OnChange(fn func(display string)) { v.changed = append(v.changed, fn) }

// Get returns what is known of the Harvester cluster display; ok is false before its first read
// ended, and the cluster is then read at once.
func (v *Views) Get(display string) (Entry, bool) {
	v.mu.Lock()
	k, ok := v.known[display]
	v.mu.Unlock()
	if !ok && display != "" {
		v.queue.Add(display)
	}
	return k.Entry, ok
}

// Run reads the clusters asked for, a few at once, from a goroutine of its own until ctx ends.
func (v *Views) Run(ctx context.Context) {
	go v.run(ctx, readers)
}

// run reads the clusters asked for with workers readers at once until ctx ends.
func (v *Views) run(ctx context.Context, workers int) {
	go func() {
		<-ctx.Done()
		v.queue.ShutDown()
	}()
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v.next(ctx) {
			}
		}()
	}
	wg.Wait()
}

// next reads one cluster and asks for its next read after the interval; a cluster no range names
// any longer is forgotten instead.
func (v *Views) next(ctx context.Context) bool {
	display, shutdown := v.queue.Get()
	if shutdown {
		return false
	}
	defer v.queue.Done(display)
	if !v.wanted(display) {
		v.mu.Lock()
		delete(v.known, display)
		v.mu.Unlock()
		return true
	}
	v.read(ctx, display)
	v.queue.AddAfter(display, v.interval)
	return true
}

// read reads display once, keeps the result and tells changed when it differs from the last.
func (v *Views) read(ctx context.Context, display string) {
	ctx, cancel := context.WithTimeout(ctx, v.interval)
	defer cancel()
	view, err := v.reader.Read(ctx, display, true)
	v.mu.Lock()
	prev, seen := v.known[display]
	next := known{Entry: Entry{View: prev.View, At: time.Now()}, print: prev.print}
	if err != nil {
		next.Err = err.Error()
	} else {
		next.View, next.print = view, fingerprint(view)
	}
	v.known[display] = next
	v.mu.Unlock()
	v.count(display, view, err)
	if !seen || next.Err != prev.Err || next.print != prev.print {
		if err != nil {
			logrus.Warnf("Harvester cluster %s: %s", display, err)
		}
		for _, fn := range v.changed {
			fn(display)
		}
	}
}

// count adds the read to the metrics: its result, and the requests it made.
func (v *Views) count(display string, view *segments.View, err error) {
	if v.metrics == nil {
		return
	}
	result := "read"
	switch {
	case err != nil:
		result = "failed"
	case view.Limited != "":
		result = "limited"
	}
	v.metrics.HarvesterReads.WithLabelValues(display, result).Inc()
	if view != nil {
		v.metrics.HarvesterRequests.WithLabelValues(display).Add(float64(view.Requests))
	}
}

// fingerprint is a digest of what a range is judged by in view: two reads of an unchanged
// cluster give the same one.
func fingerprint(view *segments.View) [sha256.Size]byte {
	data, _ := json.Marshal(struct {
		N []segments.Network
		C []segments.Claim
		I []segments.Interface
		L string
	}{view.Networks, view.Claims, view.Interfaces, view.Limited})
	return sha256.Sum256(data)
}
