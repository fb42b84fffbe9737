package ipam

import (
	"fmt"
	"strings"
	"testing"
)

// FuzzPoolOps runs a decoded sequence of the operations the allocation engine
// performs on a pool — reservations, their confirmation or withdrawal, static
// claims, releases and rebuilds under a new definition — against a map-based
// model and requires the two to agree after every step.
func FuzzPoolOps(f *testing.F) {
	// IPv4 /26: reserve and confirm, give a reservation back, a static claim
	// taken over by a confirmation, both outcomes of a dynamic claim, a
	// rebuild as a /29 with one exclude, then addresses the pool never holds.
	f.Add([]byte{0, 6, 0, 1, 1, 4, 1, 1, 1, 2, 5, 2, 2, 0, 5, 3, 3, 5, 4, 4, 5, 4, 6, 1, 0, 6, 3, 1, 2, 1, 7, 3, 1, 0, 2, 0, 7, 1, 0, 129, 1, 3, 128, 1})
	// IPv6 /126 with one usable address: exhaustion, then rebuilds that grow
	// the range and shrink it under a hold and a reservation.
	f.Add([]byte{1, 2, 1, 1, 1, 2, 1, 0, 1, 1, 6, 1, 1, 5, 3, 0, 6, 0, 0, 7, 4, 0, 1, 2, 7, 1, 0})
	// Rebuilds to invalid definitions leave the pool as it was.
	f.Add([]byte{0, 4, 0, 6, 1, 0, 7, 2, 1, 0, 4, 7, 3, 1, 1, 6, 1, 1, 0})
	// One owner holding several addresses, released out of order.
	f.Add([]byte{0, 5, 0, 0, 10, 1, 0, 20, 1, 0, 3, 1, 1, 1, 2, 20, 1, 1, 2, 3, 1, 1, 2, 10, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		b := fuzzBytes(data)
		v6 := b.next()%2 == 1
		def := decodeDef(&b, v6)
		p, err := NewPool(def.cidr(), def.strs)
		if !def.valid {
			if err == nil {
				t.Fatalf("NewPool(%s, %q) accepted an invalid definition", def.cidr(), def.strs)
			}
			return
		}
		if err != nil {
			t.Fatalf("NewPool(%s, %q): %v", def.cidr(), def.strs, err)
		}
		m := newPoolModel(def)
		compareCheck(t, -1, p, &m.def)
		uid := func(n int) string { return fmt.Sprint("u", n%6) }

		for step := 0; len(b) > 0 && step < 200; step++ {
			switch op := b.next() % 8; op {
			case 0: // a static claim, as when a pool is filled from the allocation objects
				off, who := b.next()%130, uid(b.next())
				want := m.static(off, who)
				err := p.Claim(offAddr(v6, off), owner(who))
				m.requireErr(t, step, fmt.Sprintf("Claim(%v, %s)", offAddr(v6, off), who), off, err, want)
				if want == nil {
					m.held[off] = who
					delete(m.tent, off)
				}
			case 1: // reserve the lowest free address
				who := uid(b.next())
				m.reserveNext(t, step, p, who)
			case 2: // release
				off := b.next() % 130
				o, ok := p.Release(offAddr(v6, off))
				if ok != (m.held[off] != "") || ok && o.UID != m.held[off] {
					t.Fatalf("step %d: Release(%v) = %v, %v; model %q", step, offAddr(v6, off), o, ok, m.held[off])
				}
				delete(m.held, off)
				delete(m.tent, off)
			case 3: // reserve a given address, for a static request
				off, who := b.next()%130, uid(b.next())
				want := m.static(off, who)
				err := p.Reserve(offAddr(v6, off), owner(who))
				m.requireErr(t, step, fmt.Sprintf("Reserve(%v, %s)", offAddr(v6, off), who), off, err, want)
				if want == nil && m.held[off] == "" {
					m.held[off], m.tent[off] = who, true
				}
			case 4: // confirm: the object recording the address has arrived
				off, who := b.next()%130, uid(b.next())
				m.confirm(t, step, p, off, who)
			case 5: // unreserve: the create failed
				off, who := b.next()%130, uid(b.next())
				m.unreserve(t, step, p, off, who)
			case 6: // a whole dynamic claim: reserve, then confirm or, if the create failed, give back
				who, created := uid(b.next()), b.next()%2 == 0
				off, ok := m.reserveNext(t, step, p, who)
				switch {
				case !ok:
				case created:
					m.confirm(t, step, p, off, who)
				default:
					m.unreserve(t, step, p, off, who)
				}
			case 7: // rebuild under a new definition, from the confirmed holds
				nd := decodeDef(&b, v6)
				if np, ok := m.rebuild(t, step, nd); ok {
					p = np
					compareCheck(t, step, p, &m.def)
				}
			}
			m.compare(t, step, p)
		}
	})
}

