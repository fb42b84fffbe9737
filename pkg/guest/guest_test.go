package guest

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// The operations against a real guest API server behind the test cluster proxy are tested in
// test/guestapi.

func TestNewClientRejectsBadKubeconfigWithoutQuotingIt(t *testing.T) {
	t.Parallel()
	secret := "super-secret-token-value"
	_, err := NewClient(nil, Target{Name: "x", ClusterID: "c-m-x", Kubeconfig: []byte("apiVersion: v1\nusers:\n- user: {token: " + secret + "}\n  garbage")}, time.Second)
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("NewClient error = %v; want an error that does not quote the kubeconfig", err)
	}
	if _, err := NewClient(nil, Target{Name: "x", ClusterID: "c-m-x"}, time.Second); !errors.Is(err, ErrNoKubeconfig) {
		t.Errorf("NewClient(nil) = %v, want ErrNoKubeconfig", err)
	}
}
