package helminstall

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubefip/kube-fip-operator/pkg/outbound"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

// fetchSoon asks for rel's chart until the fetch is over.
func fetchSoon(t *testing.T, in *Installer, rel Release) error {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := in.chart(context.Background(), rel)
		if !errors.Is(err, ErrChartPending) || time.Now().After(deadline) {
			return err
		}
	}
}

// TestChartRepositoryUnderAPrivateCA: a repository served under a CA of its own is refused with a
// reason naming the certificate and additionalTrustedCAs, until the installer's network trusts
// that CA; then the chart is fetched.
func TestChartRepositoryUnderAPrivateCA(t *testing.T) {
	c := chartrepo.KubevipChart("0.1.0")
	data, err := chartrepo.Archive(c)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/index.yaml":
			_, _ = w.Write(indexFor("kube-vip", "0.1.0"))
		case "/kube-vip-0.1.0.tgz":
			_, _ = w.Write(data)
		default:
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(srv.Close)
	rel := Release{Chart: "kube-vip", RepoURL: srv.URL, Version: "0.1.0", Plan: planAllowing(t, "0.1.0", data)}

	err = fetchSoon(t, newTestInstaller(t, testLimits()), rel)
	if err == nil || !strings.Contains(err.Error(), "x509: certificate signed by unknown authority") || !strings.Contains(err.Error(), "additionalTrustedCAs") {
		t.Fatalf("the public roots only: %v; want the certificate named, and additionalTrustedCAs", err)
	}
	t.Logf("without the CA: %v", err)

	bundle := filepath.Join(t.TempDir(), "ca-additional.pem")
	if err := os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	network, err := outbound.Load(outbound.Settings{AdditionalCAFile: bundle})
	if err != nil {
		t.Fatal(err)
	}
	in, err := NewInstaller(t.TempDir(), testLimits(), network)
	if err != nil {
		t.Fatal(err)
	}
	if err := fetchSoon(t, in, rel); err != nil {
		t.Fatalf("with the CA: %v", err)
	}
}
