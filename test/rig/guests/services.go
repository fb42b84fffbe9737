package guests

import (
	"bytes"
	"fmt"
	"net/http"
	"net/netip"
	"sync/atomic"
)

// ServicePages is how the proxy answers a guest's list of Services for one cluster: as its API
// server does, or as a hostile guest's does. A guest's owner controls its API server (an
// aggregated API, or the control-plane machines themselves): what it answers is its to choose,
// within what one answer may hold.
type ServicePages int

const (
	// RealServicePages forwards the list to the guest's API server.
	RealServicePages ServicePages = iota
	// HugeServicePages answers every page with one LoadBalancer Service labelled for
	// kube-vip-cloud-provider whose kube-vip.io/loadbalancerIPs annotation names about 350,000
	// distinct addresses, the page 3.9 MiB (within what one answer may hold, strings counted), and
	// one more page to come, for 200 pages.
	HugeServicePages
	// EndlessEmptyPages answers every page with no Service and a new continue token.
	EndlessEmptyPages
)

// hugeServicePages is how many pages HugeServicePages answers before the last.
const hugeServicePages = 200

// serviceLists is what the proxy answers and counts of one cluster's lists of Services.
type serviceLists struct {
	mode atomic.Int32
	// looks are the lists asked for from the start (no continue token), pages all of them.
	looks, pages atomic.Int64
}

// SetServicePages makes the proxy answer cluster id's lists of Services as mode says.
func (p *ClusterProxy) SetServicePages(id string, mode ServicePages) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clusters[id]; ok {
		c.services.mode.Store(int32(mode))
	}
}

// ServiceLists counts the lists of Services of every namespace asked of cluster id: from the start
// (looks), and every page (pages).
func (p *ClusterProxy) ServiceLists(id string) (looks, pages int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clusters[id]; ok {
		return c.services.looks.Load(), c.services.pages.Load()
	}
	return 0, 0
}

// serveServices counts a list of the Services of every namespace and, for a hostile mode,
// answers it; false when the request is another, or is to be forwarded.
func (c *proxied) serveServices(w http.ResponseWriter, r *http.Request, path string) bool {
	if r.Method != http.MethodGet || path != "api/v1/services" || r.URL.Query().Get("watch") == "true" {
		return false
	}
	token := r.URL.Query().Get("continue")
	if token == "" {
		c.services.looks.Add(1)
	}
	page := c.services.pages.Add(1)
	var body []byte
	switch ServicePages(c.services.mode.Load()) {
	case HugeServicePages:
		next := ""
		if page%hugeServicePages != 0 {
			next = fmt.Sprintf("huge-%d", page)
		}
		body = hugeServicePage(page, next)
	case EndlessEmptyPages:
		body = []byte(fmt.Sprintf(`{"kind":"ServiceList","apiVersion":"v1","metadata":{"resourceVersion":"1","continue":"empty-%d"},"items":[]}`, page))
	default:
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
	return true
}

// hugeServicePage is a page of one Service, huge-<page>, whose annotation names distinct addresses
// up to 3.9 MiB of page, with the continue token next ("" for the last page).
func hugeServicePage(page int64, next string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"kind":"ServiceList","apiVersion":"v1","metadata":{"resourceVersion":"1","continue":%q},"items":[{"metadata":{"name":"huge-%d","namespace":"default",`+
		`"labels":{"implementation":"kube-vip"},"annotations":{"kube-vip.io/loadbalancerIPs":"`, next, page)
	tail := `"}},"spec":{"type":"LoadBalancer"}}]}`
	addr := netip.MustParseAddr("10.0.0.1")
	for b.Len()+len(tail)+16 < 39<<20/10 {
		if b.Bytes()[b.Len()-1] != '"' {
			b.WriteByte(',')
		}
		b.WriteString(addr.String())
		addr = addr.Next()
	}
	b.WriteString(tail)
	return b.Bytes()
}
