package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

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
}

// openWindow starts counting now on logs.
func openWindow(b *testing.B, logs ...*controlplane.AuditLog) *auditWindow {
	w := &auditWindow{logs: logs, from: make([]int64, len(logs))}
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
// the window's start to now.
func (w *auditWindow) take(b *testing.B) map[requestKey]float64 {
	counts := map[requestKey]float64{}
	for i, l := range w.logs {
		next, err := l.Since(w.from[i], func(r controlplane.AuditRequest) {
			if !r.Counted() || !strings.HasPrefix(r.UserAgent, operatorAgent) {
				return
			}
			verb, ok := auditVerbs[r.Verb]
			if !ok {
				verb = strings.ToUpper(r.Verb)
			}
			resource, sub := r.Resource()
			counts[requestKey{verb: verb, resource: resource, subresource: sub, code: strconv.Itoa(r.Code())}]++
		})
		if err != nil {
			b.Fatalf("reading the audit log: %v", err)
		}
		w.from[i] = next
	}
	return counts
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
