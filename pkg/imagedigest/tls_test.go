package imagedigest

import (
	"context"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kubefip/kube-fip-operator/pkg/outbound"
)

// TestRegistryUnderAPrivateCA: a registry whose certificate a CA of its own signs is unresolved,
// with a reason that names the certificate and additionalTrustedCAs, until the network trusts
// that CA; then its tag is checked.
func TestRegistryUnderAPrivateCA(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "https://")
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(host + "/kube-vip/kube-vip:v1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img, remote.WithTransport(srv.Client().Transport)); err != nil {
		t.Fatal(err)
	}
	digest, _ := img.Digest()
	image := tag.String() + "@" + digest.String()

	err = New(outbound.Network{}, false, time.Second).Check(context.Background(), image, DockerConfig{})
	var u *Unresolved
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "x509: certificate signed by unknown authority") ||
		!strings.Contains(err.Error(), "add that CA to additionalTrustedCAs") {
		t.Fatalf("the public roots only: %v; want Unresolved naming the certificate and additionalTrustedCAs", err)
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
	if err := New(network, false, time.Second).Check(context.Background(), image, DockerConfig{}); err != nil {
		t.Fatalf("with the CA: %v", err)
	}
}
