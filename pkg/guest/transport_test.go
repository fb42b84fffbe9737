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
		client := &http.Client{Transport: withPass(context.Background(), 1024)(http.DefaultTransport)}
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
