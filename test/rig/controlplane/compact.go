package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// CompactEtcd compacts the environment's etcd up to its current revision, through etcd's JSON
// gateway, as the API server's compactor does every five minutes: a watch that asks to resume
// from an older resourceVersion is then answered 410 Gone by an API server without a watch cache
// (the guests'). Every API server of the environment shares the etcd, and so the compaction.
func (e *Environment) CompactEtcd(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var rng struct {
		Header struct {
			Revision json.Number `json:"revision"`
		} `json:"header"`
	}
	// Any key: the answer's header carries the store's revision.
	if err := e.etcdCall(ctx, "/v3/kv/range", map[string]any{"key": "Lw=="}, &rng); err != nil {
		return 0, err
	}
	rev, err := rng.Header.Revision.Int64()
	if err != nil {
		return 0, fmt.Errorf("etcd's revision %q: %w", rng.Header.Revision, err)
	}
	if err := e.etcdCall(ctx, "/v3/kv/compaction", map[string]any{"revision": rev, "physical": true}, nil); err != nil {
		return 0, err
	}
	return rev, nil
}

// etcdCall posts req to etcd's JSON gateway at path and decodes the answer into out (nil: none).
func (e *Environment) etcdCall(ctx context.Context, path string, req, out any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	u := *e.etcdURL
	u.Path = path
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s answered %s", path, resp.Status)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
