package testenv

import (
	"fmt"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// StartGuestWithServiceCIDRs is StartGuest with the guest API server's service-cluster-ip-range
// set to cidrs, for example "10.0.0.0/24,fd00:10:96::/112": a dual-stack guest, which accepts
// Services of ipFamilyPolicy RequireDualStack and IPv6 ones (a single-stack API server refuses
// them). The environment stops it in Stop.
func (e *Environment) StartGuestWithServiceCIDRs(name, cidrs string) (*Guest, error) {
	if !guestName.MatchString(name) {
		return nil, fmt.Errorf("guest name %q must be a DNS label", name)
	}
	server := &envtest.APIServer{
		Path:    filepath.Join(e.assets, "kube-apiserver"),
		EtcdURL: e.env.ControlPlane.Etcd.URL,
	}
	server.Configure().Set("etcd-prefix", "/guest-"+name)
	server.Configure().Set("service-cluster-ip-range", cidrs)
	if err := server.Start(); err != nil {
		return nil, fmt.Errorf("starting guest API server %s: %w", name, err)
	}
	plane := &envtest.ControlPlane{APIServer: server}
	user, err := plane.AddUser(envtest.User{Name: "guest-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		_ = server.Stop()
		return nil, fmt.Errorf("adding the guest administrator: %w", err)
	}
	g := &Guest{Name: name, Config: user.Config(), plane: plane}
	e.mu.Lock()
	e.guests = append(e.guests, g)
	e.mu.Unlock()
	return g, nil
}
