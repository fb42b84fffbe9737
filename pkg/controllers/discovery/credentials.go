package discovery

import (
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// credentialReuse is how long the Harvester cluster id read from a cloud credential serves the
// other clusters of that credential. Clusters are created in batches with one credential (the
// Harvester cluster they run on); sharing the read saves the API server a GET per cluster, a
// third of discovery's requests in a backlog. Credentials are not watched, so a change to one
// was only ever seen by the clusters that passed after it: a few seconds more change nothing.
const credentialReuse = 5 * time.Second

// credentialReads shares the reading of cloud credentials between discovery's workers: one GET at
// a time per credential, its result used for credentialReuse. Only the Harvester cluster id is
// kept, never the Secret: it holds a kubeconfig. Failures are not kept: the next pass reads again.
type credentialReads struct {
	group singleflight.Group
	now   func() time.Time
	mu    sync.Mutex
	ids   map[string]credentialRead
}

type credentialRead struct {
	id string
	at time.Time
}

func newCredentialReads(now func() time.Time) *credentialReads {
	return &credentialReads{now: now, ids: map[string]credentialRead{}}
}

// clusterID returns the Harvester cluster id of credential (namespace/name): the one read within
// credentialReuse, else what read returns, sharing a read in flight with any other worker asking
// for the same credential.
func (c *credentialReads) clusterID(credential string, read func() (string, error)) (string, error) {
	if id, ok := c.recent(credential); ok {
		return id, nil
	}
	v, err, _ := c.group.Do(credential, func() (interface{}, error) {
		id, err := read()
		if err == nil {
			c.keep(credential, id)
		}
		return id, err
	})
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

func (c *credentialReads) recent(credential string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.ids[credential]
	if !ok || c.now().Sub(r.at) >= credentialReuse {
		return "", false
	}
	return r.id, true
}

// keep remembers id for credential and forgets every read older than credentialReuse, so the map
// holds only the credentials of the last few seconds.
func (c *credentialReads) keep(credential, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for k, r := range c.ids {
		if now.Sub(r.at) >= credentialReuse {
			delete(c.ids, k)
		}
	}
	c.ids[credential] = credentialRead{id: id, at: now}
}
