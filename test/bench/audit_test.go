package bench

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubefip/kube-fip-operator/pkg/version"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
)

// auditWindow counts the requests the operator made of API servers from a moment on, from the
// API servers' own audit logs: each request once, by verb (as apiserver_request_total names them),
// resource, subresource and answer code. The operator is told apart by its user agent
// (version.UserAgent), which its clients of the management cluster and of the guests send; the
// benchmark's own requests and the API server's internal ones are not counted.
type auditWindow struct {
	logs []*controlplane.AuditLog
	from []int64
	// open are the watch requests whose start the window has seen and whose end it has not, by
	// audit ID: a watch opened before a take is still open in the next.
	open map[string]openWatch
}

// openWatch is one watch request the API server is answering.
type openWatch struct {
	key     requestKey
	opened  time.Time
	timeout time.Duration
}

// openWindow starts counting now on logs.
func openWindow(b *testing.B, logs ...*controlplane.AuditLog) *auditWindow {
	w := &auditWindow{logs: logs, from: make([]int64, len(logs)), open: map[string]openWatch{}}
	for i, l := range logs {
		if l == nil {
			b.Fatal("the benchmarks' control plane keeps no audit log")
		}
		end, err := l.End()
		if err != nil {
			b.Fatalf("reading the audit log: %v", err)
		}
		w.from[i] = end
	}
	return w
}

// operatorAgent is how every request of the operator's names its client.
var operatorAgent = strings.SplitN(version.UserAgent(), "/", 2)[0] + "/"

// auditVerbs are the audit log's verbs as apiserver_request_total and the tables name them.
var auditVerbs = map[string]string{"get": "GET", "list": "LIST", "watch": "WATCH", "create": "POST",
	"update": "PUT", "patch": "PATCH", "delete": "DELETE", "deletecollection": "DELETECOLLECTION"}

// take counts the operator's requests logged since the window opened (or last took), and moves
// the window's start to now. A watch counts once, when the API server starts answering it.
func (w *auditWindow) take(b *testing.B) map[requestKey]float64 {
	return w.count(b, time.Time{}, time.Time{})
}

// takeIdle is take for a window that ran from from to to, in which a long-running request, a
// watch asking for timeoutSeconds, counts its share: the time it was open within the window over
// the time it was open (for one still open, the time it asked for). A watch renewed every T then
// counts one request every T, whether the window saw it start or not (the operator's watches of
// the guests run for tens of minutes, longer than an idle window, and were opened before it), and
// one that ended early counts whole; a watch without timeoutSeconds counts once, at its start.
func (w *auditWindow) takeIdle(b *testing.B, from, to time.Time) map[requestKey]float64 {
	return w.count(b, from, to)
}

// count is take, and takeIdle when from is set.
func (w *auditWindow) count(b *testing.B, from, to time.Time) map[requestKey]float64 {
	counts := map[requestKey]float64{}
	prorate := !from.IsZero()
	// share is the part of one watch request that falls in the window: the time it was open in
	// the window over the time it was open, which for one still open is the time it asked for.
	share := func(ow openWatch, end time.Time, ended bool) float64 {
		life := ow.timeout
		if ended || end.Sub(ow.opened) > life {
			life = end.Sub(ow.opened)
		}
		if end.After(to) {
			end = to
		}
		start := ow.opened
		if start.Before(from) {
			start = from
		}
		return max(end.Sub(start).Seconds(), 0) / max(life.Seconds(), 0.001)
	}
	for i, l := range w.logs {
		next, err := l.Since(w.from[i], func(r controlplane.AuditRequest) {
			if !strings.HasPrefix(r.UserAgent, operatorAgent) {
				return
			}
			verb, ok := auditVerbs[r.Verb]
			if !ok {
				verb = strings.ToUpper(r.Verb)
			}
			resource, sub := r.Resource()
			key := requestKey{verb: verb, resource: resource, subresource: sub, code: strconv.Itoa(r.Code())}
			if timeout := watchTimeout(r); timeout > 0 {
				switch r.Stage {
				case "ResponseStarted":
					w.open[r.AuditID] = openWatch{key: key, opened: r.Received, timeout: timeout}
					if !prorate {
						counts[key]++
					}
				case "ResponseComplete", "Panic":
					if ow, ok := w.open[r.AuditID]; ok && prorate {
						counts[ow.key] += share(ow, r.At, true)
					}
					delete(w.open, r.AuditID)
				}
				return
			}
			if r.Counted() {
				counts[key]++
			}
		})
		if err != nil {
			b.Fatalf("reading the audit log: %v", err)
		}
		w.from[i] = next
	}
	if prorate {
		for _, ow := range w.open {
			counts[ow.key] += share(ow, to, false)
		}
	}
	return counts
}

// watchTimeout is the timeoutSeconds a watch request asked for; 0 for another request, or a watch
// that asked for none.
func watchTimeout(r controlplane.AuditRequest) time.Duration {
	if r.Verb != "watch" {
		return 0
	}
	u, err := url.Parse(r.RequestURI)
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(u.Query().Get("timeoutSeconds"))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// requestTable prints counts divided by per, by verb, resource and code, most first, under title;
// rows under 0.005 are summed into one line. Leases are listed like everything else.
func requestTable(title string, counts map[requestKey]float64, per float64) string {
	type row struct {
		k requestKey
		v float64
	}
	var rows []row
	var total float64
	for k, v := range counts {
		rows = append(rows, row{k, v / per})
		total += v / per
	}
	slices.SortFunc(rows, func(a, b row) int {
		if a.v != b.v {
			if a.v > b.v {
				return -1
			}
			return 1
		}
		return strings.Compare(a.k.String(), b.k.String())
	})
	var out strings.Builder
	fmt.Fprintf(&out, "%s: %.3f in all\n", title, total)
	var rest float64
	var restRows int
	for _, x := range rows {
		if x.v < 0.005 {
			rest += x.v
			restRows++
			continue
		}
		fmt.Fprintf(&out, "  %-7s %-32s %-4s %11.3f\n", x.k.verb, x.k.path(), x.k.code, x.v)
	}
	if restRows > 0 {
		fmt.Fprintf(&out, "  %-7s %-32s %-4s %11.3f\n", "", fmt.Sprintf("(%d rows under 0.005)", restRows), "", rest)
	}
	return out.String()
}
