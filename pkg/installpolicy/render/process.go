package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	helmchart "helm.sh/helm/v3/pkg/chart"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
)

// renderRequest is what the render process is given. The chart travels as Helm stores it in a
// release record (JSON), and the values as JSON too: both are JSON-typed (Helm's loader and the
// values schema make them so), which travels checks, so nothing changes on the way.
type renderRequest struct {
	Chart   guestchart.Chart       `json:"chart"`
	Archive *helmchart.Chart       `json:"archive"`
	Values  map[string]interface{} `json:"values"`
	Release Target                 `json:"release"`
	Output  int                    `json:"output"`
	Memory  int64                  `json:"memory"`
}

// renderResponse is what it answers: the documents, or why there are none.
type renderResponse struct {
	Docs []Doc `json:"docs,omitempty"`
	// Refusal is the render's refusal; TemplateError the engine's message of a failed template
	// (shown only as TemplateError shows it); Error anything else.
	Refusal       *guestchart.Refusal `json:"refusal,omitempty"`
	TemplateError string              `json:"templateError,omitempty"`
	Error         string              `json:"error,omitempty"`
	// Overran says how the render overran the output budget.
	Overran string `json:"overran,omitempty"`
}

// maxRenderRequest bounds what the render process reads: a chart within the archive bounds, as
// JSON, and its values.
const maxRenderRequest = 8 << 20

// inOwnProcess renders request in a process of its own within the budget. It returns the
// documents, or how the render overran the budget, or an error.
func (r *Renderer) inOwnProcess(chart guestchart.Chart, request []byte) ([]Doc, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.budget.Time)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.command[0], r.command[1:]...)
	// Nothing of the operator's environment: the render needs none of it.
	cmd.Env = []string{}
	cmd.Stdin = bytes.NewReader(request)
	// JSON escapes a byte of output into at most six.
	stdout := &cappedBuffer{max: 6*r.budget.Output + 64<<10}
	stderr := &cappedBuffer{max: 8 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	peak := peakMiB(cmd.ProcessState)
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Sprintf("was still rendering after %s, the time a render may take (its process, at %d MiB, was ended)",
			r.budget.Time, peak), nil
	case err != nil && outOfMemory(stderr.String()):
		return nil, fmt.Sprintf("needed more than the %d MiB of memory a render may have (its process ended at %d MiB)", r.budget.Memory>>20, peak), nil
	case stdout.over:
		return nil, fmt.Sprintf("rendered more than the %d KiB a render may", r.budget.Output>>10), nil
	case err != nil:
		// Its first line says why (a Go runtime's fatal error); the rest is a stack dump.
		why, _, _ := strings.Cut(stderr.String(), "\n")
		return nil, "", fmt.Errorf("the render process of the %s chart failed: %v: %.200q", chart, err, why)
	}
	var resp renderResponse
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil {
		return nil, "", fmt.Errorf("the render process of the %s chart answered something unreadable: %v", chart, err)
	}
	switch {
	case resp.Overran != "":
		return nil, resp.Overran, nil
	case resp.Refusal != nil:
		return nil, "", resp.Refusal
	case resp.TemplateError != "":
		return nil, "", &TemplateError{Err: errors.New(resp.TemplateError)}
	case resp.Error != "":
		return nil, "", errors.New(resp.Error)
	}
	return resp.Docs, "", nil
}

// outOfMemory reports whether a render process's last words say it ran out of the data its limit
// allows: an allocation that failed, or, in a build with cgo, a thread whose stack could not be
// mapped any more (glibc's pthread_create fails with EAGAIN when the limit is reached).
func outOfMemory(stderr string) bool {
	return slices.ContainsFunc([]string{"out of memory", "cannot allocate memory", "pthread_create failed", "failed to create new OS thread"},
		func(words string) bool { return strings.Contains(stderr, words) })
}

// peakMiB is the most memory the ended process held.
func peakMiB(state *os.ProcessState) int64 {
	if state == nil {
		return 0
	}
	if u, ok := state.SysUsage().(*syscall.Rusage); ok {
		return u.Maxrss >> 10 // KiB on Linux
	}
	return 0
}

// cappedBuffer keeps at most max bytes and notes that more came.
type cappedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		b.over = true
		return 0, errors.New("too much output")
	}
	return b.Buffer.Write(p)
}

// Serve is the render process (the operator's render-chart command): it reads one
// renderRequest from in, limits its own memory to the request's budget, renders, and writes the
// renderResponse to out.
func Serve(in io.Reader, out io.Writer) error {
	data, err := io.ReadAll(io.LimitReader(in, maxRenderRequest+1))
	if err != nil {
		return fmt.Errorf("reading the render request: %w", err)
	}
	if len(data) > maxRenderRequest {
		return fmt.Errorf("the render request is larger than %d MiB", maxRenderRequest>>20)
	}
	var req renderRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return fmt.Errorf("reading the render request: %w", err)
	}
	if req.Memory <= 0 || req.Output <= 0 || req.Archive == nil {
		return errors.New("the render request has no budget or no chart")
	}
	limit, err := dataLimit(req.Memory)
	if err != nil {
		return fmt.Errorf("limiting the render's memory: %w", err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: uint64(limit), Max: uint64(limit)}); err != nil {
		return fmt.Errorf("limiting the render's memory: %w", err)
	}
	// The collector works harder as the limit nears, so that a render that fits is not ended by
	// garbage.
	debug.SetMemoryLimit(req.Memory / 2)
	var resp renderResponse
	docs, err := renderTemplates(req.Chart, req.Archive, req.Values, req.Release)
	var refusal *guestchart.Refusal
	var template *TemplateError
	switch {
	case errors.As(err, &refusal):
		resp.Refusal = refusal
	case errors.As(err, &template):
		resp.TemplateError = template.Err.Error()
	case err != nil:
		resp.Error = err.Error()
	case outputSize(docs) > req.Output:
		resp.Overran = fmt.Sprintf("rendered %d KiB, more than the %d KiB a render may", outputSize(docs)>>10, req.Output>>10)
	default:
		resp.Docs = docs
	}
	return json.NewEncoder(out).Encode(resp)
}

// travels reports whether v reaches the render process unchanged: JSON gives it back as it is.
func travels(v map[string]interface{}) bool {
	data, err := json.Marshal(v)
	var back map[string]interface{}
	return err == nil && json.Unmarshal(data, &back) == nil && reflect.DeepEqual(v, back)
}
