package allocation

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig/fakes"
)

// TestProposals: discovery's proposals keep off each other and off dynamic claims, the proposed
// FloatingIP claims its proposal with one create, a proposal another owner took meanwhile is
// replaced by the lowest free address, and withdrawn or lapsed proposals free their address.
func TestProposals(t *testing.T) {
	ctx := context.Background()
	g := engineWithRange(t, "r", "10.0.0.0/28") // .1-.14
	api := fakes.NewAllocations()
	now := time.Now()
	propose := func(n string) netip.Addr {
		t.Helper()
		o := fipOwner(n)
		a, err := g.proposeTo("r", o.Namespace, o.Name, now)
		if err != nil {
			t.Fatalf("proposing to %s: %v", n, err)
		}
		return a
	}
	addr := netip.MustParseAddr

	a, b := propose("a"), propose("b")
	if a != addr("10.0.0.1") || b != addr("10.0.0.2") {
		t.Fatalf("proposals = %v, %v; want 10.0.0.1, 10.0.0.2", a, b)
	}
	if again := propose("a"); again != a {
		t.Fatalf("a second proposal to a = %v, want the first, %v", again, a)
	}
	if got, err := g.claimLoop(ctx, api, "r", who("x"), netip.Addr{}, false); err != nil || got != addr("10.0.0.3") {
		t.Fatalf("dynamic claim beside two proposals = %v, %v; want 10.0.0.3", got, err)
	}

	// a claims its proposal: exactly one create, of the proposed name.
	creates := 0
	beforeCreate(api, func(*v1.FloatingIPAllocation) { creates++ })
	if got, err := g.claimLoop(ctx, api, "r", who("a"), a, true); err != nil || got != a || creates != 1 {
		t.Fatalf("claiming the proposal = %v, %v after %d creates; want %v after 1", got, err, creates, a)
	}
	if g.hasPlaceholder(at(a.String())) {
		t.Error("the claimed proposal is still a placeholder")
	}

	// Another replica gave b's proposal to y, and this process has seen it: b gets the lowest free.
	y := fipOwner("y")
	if _, err := api.Create(newAllocation(v1.AddressSpace{}, b, "r", y)); err != nil {
		t.Fatal(err)
	}
	g.onAdd(stored(api, nameOf(b.String())))
	if got, err := g.claimLoop(ctx, api, "r", who("b"), b, true); err != nil || got != addr("10.0.0.4") {
		t.Fatalf("claiming a proposal y took = %v, %v; want 10.0.0.4", got, err)
	}

	// Taken by a holder not seen yet — perhaps c itself, claimed by another replica: wait for it.
	c := propose("c")
	if _, err := api.Create(newAllocation(v1.AddressSpace{}, c, "r", fipOwner("c"))); err != nil {
		t.Fatal(err)
	}
	if _, err := g.claimLoop(ctx, api, "r", who("c"), c, true); !errors.Is(err, ErrHolderUnknown) {
		t.Fatalf("claiming a proposal an unseen holder took: %v, want ErrHolderUnknown", err)
	}
	g.onAdd(stored(api, nameOf(c.String())))
	if got, err := g.claimLoop(ctx, api, "r", who("c"), c, true); err != nil || got != c {
		t.Fatalf("claiming the proposal another replica claimed for c = %v, %v; want %v", got, err, c)
	}

	// A withdrawn proposal is free again; so is one that lapsed.
	d := propose("d")
	g.withdraw("r", d, proposer(fipOwner("d").Namespace, fipOwner("d").Name))
	if again := propose("e"); again != d {
		t.Fatalf("after withdrawing %v the next proposal = %v", d, again)
	}
	g.expirePlaceholders(now.Add(proposalLifetime - time.Second))
	if _, held := g.poolHolder("r", d); !held {
		t.Fatalf("e's proposal %v lapsed early", d)
	}
	g.expirePlaceholders(now.Add(proposalLifetime))
	if _, held := g.poolHolder("r", d); held {
		t.Fatalf("e's proposal %v did not lapse", d)
	}
}

// proposeTo reserves the lowest free address of rng for the FloatingIP namespace/name, as
// propose does once it has decided to.
func (g *engine) proposeTo(rng, namespace, name string, now time.Time) (netip.Addr, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.proposeLocked(rng, g.ranges[rng], namespace, name, now)
}

// hasPlaceholder reports whether s is held by a placeholder.
func (g *engine) hasPlaceholder(s slot) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.placeholders[s]
	return ok
}
