package installpolicy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	helmchart "helm.sh/helm/v3/pkg/chart"
)

// RenderBudget bounds one render of a chart's templates. A chart's template is code: Go's
// template engine cannot be interrupted, and nothing in it bounds what a template builds (a
// string doubled in a loop reaches gigabytes in a second). The pinned charts render about 6 KiB
// in a few milliseconds.
type RenderBudget struct {
	// Time is how long a render may take, from the start of its process.
	Time time.Duration
	// Output bounds the rendered documents, summed.
	Output int
	// Memory bounds the data of the process a render runs in (its heap): past it, the process
	// fails to allocate and ends.
	Memory int64
	// Parallel is how many renders run at once; others wait for one to end, at most Time.
	Parallel int
}

// DefaultRenderBudget is 10 s, 1 MiB of output, 128 MiB of memory, two renders at once.
func DefaultRenderBudget() RenderBudget {
	return RenderBudget{Time: 10 * time.Second, Output: 1 << 20, Memory: 128 << 20, Parallel: 2}
}

// maxOverrun bounds the charts remembered for overrunning their budget.
const maxOverrun = 64

// renderer renders charts within a budget and remembers every chart that overran it: that chart
// is refused without being rendered again until the operator restarts. In a process of its own
// (command set) a render that overruns is ended, with all it holds. In the operator's process
// (tests, or no command) nothing can end a template: the wait for it ends at the budget and the
// render runs on, holding its slot, and because its chart is never rendered again at most one
// such render runs per chart.
type renderer struct {
	command []string
	budget  RenderBudget
	slots   chan struct{}

	mu      sync.Mutex
	overran map[string]string
	order   []string
}

func newRenderer(command []string, budget RenderBudget) *renderer {
	if budget == (RenderBudget{}) {
		budget = DefaultRenderBudget()
	}
	return &renderer{command: command, budget: budget, slots: make(chan struct{}, max(budget.Parallel, 1)), overran: map[string]string{}}
}

func (r *renderer) String() string {
	if r == nil {
		return "no render budget"
	}
	where := "in the operator's process"
	if len(r.command) > 0 {
		where = "each in a process of its own"
	}
	return fmt.Sprintf("chart renders %s: %s, %d KiB of output, %d MiB of memory, %d at once", where, r.budget.Time,
		r.budget.Output>>10, r.budget.Memory>>20, cap(r.slots))
}

// render renders ch within the budget. digest names the chart's archive when known; the chart is
// remembered by it, or by a digest of its content.
func (r *renderer) render(chart Chart, ch *helmchart.Chart, values map[string]interface{}, rel Release, digest string) ([]rendered, error) {
	if r == nil {
		return renderTemplates(chart, ch, values, rel)
	}
	var request []byte
	if digest == "" || len(r.command) > 0 {
		if len(r.command) > 0 && (!jsonTyped(values) || !jsonTyped(ch.Values)) {
			return nil, fmt.Errorf("the %s chart cannot be rendered: its values do not travel to the render process unchanged", chart)
		}
		var err error
		if request, err = json.Marshal(renderRequest{Chart: chart, Archive: ch, Values: values, Release: rel, Output: r.budget.Output, Memory: r.budget.Memory}); err != nil {
			return nil, fmt.Errorf("the %s chart cannot be rendered: %w", chart, err)
		}
	}
	key := digest
	if key == "" {
		sum := sha256.Sum256(request)
		key = "content sha256:" + hex.EncodeToString(sum[:])
	}
	if why := r.refused(key); why != "" {
		return nil, refuse(ReasonRenderRefused, "", "the %s chart (%s) %s earlier: it is not rendered again until the operator restarts", chart, key, why)
	}
	wait := time.NewTimer(r.budget.Time)
	defer wait.Stop()
	select {
	case r.slots <- struct{}{}:
	case <-wait.C:
		return nil, fmt.Errorf("the %s chart was not rendered: every render slot was busy for %s", chart, r.budget.Time)
	}
	var docs []rendered
	var err error
	var over string
	if len(r.command) > 0 {
		docs, over, err = r.inOwnProcess(chart, request)
		<-r.slots
	} else {
		docs, over, err = r.inThisProcess(chart, ch, values, rel)
	}
	if over != "" {
		r.remember(key, over)
		return nil, refuse(ReasonRenderRefused, "", "the %s chart (%s) %s: it is not rendered again until the operator restarts", chart, key, over)
	}
	return docs, err
}

// inThisProcess renders in a goroutine, which gives its slot back when the render ends, however
// late; the wait for it ends at the budget.
func (r *renderer) inThisProcess(chart Chart, ch *helmchart.Chart, values map[string]interface{}, rel Release) ([]rendered, string, error) {
	type result struct {
		docs []rendered
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

func outputSize(docs []rendered) int {
	n := 0
	for _, d := range docs {
		n += len(d.content)
	}
	return n
}

func (r *renderer) refused(key string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.overran[key]
}

func (r *renderer) remember(key, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.overran[key]; ok {
		return
	}
	if len(r.order) >= maxOverrun {
		delete(r.overran, r.order[0])
		r.order = r.order[1:]
	}
	r.overran[key] = why
	r.order = append(r.order, key)
}
