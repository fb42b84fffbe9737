package helminstall

import (
	"errors"
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
	yaml "go.yaml.in/yaml/v3"

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

// pickVersion chooses among a chart's entries as Helm's IndexFile.Get does: the entry whose version
// is version as written, else the highest that satisfies version as a SemVer constraint ("" for the
// newest release).
func pickVersion(entries []indexEntry, version string) (indexEntry, bool) {
	if version != "" {
		for _, e := range entries {
			if e.Version == version {
				return e, true
			}
		}
	}
	want := version
	if want == "" {
		want = "*"
	}
	constraint, err := semver.NewConstraint(want)
	if err != nil {
		return indexEntry{}, false
	}
	var best indexEntry
	var bestVersion *semver.Version
	for _, e := range entries {
		v, err := semver.NewVersion(e.Version)
		if err != nil || !constraint.Check(v) {
			continue
		}
		if bestVersion == nil || v.GreaterThan(bestVersion) {
			best, bestVersion = e, v
		}
	}
	return best, bestVersion != nil
}
