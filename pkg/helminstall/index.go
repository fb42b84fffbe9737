package helminstall

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	yaml "go.yaml.in/yaml/v3"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// A repository's index is the chart source's to write, and Helm's loader (repo.LoadIndexFile)
// holds all of it at once, in three forms (YAML, JSON and typed), expanding YAML aliases into
// each: a 30 MiB index took the operator to 3 GB. The operator reads an index itself, within
// MaxIndexBytes, as a tree of YAML nodes that does not expand aliases, takes only the entries of
// the charts it installs, and refuses an alias among them.
//
// What a parse costs was measured (TestIndexParseMemory, everything allocated with the collector
// off, which bounds what is held at once): 15 bytes per byte of an index shaped like the real one,
// and up to 135 bytes per byte for the costliest shapes found (flow collections of one-letter or
// empty nodes; Helm's loader: 227). The 256 KiB of MaxIndexBytes (kube-vip's index is 18 KiB)
// therefore cost at most 40 MiB, and one index is parsed at a time; what is kept of it is a few
// strings per version of the two charts.

// indexTTL is how long an index read is reused: long enough for both charts of the passes of a
// moment to share one read, short enough that a version just published is found by the next
// fetch (a chart fetched is kept by the installer anyway; a failed read is tried again after
// Limits.FailureTTL).
const indexTTL = 5 * time.Second

// indexCharts are the charts whose entries are read of an index: those the operator installs,
// and the one asked for.
func indexCharts(chart string) []string {
	charts := []string{string(guestchart.Kubevip), string(guestchart.CloudProvider)}
	if !slices.Contains(charts, chart) {
		charts = append(charts, chart)
	}
	return charts
}

// entries returns the entries of rel's chart in the index of its repository, reading it unless a
// read is under way or, without refresh, one ended within indexTTL (a failed one: FailureTTL);
// shared reports a read that was there. ctx bounds the wait and a read this call starts.
func (f *fetcher) entries(ctx context.Context, rel Release, refresh bool) ([]indexEntry, bool, error) {
	raw := strings.TrimSuffix(rel.RepoURL, "/")
	charts := indexCharts(rel.Chart)
	key := strings.Join(append([]string{raw, credentialsKey(rel.Credentials)}, charts...), "\x00")
	r, shared := f.indexes.get(key, indexTTL, refresh, func() (map[string][]indexEntry, error) {
		return f.readIndex(ctx, raw, rel, charts)
	})
	var err error
	select {
	case <-r.done:
		err = r.err
	case <-ctx.Done():
		err = requestError(ctx.Err())
	}
	if err != nil {
		return nil, shared, fmt.Errorf("reading the index of repository %s: %w", redact.URL(raw), err)
	}
	return r.value[rel.Chart], shared, nil
}

// readIndex downloads an index within MaxIndexBytes and parses it in the one parse slot.
func (f *fetcher) readIndex(ctx context.Context, raw string, rel Release, charts []string) (map[string][]indexEntry, error) {
	data, err := f.get(ctx, raw+"/index.yaml", rel.Credentials, f.limits.MaxIndexBytes, rel.scope())
	if errors.Is(err, ErrTooLarge) {
		return nil, fmt.Errorf("it is larger than %d KiB, the most an index may be (kube-vip's is 18 KiB): %w", f.limits.MaxIndexBytes>>10, err)
	}
	if err != nil {
		return nil, err
	}
	select {
	case f.parsing <- struct{}{}:
	case <-ctx.Done():
		return nil, requestError(ctx.Err())
	}
	defer func() { <-f.parsing }()
	return parseIndex(data, charts)
}

// credentialsKey tells credentials apart without keeping them in a key.
func credentialsKey(c *Credentials) string {
	if c == nil {
		return ""
	}
	return guestchart.Digest([]byte(c.Username + "\x00" + c.Password))
}

// indexEntry is what the operator reads of one chart version an index lists.
type indexEntry struct {
	Version string
	URL     string
	Digest  string
}

// parseIndex reads the entries of the named charts from an index, JSON or YAML. An index without
// apiVersion is refused, as Helm refuses it; an entry without a version or a download URL is left
// out, as Helm leaves out an invalid one.
func parseIndex(data []byte, charts []string) (out map[string][]indexEntry, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("the index is malformed: %v", r)
		}
	}()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("the index is not valid YAML: %s", redact.Shorten(err.Error(), 200))
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("the index is not a YAML mapping")
	}
	root := doc.Content[0]
	if v := lookup(root, "apiVersion"); v == nil || v.Kind != yaml.ScalarNode || v.Value == "" {
		return nil, errors.New("the index has no apiVersion")
	}
	entries := lookup(root, "entries")
	out = map[string][]indexEntry{}
	if entries == nil || entries.Kind != yaml.MappingNode {
		return out, nil
	}
	for _, name := range charts {
		list := lookup(entries, name)
		if list == nil {
			continue
		}
		if hasAlias(list) {
			return nil, fmt.Errorf("the index's entries of chart %s use YAML aliases, which the operator does not read", name)
		}
		if list.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("the index's entries of chart %s are not a list", name)
		}
		for _, item := range list.Content {
			if e, ok := readEntry(item); ok {
				out[name] = append(out[name], e)
			}
		}
	}
	return out, nil
}

// lookup is the value of key in mapping m, or nil.
func lookup(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Kind == yaml.ScalarNode && k.Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func hasAlias(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode {
		return true
	}
	for _, c := range n.Content {
		if hasAlias(c) {
			return true
		}
	}
	return false
}

func readEntry(n *yaml.Node) (indexEntry, bool) {
	if n.Kind != yaml.MappingNode {
		return indexEntry{}, false
	}
	scalar := func(key string) string {
		if v := lookup(n, key); v != nil && v.Kind == yaml.ScalarNode {
			return strings.Clone(v.Value)
		}
		return ""
	}
	e := indexEntry{Version: scalar("version"), Digest: scalar("digest")}
	// The first URL is the one downloaded, as Helm downloads it; no other is kept.
	if urls := lookup(n, "urls"); urls != nil && urls.Kind == yaml.SequenceNode && len(urls.Content) > 0 {
		if u := urls.Content[0]; u.Kind == yaml.ScalarNode && u.Value != "" {
			e.URL = strings.Clone(u.Value)
		}
	}
	return e, e.Version != "" && e.URL != ""
}

// pickVersion chooses among the versions a source lists, as Helm chooses among an index's entries
// and a registry's tags: the one written as want, else the highest that satisfies want as a SemVer
// constraint ("" for the newest release).
func pickVersion[T any](listed []T, version func(T) string, want string) (best T, ok bool) {
	if want != "" {
		for _, l := range listed {
			if version(l) == want {
				return l, true
			}
		}
	}
	if want == "" {
		want = "*"
	}
	constraint, err := semver.NewConstraint(want)
	if err != nil {
		return best, false
	}
	var bestVersion *semver.Version
	for _, l := range listed {
		v, err := semver.NewVersion(version(l))
		if err != nil || !constraint.Check(v) {
			continue
		}
		if bestVersion == nil || v.GreaterThan(bestVersion) {
			best, bestVersion = l, v
		}
	}
	return best, bestVersion != nil
}

func (e indexEntry) version() string { return e.Version }
