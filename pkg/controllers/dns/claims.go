package dns

import (
	"slices"
	"sync"
)

// holder is a FloatingIP that has a DNS name: its key (namespace/name), its guest cluster (the
// namespace, which is its management cluster's name) and the record type it publishes there.
type holder struct {
	key, cluster, recordType string
}

// claims is who has which name, as this process gave them out: one guest cluster per name, and
// one FloatingIP per name and record type (a dual-stack cluster's two FloatingIPs share the name,
// one A, one AAAA). Names already published when the process started are read from the
// DNSEndpoints (the handler's published), so that a restart hands no name to another holder.
// The zero value is ready to use.
type claims struct {
	mu     sync.Mutex
	byName map[string][]holder
	byKey  map[string][]string
	// refused are the FloatingIPs refused a name, by name: woken when it is let go.
	refused map[string][]string
}

// take gives h the names, unless a name is another holder's by claims or by published, which
// says who publishes a name now. It returns the holder in the way, and the name, when there is
// one (h then keeps none of its earlier names either), and the FloatingIPs refused a name h let go.
func (c *claims) take(h holder, names []string, published func(name string) []holder) (*holder, string, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	wake := c.releaseLocked(h.key)
	for _, n := range names {
		others := append(c.byName[n][:len(c.byName[n]):len(c.byName[n])], published(n)...)
		for _, o := range others {
			if o.key != h.key && (o.cluster != h.cluster || o.recordType == h.recordType) {
				if c.refused == nil {
					c.refused = map[string][]string{}
				}
				if !slices.Contains(c.refused[n], h.key) {
					c.refused[n] = append(c.refused[n], h.key)
				}
				return &o, n, wake
			}
		}
	}
	if c.byName == nil {
		c.byName, c.byKey = map[string][]holder{}, map[string][]string{}
	}
	for _, n := range names {
		c.byName[n] = append(c.byName[n], h)
	}
	c.byKey[h.key] = names
	return nil, "", wake
}

// release takes every name of the FloatingIP key back, and returns the FloatingIPs refused one
// of them, to be looked at again.
func (c *claims) release(key string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.releaseLocked(key)
}

func (c *claims) releaseLocked(key string) []string {
	var wake []string
	for _, n := range c.byKey[key] {
		wake = append(wake, c.refused[n]...)
		delete(c.refused, n)
		kept := c.byName[n][:0]
		for _, h := range c.byName[n] {
			if h.key != key {
				kept = append(kept, h)
			}
		}
		if len(kept) == 0 {
			delete(c.byName, n)
		} else {
			c.byName[n] = kept
		}
	}
	delete(c.byKey, key)
	return wake
}

// refusedFor returns the FloatingIPs refused one of names, to be looked at again: a DNSEndpoint
// that published them is gone.
func (c *claims) refusedFor(names []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, n := range names {
		out = append(out, c.refused[n]...)
	}
	return out
}
