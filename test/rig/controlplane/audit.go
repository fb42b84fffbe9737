package controlplane

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// auditPolicy records the metadata of every request (no bodies), when the API server starts
// answering a watch and when it answered any request: what a count of requests by client, verb,
// resource and answer needs.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

// AuditLog is an API server's own log of the requests it answered (kube-apiserver's audit log, one
// JSON event per line), read from an offset so that a benchmark counts the requests of a window.
type AuditLog struct {
	// Path is the log file.
	Path string
}

// enableAudit has server write its audit log to dir/<name>-audit.log, every request's metadata,
// synchronously (the log backend's blocking mode: an answered request is in the log).
func enableAudit(server *envtest.APIServer, dir, name string) (*AuditLog, error) {
	policy := filepath.Join(dir, name+"-audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	log := &AuditLog{Path: filepath.Join(dir, name+"-audit.log")}
	args := server.Configure()
	args.Set("audit-policy-file", policy)
	args.Set("audit-log-path", log.Path)
	args.Set("audit-log-format", "json")
	args.Set("audit-log-mode", "blocking")
	args.Set("audit-log-maxsize", "0")
	return log, nil
}

// AuditRequest is what the counts and the least-privilege tests read of one audit event.
type AuditRequest struct {
	// AuditID is the request's: each stage's event of one request carries it.
	AuditID   string `json:"auditID"`
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	User      struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef      *AuditObject `json:"objectRef"`
	RequestURI     string       `json:"requestURI"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	// Received is when the API server received the request, At when it logged this stage.
	Received time.Time `json:"requestReceivedTimestamp"`
	At       time.Time `json:"stageTimestamp"`
}

// AuditObject is what a request was for, as the authorizer was asked about it.
type AuditObject struct {
	APIGroup    string `json:"apiGroup"`
	Resource    string `json:"resource"`
	Subresource string `json:"subresource"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
}

// Resource is the request's resource and subresource; both empty for a request on no resource.
func (r AuditRequest) Resource() (resource, subresource string) {
	if r.ObjectRef == nil {
		return "", ""
	}
	return r.ObjectRef.Resource, r.ObjectRef.Subresource
}

// Code is the answer's status code, 0 if the event has none.
func (r AuditRequest) Code() int {
	if r.ResponseStatus == nil {
		return 0
	}
	return r.ResponseStatus.Code
}

// Counted tells whether the event counts one request: a watch when the API server started
// answering it (it ends when the client goes), any other request when it was answered.
func (r AuditRequest) Counted() bool {
	if r.Verb == "watch" {
		return r.Stage == "ResponseStarted"
	}
	return r.Stage == "ResponseComplete" || r.Stage == "Panic"
}

// End is the log's length now: where a window that starts now starts reading.
func (l *AuditLog) End() (int64, error) {
	st, err := os.Stat(l.Path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Since hands every request event logged from offset on, in order, to each, and returns the
// offset after the last whole line read.
func (l *AuditLog) Since(offset int64, each func(AuditRequest)) (int64, error) {
	f, err := os.Open(l.Path)
	if err != nil {
		return offset, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return offset, err
	}
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF {
			// A line still being written is read by the next window.
			return offset, nil
		}
		if err != nil {
			return offset, err
		}
		offset += int64(len(line))
		var ev AuditRequest
		if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &ev); err != nil {
			return offset, fmt.Errorf("%s: an event that is not JSON: %w", l.Path, err)
		}
		each(ev)
	}
}
