package render

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	helmchart "helm.sh/helm/v3/pkg/chart"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
)

// Budget bounds one render of a chart's templates. A chart's template is code: Go's
// template engine cannot be interrupted, and nothing in it bounds what a template builds (a
// string doubled in a loop reaches gigabytes in a second). The pinned charts render about 6 KiB
// in a few milliseconds.
type Budget struct {
	// Time is how long a render may take, from the start of its process.
	Time time.Duration
	// Output bounds the rendered documents, summed.
	Output int
	// Memory bounds what a render may add to the data of the process it runs in (its heap): past
	// it, the process fails to allocate and ends.
	Memory int64
	// Parallel is how many renders run at once; others wait for one to end, at most Time.
	Parallel int
	// Retry is how long a chart whose render overran is refused for the same values before it
	// is rendered again; it doubles at each further overrun, up to maxRetryDoublings times.
	Retry time.Duration
}

// DefaultBudget is 10 s, 1 MiB of output, 128 MiB of memory, two renders at once, and a
// render that overran tried again after a minute (then 2, 4, ... up to 64).
func DefaultBudget() Budget {
	return Budget{Time: 10 * time.Second, Output: 1 << 20, Memory: 128 << 20, Parallel: 2, Retry: time.Minute}
}

const (
	// maxOverrun bounds the renders remembered for overrunning their budget.
	maxOverrun = 64
	// maxRetryDoublings bounds the back-off of a render that overruns again and again.
	maxRetryDoublings = 6
)

// overrun is a render that overran its budget: why, how often in a row, and until when it is
// refused without being rendered.
type overrun struct {
	why     string
	strikes int
	until   time.Time
}

// Renderer renders charts within a budget and remembers every render that overran it, by the
// chart and the values it was given: with those values the chart is refused without a render
// until its back-off ends, and other values render at once. Nothing is refused for good: a chart
// the deployment trusts is never lost to every guest because one render overran, whatever made
// it overrun (values, a loaded machine). In a process of its own (command set) a render that
// overruns is ended, with all it holds. In the operator's process (tests, or no command)
// nothing can end a template: the wait for it ends at the budget and the render runs on, holding
// its slot, so at most Parallel such renders run at once.
type Renderer struct {
	command []string
	budget  Budget
	slots   chan struct{}
	now     func() time.Time

	mu      sync.Mutex
	overran map[string]*overrun
}

// New is a Renderer within budget (zero: DefaultBudget). command, when set, renders every chart
// in a process of its own, started with it (the operator binary and its render-chart command,
// Serve); empty renders in this process.
func New(command []string, budget Budget) *Renderer {
	if budget == (Budget{}) {
		budget = DefaultBudget()
	}
	if budget.Retry <= 0 {
		budget.Retry = DefaultBudget().Retry
	}
	return &Renderer{command: command, budget: budget, slots: make(chan struct{}, max(budget.Parallel, 1)), now: time.Now, overran: map[string]*overrun{}}
}

func (r *Renderer) String() string {
	if r == nil {
		return "no render budget"
	}
	where := "in the operator's process"
	if len(r.command) > 0 {
		where = "each in a process of its own"
	}
	return fmt.Sprintf("chart renders %s: %s, %d KiB of output, %d MiB of memory, %d at once, one that overran tried again after %s",
		where, r.budget.Time, r.budget.Output>>10, r.budget.Memory>>20, cap(r.slots), r.budget.Retry)
}

