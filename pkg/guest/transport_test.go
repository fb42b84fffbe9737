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
		if r.URL.Path == "/announced" {
			w.Header().Set("Content-Length", "2048")
		}
		_, _ = w.Write([]byte(strings.Repeat("x", 2048)))
	}))
	defer srv.Close()
	client := &http.Client{Transport: withPass(nil, 1024)(http.DefaultTransport)}
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
	small := &http.Client{Transport: withPass(nil, 4096)(http.DefaultTransport)}
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
	client := &http.Client{Transport: withPass(pass, 1024)(http.DefaultTransport)}
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
