package ipam

import (
	"errors"
	"net/netip"
	"strconv"
	"testing"
)

// TestReserveNextGivesConcurrentWorkersDifferentAddresses: reservations of different owners never
// coincide, a retry of one owner gets its reservation back, and the counts treat reservations as
// held but not confirmed.
func TestReserveNextGivesConcurrentWorkersDifferentAddresses(t *testing.T) {
	t.Parallel()
	p := mustPool(t, "10.0.0.0/29") // 10.0.0.1-10.0.0.6
	seen := map[netip.Addr]string{}
	for i := 0; i < 6; i++ {
		who := "w" + strconv.Itoa(i)
		a, err := p.ReserveNext(owner(who))
		if err != nil {
			t.Fatal(err)
		}
		if prev, ok := seen[a]; ok {
			t.Fatalf("%s reserved %v, already reserved by %s", who, a, prev)
		}
		seen[a] = who
		if again, err := p.ReserveNext(owner(who)); err != nil || again != a {
			t.Fatalf("a retry of %s reserved %v, %v; want %v again", who, again, err, a)
		}
		if !reserved(p, a) {
			t.Errorf("%v is not marked reserved", a)
		}
	}
	if used(p) != 6 || p.Held() != 0 || available(p).Sign() != 0 {
		t.Errorf("used %d held %d available %v; want 6 reserved, 0 confirmed, none available", used(p), p.Held(), available(p))
	}
	if _, err := p.ReserveNext(owner("w6")); !errors.Is(err, ErrExhausted) {
		t.Errorf("a seventh reservation: %v, want ErrExhausted", err)
	}
	if err := checkInvariants(p); err != nil {
		t.Fatal(err)
	}
}

func TestReserve(t *testing.T) {
	t.Parallel()
	p := mustPool(t, "10.0.0.0/24", "10.0.0.9")
	if err := p.Reserve(addr("10.0.0.5"), owner("a")); err != nil {
		t.Fatal(err)
	}
	if err := p.Reserve(addr("10.0.0.5"), owner("a")); err != nil {
		t.Errorf("reserving again: %v", err)
	}
	var taken *TakenError
	if err := p.Reserve(addr("10.0.0.5"), owner("b")); !errors.As(err, &taken) || taken.Holder.UID != "a" {
		t.Errorf("b reserving a's reservation: %v, want a TakenError naming a", err)
	}
	if err := p.Claim(addr("10.0.0.5"), owner("b")); !errors.As(err, &taken) {
		t.Errorf("b claiming a's reservation: %v, want a TakenError", err)
	}
	for text, want := range map[string]error{"10.0.0.9": ErrExcluded, "10.0.0.0": ErrReserved, "10.0.1.1": ErrOutOfRange, "fd00::1": ErrOutOfRange} {
		if err := p.Reserve(addr(text), owner("c")); !errors.Is(err, want) {
			t.Errorf("Reserve(%s) = %v, want %v", text, err, want)
		}
	}
	if err := p.Reserve(addr("10.0.0.6"), Owner{}); !errors.Is(err, errInvalidOwner) {
		t.Errorf("Reserve without UID: %v", err)
	}
	if err := checkInvariants(p); err != nil {
		t.Fatal(err)
	}
}

// TestConfirm: the record of truth wins over any reservation, and over a stale hold.
func TestConfirm(t *testing.T) {
	t.Parallel()
	p := mustPool(t, "fd00:10::/64")
	a, _ := p.ReserveNext(owner("worker"))

	// Another writer's object for the same address arrives first: it displaces the reservation.
	displaced, err := p.Confirm(a, owner("other"))
	if err != nil || displaced.UID != "worker" {
		t.Fatalf("Confirm over a reservation = %v, %v; want worker displaced", displaced, err)
	}
	if h, _ := p.Holder(a); h.UID != "other" || reserved(p, a) || p.Held() != 1 {
		t.Errorf("after Confirm: holder %v reserved %v held %d", h, reserved(p, a), p.Held())
	}
	if _, ok := p.addressOf("worker"); ok {
		t.Error("the displaced worker still holds an address")
	}
	if p.Unreserve(a, owner("worker")) {
		t.Error("the displaced worker could unreserve the confirmed address")
	}

	// The worker's own reservation, confirmed, stays its own and stops being tentative.
	b, _ := p.ReserveNext(owner("worker"))
	if b == a {
		t.Fatalf("ReserveNext gave the confirmed address %v again", a)
	}
	if displaced, err := p.Confirm(b, owner("worker")); err != nil || displaced != (Owner{}) {
		t.Fatalf("confirming one's own reservation = %v, %v", displaced, err)
	}
	if reserved(p, b) || p.Held() != 2 || used(p) != 2 {
		t.Errorf("after confirming: reserved %v held %d used %d", reserved(p, b), p.Held(), used(p))
	}
	if p.Unreserve(b, owner("worker")) {
		t.Error("Unreserve dropped a confirmed hold")
	}
	if _, err := p.Confirm(addr("fd00:11::1"), owner("x")); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("Confirm out of range: %v", err)
	}
	if err := checkInvariants(p); err != nil {
		t.Fatal(err)
	}
}

func TestUnreserve(t *testing.T) {
	t.Parallel()
	p := mustPool(t, "10.0.0.0/30") // 10.0.0.1, 10.0.0.2
	a, _ := p.ReserveNext(owner("a"))
	if p.Unreserve(a, owner("b")) {
		t.Error("b dropped a's reservation")
	}
	if !p.Unreserve(a, owner("a")) {
		t.Fatal("a could not drop its reservation")
	}
	if p.Unreserve(a, owner("a")) {
		t.Error("Unreserve reported a second drop")
	}
	if used(p) != 0 || reserved(p, a) {
		t.Errorf("after Unreserve: used %d reserved %v", used(p), reserved(p, a))
	}
	if next, _ := p.nextFree(); next != a {
		t.Errorf("nextFree = %v, want the dropped %v", next, a)
	}
	// Release of a reserved address drops the reservation too.
	b, _ := p.ReserveNext(owner("b"))
	p.Release(b)
	if reserved(p, b) || p.Held() != 0 {
		t.Errorf("after Release: reserved %v held %d", reserved(p, b), p.Held())
	}
	if err := checkInvariants(p); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkReserveNext reserves in a pool already holding 0 or 20,000 addresses: the cost must not
// grow with the number held.
func BenchmarkReserveNext(b *testing.B) {
	for _, held := range []int{0, 20000} {
		for _, r := range []struct{ name, cidr string }{{"16", "10.0.0.0/16"}, {"64", "2001:db8::/64"}} {
			b.Run(r.name+"/held="+strconv.Itoa(held), func(b *testing.B) {
				p, err := NewPool(r.cidr, nil)
				if err != nil {
					b.Fatal(err)
				}
				for _, o := range benchOwners(held) {
					if _, err := takeNext(p, o); err != nil {
						b.Fatal(err)
					}
				}
				owners := make([]Owner, b.N)
				for i := range owners {
					owners[i] = Owner{Namespace: "bench", Name: "w", UID: "w-" + strconv.Itoa(i)}
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					a, err := p.ReserveNext(owners[i])
					if err != nil {
						b.Fatal(err)
					}
					// Alternate the two outcomes of a claim, confirmed (then released, so the
					// pool stays at the size measured) or given back.
					if i%2 == 0 {
						_, _ = p.Confirm(a, owners[i])
						p.Release(a)
					} else {
						p.Unreserve(a, owners[i])
					}
				}
			})
		}
	}
}