// Render renders ch with values for rel within the budget. digest names the chart's archive when known; a render
// that overran is remembered by it, or by a digest of the chart's content, and the values.
func (r *Renderer) Render(chart guestchart.Chart, ch *helmchart.Chart, values map[string]interface{}, rel Target, digest string) ([]Doc, error) {
	if r == nil {
		return renderTemplates(chart, ch, values, rel)
	}
	var request []byte
	if digest == "" || len(r.command) > 0 {
		if len(r.command) > 0 && (!travels(values) || !travels(ch.Values)) {
			return nil, fmt.Errorf("the %s chart cannot be rendered: its values do not travel to the render process unchanged", chart)
		}
		var err error
		if request, err = json.Marshal(renderRequest{Chart: chart, Archive: ch, Values: values, Release: rel, Output: r.budget.Output, Memory: r.budget.Memory}); err != nil {
			return nil, fmt.Errorf("the %s chart cannot be rendered: %w", chart, err)
		}
	}
	key := renderKey(digest, request, values)
	if why, until := r.refused(key); why != "" {
		return nil, guestchart.Refuse(guestchart.ReasonRenderRefused, "", "the %s chart (%s) %s earlier: with these values it is rendered again after %s",
			chart, shortKey(digest), why, until.UTC().Format(time.RFC3339))
	}
	wait := time.NewTimer(r.budget.Time)
	defer wait.Stop()
	select {
	case r.slots <- struct{}{}:
	case <-wait.C:
		return nil, fmt.Errorf("the %s chart was not rendered: every render slot was busy for %s", chart, r.budget.Time)
	}
	var docs []Doc
	var err error
	var over string
	if len(r.command) > 0 {
		docs, over, err = r.inOwnProcess(chart, request)
		<-r.slots
	} else {
		docs, over, err = r.inThisProcess(chart, ch, values, rel)
	}
	if over != "" {
		until := r.remember(key, over)
		return nil, guestchart.Refuse(guestchart.ReasonRenderRefused, "", "the %s chart (%s) %s: with these values it is rendered again after %s",
			chart, shortKey(digest), over, until.UTC().Format(time.RFC3339))
	}
	r.forget(key)
	return docs, err
}

// renderKey names one render: the archive's digest (or, without one, the whole request's) and
// the values.
func renderKey(digest string, request []byte, values map[string]interface{}) string {
	if digest == "" {
		return "content " + guestchart.Digest(request)
	}
	data, err := json.Marshal(values)
	if err != nil {
		data = []byte(fmt.Sprintf("%#v", values))
	}
	return digest + " values " + guestchart.Digest(data)
}

// shortKey names the chart in a message: its archive's digest, or its content.
func shortKey(digest string) string {
	if digest == "" {
		return "as loaded"
	}
	return digest
}

// inThisProcess renders in a goroutine, which gives its slot back when the render ends, however
// late; the wait for it ends at the budget.
func (r *Renderer) inThisProcess(chart guestchart.Chart, ch *helmchart.Chart, values map[string]interface{}, rel Target) ([]Doc, string, error) {
	type result struct {
		docs []Doc
		err  error
	}
	done := make(chan result, 1)
	go func() {
		defer func() { <-r.slots }()
		docs, err := renderTemplates(chart, ch, values, rel)
		done <- result{docs, err}
	}()
	timer := time.NewTimer(r.budget.Time)
	defer timer.Stop()
	select {
	case res := <-done:
		if n := outputSize(res.docs); n > r.budget.Output {
			return nil, fmt.Sprintf("rendered %d KiB, more than the %d KiB a render may", n>>10, r.budget.Output>>10), nil
		}
		return res.docs, "", res.err
	case <-timer.C:
		return nil, fmt.Sprintf("was still rendering after %s, the time a render may take", r.budget.Time), nil
	}
}

func outputSize(docs []Doc) int {
	n := 0
	for _, d := range docs {
		n += len(d.Content)
	}
	return n
}

// refused says why the render key overran and until when it is refused; "" when it is not.
func (r *Renderer) refused(key string) (string, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.overran[key]
	if !ok || !r.now().Before(o.until) {
		return "", time.Time{}
	}
	return o.why, o.until
}

// remember notes that the render key overran, and says until when it is refused: Retry after
// the first overrun, doubled at each further one in a row.
func (r *Renderer) remember(key, why string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.overran[key]
	if !ok {
		if len(r.overran) >= maxOverrun {
			// The one refused for the shortest time left goes.
			delete(r.overran, slices.MinFunc(slices.Collect(maps.Keys(r.overran)), func(a, b string) int {
				return r.overran[a].until.Compare(r.overran[b].until)
			}))
		}
		o = &overrun{}
		r.overran[key] = o
	}
	o.why = why
	o.until = r.now().Add(r.budget.Retry << min(o.strikes, maxRetryDoublings))
	o.strikes++
	return o.until
}

// forget drops what was remembered of the render key once it renders within the budget.
func (r *Renderer) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.overran, key)
}
