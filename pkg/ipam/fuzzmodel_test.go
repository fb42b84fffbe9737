package ipam

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"strings"
	"testing"
)

// fuzzBytes hands out fuzz input one byte at a time, then zeros, so every
// input decodes to some operation sequence.
type fuzzBytes []byte

func (b *fuzzBytes) next() int {
	if len(*b) == 0 {
		return 0
	}
	v := (*b)[0]
	*b = (*b)[1:]
	return int(v)
}

// modelDef is a pool definition over offsets from a fixed base address:
// 10.1.2.0 or 2001:db8::100, with 0..6 host bits (/26-/32, /122-/128).
type modelDef struct {
	v6       bool
	hostBits int
	excl     map[int]bool
	strs     []string // the excludes as handed to the pool
	valid    bool     // whether the model expects the pool to accept it
}

func (m *modelDef) size() int { return 1 << m.hostBits }

func (m *modelDef) cidr() string {
	return fmt.Sprintf("%s/%d", offAddr(m.v6, 0), offAddr(m.v6, 0).BitLen()-m.hostBits)
}

// offAddr maps an offset to an address. Offsets 0-127 are in the base /25
// (or /121), so ones past size() are out of range but in the same family;
// 128 is the zero Addr and 129 an address of the other family.
func offAddr(v6 bool, off int) netip.Addr {
	switch {
	case off == 128:
		return netip.Addr{}
	case off == 129:
		return offAddr(!v6, 1)
	case v6:
		return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: 1, 15: byte(off)})
	default:
		return netip.AddrFrom4([4]byte{10, 1, 2, byte(off)})
	}
}

func decodeDef(b *fuzzBytes, v6 bool) modelDef {
	m := modelDef{v6: v6, hostBits: b.next() % 7, excl: map[int]bool{}, valid: true}
	size := m.size()
	for n := b.next() % 4; n > 0; n-- {
		switch b.next() % 3 {
		case 0: // single address, sometimes just outside
			off := b.next() % (size + 2)
			m.strs = append(m.strs, offAddr(v6, off).String())
			if off >= size {
				m.valid = false
			}
			m.excl[off] = true
		case 1: // range, sometimes reversed or spilling out
			lo, hi := b.next()%(size+1), b.next()%(size+1)
			m.strs = append(m.strs, offAddr(v6, lo).String()+"-"+offAddr(v6, hi).String())
			if lo > hi || hi >= size {
				m.valid = false
			}
			for o := lo; o <= hi; o++ {
				m.excl[o] = true
			}
		case 2: // aligned CIDR, always valid
			k := b.next() % (m.hostBits + 1)
			start := (b.next() % (size >> k)) << k
			bits := offAddr(v6, 0).BitLen() - k
			m.strs = append(m.strs, fmt.Sprintf("%s/%d", offAddr(v6, start), bits))
			for o := start; o < start+1<<k; o++ {
				m.excl[o] = true
			}
		}
	}
	return m
}

// why mirrors rangeDef.check over offsets.
func (m *modelDef) why(off int) error {
	switch {
	case off >= m.size():
		return ErrOutOfRange
	case m.hostBits >= 2 && (off == 0 || !m.v6 && off == m.size()-1):
		return ErrReserved
	case m.excl[off]:
		return ErrExcluded
	}
	return nil
}

func (m *modelDef) capacity() int {
	n := 0
	for o := range m.size() {
		if m.why(o) == nil {
			n++
		}
	}
	return n
}

// compareModel requires the pool to agree with the model on everything
// observable, and to be internally consistent, after an operation.
func compareModel(t *testing.T, step int, p *Pool, def *modelDef, held map[int]string) {
	t.Helper()
	if err := checkInvariants(p); err != nil {
		t.Fatalf("step %d: %v", step, err)
	}
	var want []string
	for o := 0; o < 128; o++ {
		if held[o] != "" {
			want = append(want, fmt.Sprintf("%v:%s", offAddr(def.v6, o), held[o]))
		}
	}
	var got []string
	for _, a := range p.Allocations() {
		got = append(got, fmt.Sprintf("%v:%s", a.Addr, a.Owner.UID))
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("step %d: allocations %v, model %v", step, got, want)
	}
	if p.Capacity().Cmp(big.NewInt(int64(def.capacity()))) != 0 || p.Used() != len(held) {
		t.Fatalf("step %d: capacity %v used %d, model %d %d", step, p.Capacity(), p.Used(), def.capacity(), len(held))
	}
	lowest := -1
	for o := 0; o < def.size() && lowest < 0; o++ {
		if def.why(o) == nil && held[o] == "" {
			lowest = o
		}
	}
	nf, err := p.NextFree()
	if lowest < 0 && !errors.Is(err, ErrExhausted) || lowest >= 0 && nf != offAddr(def.v6, lowest) {
		t.Fatalf("step %d: NextFree = %v, %v; model offset %d", step, nf, err, lowest)
	}
}

// compareCheck sweeps Check over every offset. It depends only on the
// definition, so it runs when that changes rather than after every step.
func compareCheck(t *testing.T, step int, p *Pool, def *modelDef) {
	t.Helper()
	for o := 0; o < 130; o++ {
		want := def.why(o)
		if o >= 128 {
			want = ErrOutOfRange
		}
		if err := p.Check(offAddr(def.v6, o)); (want == nil) != (err == nil) || !errors.Is(err, want) {
			t.Fatalf("step %d: Check(%v) = %v, model %v", step, offAddr(def.v6, o), err, want)
		}
	}
}

// compareReservations requires the pool to agree with the model on which held addresses are only
// reserved.
func compareReservations(t *testing.T, step int, p *Pool, def *modelDef, held map[int]string, tent map[int]bool) {
	t.Helper()
	for o := 0; o < 128; o++ {
		if got := p.Reserved(offAddr(def.v6, o)); got != tent[o] {
			t.Fatalf("step %d: Reserved(%v) = %v, model %v", step, offAddr(def.v6, o), got, tent[o])
		}
	}
	if p.Held() != len(held)-len(tent) {
		t.Fatalf("step %d: Held() = %d, model %d held of which %d reserved", step, p.Held(), len(held), len(tent))
	}
}
