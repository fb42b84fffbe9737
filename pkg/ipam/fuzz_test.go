package ipam

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

// FuzzPoolOps runs a decoded sequence of operations against a Pool and a
// map-based model and requires them to agree after every step.
func FuzzPoolOps(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 1, 1, 1, 2, 1, 3, 2, 0, 1, 4})
	f.Add([]byte{0, 2, 0, 0, 5, 1, 1, 1, 1, 1, 2, 1, 3, 1, 4, 2, 2, 1, 5})
	f.Add([]byte{1, 6, 2, 2, 3, 4, 1, 1, 9, 0, 7, 1, 0, 7, 2, 1, 1, 1, 1, 4, 3, 0, 4, 2, 1, 1})
	f.Add([]byte{0, 6, 3, 0, 10, 1, 3, 8, 2, 2, 0, 0, 40, 1, 1, 1, 1, 1, 2, 4, 3, 0, 3, 1, 4, 5, 0, 2, 3})
	f.Add([]byte{1, 1, 0, 1, 0, 1, 1, 1, 2, 4, 0, 0, 1, 129, 0, 128, 0, 99, 3})
	f.Add([]byte("\x00\x06\x01\x01\x05\x02\x01\x01\x01\x02\x01\x03\x02\x03\x04\x03\x00\x00\x00\x01\x00\x05"))
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
		compareCheck(t, -1, p, &def)
		held := map[int]string{}
		tent := map[int]bool{} // offsets of held that are only reserved
		uid := func(n int) string { return fmt.Sprint("u", n%6) }

		for step := 0; len(b) > 0 && step < 200; step++ {
			op := b.next() % 9
			switch op {
			case 0: // claim
				off, who := b.next()%130, uid(b.next())
				err := p.Claim(offAddr(v6, off), owner(who))
				var want error
				switch {
				case off >= 128:
					want = ErrOutOfRange
				case def.why(off) != nil:
					want = def.why(off)
				case held[off] != "" && held[off] != who:
					want = ErrTaken
				}
				if want == nil {
					held[off] = who
					delete(tent, off)
				}
				if (want == nil) != (err == nil) || !errors.Is(err, want) {
					t.Fatalf("step %d: Claim(%v, %s) = %v, want %v", step, offAddr(v6, off), who, err, want)
				}
				var te *TakenError
				if errors.As(err, &te) && te.Holder.UID != held[off] {
					t.Fatalf("step %d: TakenError holder %v, model %s", step, te.Holder, held[off])
				}
			case 1, 5: // allocate, or reserve the next
				who := uid(b.next())
				allocate := p.AllocateNext
				if op == 5 {
					allocate = p.ReserveNext
				}
				a, err := allocate(owner(who))
				reused := false
				want := -1
				for o := 0; o < def.size() && want < 0; o++ {
					if held[o] == who {
						want, reused = o, true
					}
				}
				for o := 0; o < def.size() && want < 0; o++ {
					if def.why(o) == nil && held[o] == "" {
						want = o
					}
				}
				if want < 0 {
					if !errors.Is(err, ErrExhausted) {
						t.Fatalf("step %d: AllocateNext(%s) = %v, %v; want ErrExhausted", step, who, a, err)
					}
					break
				}
				if err != nil || a != offAddr(v6, want) {
					t.Fatalf("step %d: op %d for %s = %v, %v; want %v", step, op, who, a, err, offAddr(v6, want))
				}
				held[want] = who
				if op == 5 && !reused {
					tent[want] = true
				}
			case 2: // release
				off := b.next() % 130
				o, ok := p.Release(offAddr(v6, off))
				if ok != (off < 128 && held[off] != "") || ok && o.UID != held[off] {
					t.Fatalf("step %d: Release(%v) = %v, %v; model %q", step, offAddr(v6, off), o, ok, held[off])
				}
				if off < 128 {
					delete(held, off)
					delete(tent, off)
				}
			case 3: // release owner
				who := uid(b.next())
				var want []netip.Addr
				for o := 0; o < 128; o++ {
					if held[o] == who {
						want = append(want, offAddr(v6, o))
						delete(held, o)
						delete(tent, o)
					}
				}
				if got := p.ReleaseOwner(who); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("step %d: ReleaseOwner(%s) = %v, want %v", step, who, got, want)
				}
			case 4: // resize
				nd := decodeDef(&b, v6)
				orphans, err := p.Resize(nd.cidr(), nd.strs)
				if !nd.valid {
					if err == nil || errors.Is(err, ErrWouldOrphan) {
						t.Fatalf("step %d: Resize(%s, %q) = %v, want a parse error", step, nd.cidr(), nd.strs, err)
					}
					break
				}
				var want []string
				for o := 0; o < 128; o++ {
					if held[o] != "" && nd.why(o) != nil {
						want = append(want, fmt.Sprintf("%v:%s", offAddr(v6, o), held[o]))
					}
				}
				var got []string
				for _, a := range orphans {
					got = append(got, fmt.Sprintf("%v:%s", a.Addr, a.Owner.UID))
				}
				if strings.Join(got, ",") != strings.Join(want, ",") || (len(want) > 0) != errors.Is(err, ErrWouldOrphan) {
					t.Fatalf("step %d: Resize(%s, %q) = %v, %v; want orphans %v", step, nd.cidr(), nd.strs, got, err, want)
				}
				if len(want) == 0 {
					if err != nil {
						t.Fatalf("step %d: Resize: %v", step, err)
					}
					def = nd
				}
				if err == nil || errors.Is(err, ErrWouldOrphan) {
					compareCheck(t, step, p, &def)
				}
			case 6: // reserve a given address
				off, who := b.next()%130, uid(b.next())
				err := p.Reserve(offAddr(v6, off), owner(who))
				var want error
				switch {
				case off >= 128:
					want = ErrOutOfRange
				case def.why(off) != nil:
					want = def.why(off)
				case held[off] != "" && held[off] != who:
					want = ErrTaken
				}
				if want == nil && held[off] == "" {
					held[off], tent[off] = who, true
				}
				if (want == nil) != (err == nil) || !errors.Is(err, want) {
					t.Fatalf("step %d: Reserve(%v, %s) = %v, want %v", step, offAddr(v6, off), who, err, want)
				}
			case 7: // confirm
				off, who := b.next()%130, uid(b.next())
				displaced, err := p.Confirm(offAddr(v6, off), owner(who))
				var want error
				switch {
				case off >= 128:
					want = ErrOutOfRange
				case def.why(off) != nil:
					want = def.why(off)
				}
				if (want == nil) != (err == nil) || !errors.Is(err, want) {
					t.Fatalf("step %d: Confirm(%v, %s) = %v, want %v", step, offAddr(v6, off), who, err, want)
				}
				if want != nil {
					break
				}
				wantDisplaced := ""
				if held[off] != who {
					wantDisplaced = held[off]
				}
				if displaced.UID != wantDisplaced {
					t.Fatalf("step %d: Confirm(%v, %s) displaced %q, model %q", step, offAddr(v6, off), who, displaced.UID, wantDisplaced)
				}
				held[off] = who
				delete(tent, off)
			case 8: // unreserve
				off, who := b.next()%130, uid(b.next())
				ok := p.Unreserve(offAddr(v6, off), owner(who))
				want := off < 128 && tent[off] && held[off] == who
				if ok != want {
					t.Fatalf("step %d: Unreserve(%v, %s) = %v, model %v", step, offAddr(v6, off), who, ok, want)
				}
				if want {
					delete(held, off)
					delete(tent, off)
				}
			}
			compareModel(t, step, p, &def, held)
			compareReservations(t, step, p, &def, held, tent)
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
				t.Fatalf("NewPool(%q, %q) = %v, %v", cidr, exclude, p, err)
			}
			return
		}
		if err := checkInvariants(p); err != nil {
			t.Fatal(err)
		}
		if p.Capacity().Sign() > 0 {
			a, err := p.AllocateNext(owner("x"))
			if err != nil || p.Check(a) != nil || !p.Prefix().Contains(a) {
				t.Fatalf("AllocateNext = %v, %v", a, err)
			}
		}
		_ = p.Claim(p.Prefix().Addr(), owner("y"))
		if orphans, err := p.Resize(cidr, exclude); err != nil {
			t.Fatalf("Resize to the same definition: %v %v", orphans, err)
		}
		_, _ = p.Resize(excl, strings.Split(cidr, ","))
		if err := checkInvariants(p); err != nil {
			t.Fatal(err)
		}
		_ = p.String()
	})
}