// FuzzPoolParse feeds arbitrary definitions to NewPool: it must either fail
// cleanly or produce a pool whose basic operations work.
func FuzzPoolParse(f *testing.F) {
	for _, s := range [][2]string{
		{"10.0.0.0/24", ""},
		{"10.0.0.0/24", "10.0.0.5,10.0.0.8/30,10.0.0.20-10.0.0.29"},
		{"10.0.0.5/24", ""},
		{"10.0.0.0/33", ""},
		{"foo", ""},
		{"", ""},
		{"10.0.0.0/24", "10.0.0.9-10.0.0.1"},
		{"10.0.0.0/24", "2001:db8::1"},
		{"10.0.0.0/24", "-"},
		{"10.0.0.0/24", "10.0.0.1-10.0.0.2-10.0.0.3"},
		{"2001:db8::/64", "2001:db8::/96,2001:db8::ffff:0:0:0-2001:db8::ffff:ffff:ffff:ffff"},
		{"::/0", "::/1"},
		{"0.0.0.0/0", "255.255.255.255"},
		{"::ffff:10.0.0.0/120", "::ffff:10.0.0.1"},
		{"fe80::%eth0/64", "fe80::1%eth0"},
		{"10.0.0.0/31", "10.0.0.0/31"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, cidr, excl string) {
		var exclude []string
		if excl != "" {
			exclude = strings.Split(excl, ",")
		}
		p, err := NewPool(cidr, exclude)
		if err != nil {
			if p != nil || err.Error() == "" {
				t.Fatalf("NewPool(%q, %q) = %p, %v", cidr, exclude, p, err)
			}
			return
		}
		if err := checkInvariants(p); err != nil {
			t.Fatal(err)
		}
		// The same definition again gives a pool of the same size that overlaps
		// this one exactly when either can hand anything out.
		again, err := NewPool(cidr, exclude)
		if err != nil || again.Capacity().Cmp(p.Capacity()) != 0 || again.Overlaps(p) != (p.Capacity().Sign() > 0) {
			t.Fatalf("NewPool(%q, %q) again: %v, capacity %v, overlaps %v", cidr, exclude, err, again.Capacity(), again.Overlaps(p))
		}
		if p.Capacity().Sign() > 0 {
			a, err := takeNext(p, owner("x"))
			if err != nil || p.Check(a) != nil || !p.Prefix().Contains(a) {
				t.Fatalf("takeNext = %v, %v", a, err)
			}
			if h, ok := p.Holder(a); !ok || h.UID != "x" || p.Held() != 1 {
				t.Fatalf("after takeNext: Holder(%v) = %v, %v; %d held", a, h, ok, p.Held())
			}
		}
		_ = p.Claim(p.Prefix().Addr(), owner("y"))
		_ = p.Reserve(p.Prefix().Addr().Next(), owner("z"))
		if err := checkInvariants(p); err != nil {
			t.Fatal(err)
		}
		_, _ = NewPool(excl, strings.Split(cidr, ","))
	})
}
