package guest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestPassTransportBoundsEveryAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/announced" {
			w.Header().Set("Content-Length", "2048")
		}
		_, _ = w.Write([]byte(`"` + strings.Repeat("x", 2046) + `"`))
	}))
	defer srv.Close()
	client := &http.Client{Transport: withPass(nil, 1024, 10)(http.DefaultTransport)}
	for _, path := range []string{"/announced", "/streamed"} {
		resp, err := client.Get(srv.URL + path)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if !errors.Is(err, ErrGuestResponseTooLarge) {
			t.Errorf("%s: %v; want ErrGuestResponseTooLarge", path, err)
		}
	}
	// A string of 2,046 bytes counts 8 values.
	small := &http.Client{Transport: withPass(nil, 4096, 10)(http.DefaultTransport)}
	resp, err := small.Get(srv.URL + "/streamed")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || len(body) != 2048 {
		t.Errorf("an answer within the bound: %d bytes, %v; want all 2048", len(body), err)
	}
}

// TestPassTransportEndsWithThePass: a request still waiting for the guest when the pass ends is
// cut there, whatever its own context; a request after the end is never sent.
func TestPassTransportEndsWithThePass(t *testing.T) {
	arrived := make(chan struct{}, 4)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	pass, end := context.WithCancelCause(context.Background())
	client := &http.Client{Transport: withPass(pass, 1024, 10)(http.DefaultTransport)}
	done := make(chan error, 1)
	go func() {
		resp, err := client.Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-arrived
	passOver := errors.New("pass deadline")
	end(passOver)
	select {
	case err := <-done:
		if !errors.Is(err, passOver) {
			t.Errorf("the request ended with %v; want the pass's end", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request outlived its pass")
	}
	resp, err := client.Get(srv.URL)
	if err == nil {
		resp.Body.Close()
	}
	if !errors.Is(err, passOver) {
		t.Errorf("a request after the pass: %v; want the pass's end", err)
	}
	select {
	case <-arrived:
		t.Error("a request after the pass reached the guest")
	default:
	}
}

// TestPassTransportRefusesRedirects: a guest that answers with a redirect gets an error, and the
// request never goes where it points, whichever redirect status it uses.
func TestPassTransportRefusesRedirects(t *testing.T) {
	elsewhere := make(chan string, 8)
	target := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		elsewhere <- r.Header.Get("Authorization")
	}))
	defer target.Close()
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		guest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+"/api/v1/secrets", code)
		}))
		client := &http.Client{Transport: withPass(context.Background(), 1024, 10)(http.DefaultTransport)}
		req, err := http.NewRequest(http.MethodGet, guest.URL+"/api/v1/namespaces/kube-system/configmaps", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer token-1")
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		if !errors.Is(err, ErrGuestRedirect) {
			t.Errorf("a guest answering %d: %v; want ErrGuestRedirect", code, err)
		}
		guest.Close()
	}
	select {
	case auth := <-elsewhere:
		t.Errorf("a request followed the guest's redirect (Authorization %q)", auth)
	default:
	}
}

// TestPassTransportBoundsValues: an answer is bounded by its JSON values too, counted outside
// strings, since decoded they take far more room than their text, and a string by its bytes, so
// that one huge string does not pass as one value; an answer in another form than JSON is
// refused, but for an error in plain text.
func TestPassTransportBoundsValues(t *testing.T) {
	cases := []struct {
		name, contentType, body string
		status                  int
		want                    error
	}{
		{"a small object", "application/json", `{"a":[1,2],"b":{"c":"{[,,,]}"}}`, 200, nil},
		{"escaped quotes in a string", "application/json; charset=utf-8", `{"a":"\\\",,,,,,,,,,,,,,,"}`, 200, nil},
		{"empty objects", "application/json", `{"a":[` + strings.Repeat(`{},`, 20) + `{}]}`, 200, ErrGuestResponseTooLarge},
		{"nested arrays", "application/json", strings.Repeat("[", 12) + strings.Repeat("]", 12), 200, ErrGuestResponseTooLarge},
		{"a string of nine values' bytes", "application/json", `{"a":"` + strings.Repeat("x", 9*StringValueBytes-1) + `"}`, 200, nil},
		{"a string of eleven values' bytes", "application/json", `{"a":"` + strings.Repeat("x", 11*StringValueBytes) + `"}`, 200, ErrGuestResponseTooLarge},
		{"protobuf", "application/vnd.kubernetes.protobuf", "k8s\x00", 200, ErrGuestResponseNotJSON},
		{"no content type", "", "{}", 200, ErrGuestResponseNotJSON},
		{"an error in plain text", "text/plain; charset=utf-8", "cluster agent disconnected", 500, nil},
		{"an error in protobuf", "application/vnd.kubernetes.protobuf", "k8s\x00", 500, ErrGuestResponseNotJSON},
	}
	for _, c := range cases {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = []string{c.contentType}
			w.WriteHeader(c.status)
			_, _ = w.Write([]byte(c.body))
		}))
		client := &http.Client{Transport: withPass(nil, 4096, 10)(http.DefaultTransport)}
		resp, err := client.Get(srv.URL)
		var body []byte
		if err == nil {
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		srv.Close()
		switch {
		case c.want == nil && (err != nil || string(body) != c.body):
			t.Errorf("%s: %q, %v; want it whole", c.name, body, err)
		case c.want != nil && !errors.Is(err, c.want):
			t.Errorf("%s: %v; want %v", c.name, err, c.want)
		}
	}
}
