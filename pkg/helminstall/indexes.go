package helminstall

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// indexTTL is how long an index read is reused: long enough for both charts of the passes of a
// moment to share one read, short enough that a version just published is found by the next
// fetch (a chart fetched is kept by the installer anyway; a failed one is tried again after
// Limits.FailureTTL).
const indexTTL = 5 * time.Second

// indexes reads each repository's index once for every chart fetch of the moment, and parses one
// index at a time, so that however many sources and charts ask at once, only one index is held
// in its parsed form.
type indexes struct {
	mu    sync.Mutex
	reads map[string]*indexRead
	// parsing is the one parse slot.
	parsing chan struct{}
}

// indexRead is one read of an index, or one under way: done closes when it ends.
type indexRead struct {
	done    chan struct{}
	charts  []string
	entries map[string][]indexEntry
	err     error
	ended   time.Time
}

func newIndexes() *indexes {
	return &indexes{reads: map[string]*indexRead{}, parsing: make(chan struct{}, 1)}
}

// indexCharts are the charts whose entries are read of an index: those the operator installs,
// and the one asked for.
func indexCharts(chart string) []string {
	charts := []string{string(installpolicy.Kubevip), string(installpolicy.CloudProvider)}
	if !slices.Contains(charts, chart) {
		charts = append(charts, chart)
	}
	return charts
}

// entries returns the entries of rel's chart in the index of its repository, reading it unless
// fresh is false and a read of the moment is there or under way; shared reports a read that was.
// ctx bounds the wait and a read this call starts.
func (f *fetcher) entries(ctx context.Context, rel Release, fresh bool) (entries []indexEntry, shared bool, err error) {
	raw := strings.TrimSuffix(rel.RepoURL, "/")
	key := raw + "\x00" + credentialsKey(rel.Credentials)
	ix := f.indexes
	ix.mu.Lock()
	r, ok := ix.reads[key]
	if ok && (r.stale(rel.Chart, f.limits.FailureTTL) || (fresh && r.over())) {
		ok = false
	}
	if !ok {
		for k, old := range ix.reads {
			if old.stale("", f.limits.FailureTTL) {
				delete(ix.reads, k)
			}
		}
		r = &indexRead{done: make(chan struct{}), charts: indexCharts(rel.Chart)}
		ix.reads[key] = r
		go func() {
			entries, err := f.readIndex(ctx, raw, rel, r.charts)
			ix.mu.Lock()
			r.entries, r.err, r.ended = entries, err, time.Now()
			ix.mu.Unlock()
			close(r.done)
		}()
	}
	ix.mu.Unlock()
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, ok, fmt.Errorf("reading the index of repository %s: %w", redact.URL(raw), requestError(ctx.Err()))
	}
	if r.err != nil {
		return nil, ok, r.err
	}
	return r.entries[rel.Chart], ok, nil
}

// over reports whether the read has ended.
func (r *indexRead) over() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// stale reports whether an ended read is too old to reuse, or lacks chart; one under way never is.
func (r *indexRead) stale(chart string, failureTTL time.Duration) bool {
	if !r.over() {
		return false
	}
	if chart != "" && !slices.Contains(r.charts, chart) {
		return true
	}
	if r.err != nil {
		return time.Since(r.ended) >= failureTTL
	}
	return time.Since(r.ended) >= indexTTL
}

// readIndex downloads an index within MaxIndexBytes and parses it in the one parse slot.
func (f *fetcher) readIndex(ctx context.Context, raw string, rel Release, charts []string) (map[string][]indexEntry, error) {
	base := redact.URL(raw)
	data, err := f.get(ctx, raw+"/index.yaml", rel.Credentials, f.limits.MaxIndexBytes, rel.scope())
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return nil, fmt.Errorf("reading the index of repository %s: it is larger than %d KiB, the most an index may be (kube-vip's is 18 KiB): %w",
				base, f.limits.MaxIndexBytes>>10, err)
		}
		return nil, fmt.Errorf("reading the index of repository %s: %w", base, err)
	}
	select {
	case f.indexes.parsing <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("reading the index of repository %s: %w", base, requestError(ctx.Err()))
	}
	defer func() { <-f.indexes.parsing }()
	entries, err := parseIndex(data, charts)
	if err != nil {
		return nil, fmt.Errorf("reading the index of repository %s: %w", base, err)
	}
	return entries, nil
}

// credentialsKey tells credentials apart without keeping them in a key.
func credentialsKey(c *Credentials) string {
	if c == nil {
		return ""
	}
	sum := sha256.Sum256([]byte(c.Username + "\x00" + c.Password))
	return hex.EncodeToString(sum[:])
}
