package guests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// isDiscovery reports whether path, a guest API path without its leading slash, asks for API
// discovery (the API groups, a group's versions or a group version's resources) or an OpenAPI
// document: /api, /api/v1, /apis, /apis/<group>, /apis/<group>/<version>, /openapi/....
func isDiscovery(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch parts[0] {
	case "openapi":
		return true
	case "api":
		return len(parts) <= 2
	case "apis":
		return len(parts) <= 3
	}
	return false
}

// DiscoveryRequests counts the requests for cluster id's API discovery or OpenAPI documents that
// reached the proxy with the cluster's token.
func (p *ClusterProxy) DiscoveryRequests(id string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clusters[id]; ok {
		return c.discovery.Load()
	}
	return 0
}

// floodGroup is the name of the i-th API group of a discovery flood.
func floodGroup(i int) string { return fmt.Sprintf("g%06d.flood.example.com", i) }

// SetDiscoveryFlood makes cluster id's guest list, besides its own API groups, groups more API
// groups of versions versions each, as one whose owner registered that many aggregated APIs
// (APIService objects, which any cluster-owner may create) would. The proxy answers /apis itself,
// in the form of discovery every API server serves (not the aggregated form, which a guest's API
// server need not offer), and each of those group versions with an empty list of resources.
// A real API server holds that many APIServices badly (each is watched and probed); what the
// operator reads is the same.
func (p *ClusterProxy) SetDiscoveryFlood(id string, groups, versions int) error {
	c, kube, err := p.guestClient(id)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := kube.Discovery().RESTClient().Get().AbsPath("/apis").SetHeader("Accept", "application/json").Do(ctx).Raw()
	if err != nil {
		return fmt.Errorf("reading the API groups of guest %s: %w", c.name, err)
	}
	var list metav1.APIGroupList
	if err := json.Unmarshal(raw, &list); err != nil {
		return fmt.Errorf("the API groups of guest %s: %w", c.name, err)
	}
	for i := 0; i < groups; i++ {
		g := metav1.APIGroup{Name: floodGroup(i)}
		for v := versions; v >= 1; v-- {
			g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: fmt.Sprintf("%s/v%d", g.Name, v), Version: fmt.Sprintf("v%d", v)})
		}
		g.PreferredVersion = g.Versions[0]
		list.Groups = append(list.Groups, g)
	}
	list.Kind, list.APIVersion = "APIGroupList", "v1"
	flood, err := json.Marshal(&list)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c.flood = flood
	return nil
}

// serveFlood answers path from the discovery flood, when the cluster has one and path is its.
func (c *proxied) serveFlood(w http.ResponseWriter, path string, flood []byte) bool {
	if flood == nil {
		return false
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) == 1 && parts[0] == "apis":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(flood)
		return true
	case len(parts) == 3 && parts[0] == "apis" && strings.HasSuffix(parts[1], ".flood.example.com"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"%s/%s","resources":[]}`, parts[1], parts[2])
		return true
	}
	return false
}
