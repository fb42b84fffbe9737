package ipam

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"
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

// poolModel is what a pool should hold: a map from offset to the UID of its holder.
type poolModel struct {
	def  modelDef
	held map[int]string
	tent map[int]bool // the offsets in held that are only reserved
}

func newPoolModel(def modelDef) *poolModel {
	return &poolModel{def: def, held: map[int]string{}, tent: map[int]bool{}}
}

// takenBy is the failure the model expects when another owner holds the address: a *TakenError
// naming that owner.
type takenBy string

func (u takenBy) Error() string { return "taken by " + string(u) }

// sameErr reports whether err is the failure want stands for: none, or one wrapping want.
func sameErr(err, want error) bool { return (want == nil) == (err == nil) && errors.Is(err, want) }

// static is the failure of a static claim or reservation of off by who, or nil.
func (m *poolModel) static(off int, who string) error {
	if err := m.def.why(off); err != nil {
		return err
	}
	if h := m.held[off]; h != "" && h != who {
		return takenBy(h)
	}
	return nil
}

func (m *poolModel) requireErr(t *testing.T, step int, call string, off int, err, want error) {
	t.Helper()
	holder, taken := want.(takenBy) //nolint:errorlint // want is the model's own answer, never wrapped
	if !taken && sameErr(err, want) {
		return
	}
	var te *TakenError
	if taken && errors.As(err, &te) && te.Holder.UID == string(holder) && te.Addr == offAddr(m.def.v6, off) {
		return
	}
	t.Fatalf("step %d: %s = %v, model %v", step, call, err, want)
}

// lowestOf is the lowest offset who holds, or -1.
func (m *poolModel) lowestOf(who string) int {
	for o := 0; o < m.def.size(); o++ {
		if m.held[o] == who {
			return o
		}
	}
	return -1
}

// lowestFree is the lowest offset the pool may hand out and nobody holds, or -1.
func (m *poolModel) lowestFree() int {
	for o := 0; o < m.def.size(); o++ {
		if m.def.why(o) == nil && m.held[o] == "" {
			return o
		}
	}
	return -1
}

// reserveNext runs ReserveNext for who and returns the offset it must have reserved, or false
// when the pool must be exhausted.
func (m *poolModel) reserveNext(t *testing.T, step int, p *Pool, who string) (int, bool) {
	t.Helper()
	a, err := p.ReserveNext(owner(who))
	want, reused := m.lowestOf(who), true
	if want < 0 {
		want, reused = m.lowestFree(), false
	}
	if want < 0 {
		if !errors.Is(err, ErrExhausted) {
			t.Fatalf("step %d: ReserveNext(%s) = %v, %v; want ErrExhausted", step, who, a, err)
		}
		return 0, false
	}
	if err != nil || a != offAddr(m.def.v6, want) {
		t.Fatalf("step %d: ReserveNext(%s) = %v, %v; want %v", step, who, a, err, offAddr(m.def.v6, want))
	}
	if !reused {
		m.held[want], m.tent[want] = who, true
	}
	return want, true
}

// confirm runs Confirm: whoever held off before under another UID is displaced.
func (m *poolModel) confirm(t *testing.T, step int, p *Pool, off int, who string) {
	t.Helper()
	displaced, err := p.Confirm(offAddr(m.def.v6, off), owner(who))
	want := m.def.why(off)
	m.requireErr(t, step, fmt.Sprintf("Confirm(%v, %s)", offAddr(m.def.v6, off), who), off, err, want)
	if want != nil {
		return
	}
	wantDisplaced := ""
	if m.held[off] != who {
		wantDisplaced = m.held[off]
	}
	if displaced.UID != wantDisplaced {
		t.Fatalf("step %d: Confirm(%v, %s) displaced %q, model %q", step, offAddr(m.def.v6, off), who, displaced.UID, wantDisplaced)
	}
	m.held[off] = who
	delete(m.tent, off)
}

// unreserve runs Unreserve: only who's own reservation goes.
func (m *poolModel) unreserve(t *testing.T, step int, p *Pool, off int, who string) {
	t.Helper()
	ok := p.Unreserve(offAddr(m.def.v6, off), owner(who))
	want := m.tent[off] && m.held[off] == who
	if ok != want {
		t.Fatalf("step %d: Unreserve(%v, %s) = %v, model %v", step, offAddr(m.def.v6, off), who, ok, want)
	}
	if want {
		delete(m.held, off)
		delete(m.tent, off)
	}
}

// rebuild does what the allocation engine does when a range's definition changes: a new pool,
// filled with Claim from the confirmed holds. Those the new definition cannot hold are refused and
// reservations are not carried over. An invalid definition must be refused, and then the caller
// keeps the old pool.
func (m *poolModel) rebuild(t *testing.T, step int, nd modelDef) (*Pool, bool) {
	t.Helper()
	p, err := NewPool(nd.cidr(), nd.strs)
	if !nd.valid {
		if err == nil {
			t.Fatalf("step %d: NewPool(%s, %q) accepted an invalid definition", step, nd.cidr(), nd.strs)
		}
		return nil, false
	}
	if err != nil {
		t.Fatalf("step %d: NewPool(%s, %q): %v", step, nd.cidr(), nd.strs, err)
	}
	held := map[int]string{}
	for o := 0; o < m.def.size(); o++ {
		who := m.held[o]
		if who == "" || m.tent[o] {
			continue
		}
		want := nd.why(o)
		if err := p.Claim(offAddr(nd.v6, o), owner(who)); !sameErr(err, want) {
			t.Fatalf("step %d: Claim(%v, %s) in %s = %v, model %v", step, offAddr(nd.v6, o), who, nd.cidr(), err, want)
		}
		if want == nil {
			held[o] = who
		}
	}
	m.def, m.held, m.tent = nd, held, map[int]bool{}
	return p, true
}

// compare requires the pool to agree with the model on everything observable, and to be
// internally consistent, after an operation.
func (m *poolModel) compare(t *testing.T, step int, p *Pool) {
	t.Helper()
	if err := checkInvariants(p); err != nil {
		t.Fatalf("step %d: %v", step, err)
	}
	for o := 0; o < 130; o++ {
		a := offAddr(m.def.v6, o)
		if h, ok := p.Holder(a); ok != (m.held[o] != "") || h.UID != m.held[o] {
			t.Fatalf("step %d: Holder(%v) = %v, %v; model %q", step, a, h, ok, m.held[o])
		}
		if got := reserved(p, a); got != m.tent[o] {
			t.Fatalf("step %d: %v reserved %v, model %v", step, a, got, m.tent[o])
		}
	}
	if p.Capacity().Cmp(big.NewInt(int64(m.def.capacity()))) != 0 || used(p) != len(m.held) {
		t.Fatalf("step %d: capacity %v used %d, model %d %d", step, p.Capacity(), used(p), m.def.capacity(), len(m.held))
	}
	if p.Held() != len(m.held)-len(m.tent) {
		t.Fatalf("step %d: Held() = %d, model %d held of which %d reserved", step, p.Held(), len(m.held), len(m.tent))
	}
	lowest := m.lowestFree()
	nf, err := p.nextFree()
	if lowest < 0 && !errors.Is(err, ErrExhausted) || lowest >= 0 && nf != offAddr(m.def.v6, lowest) {
		t.Fatalf("step %d: nextFree = %v, %v; model offset %d", step, nf, err, lowest)
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
		if err := p.Check(offAddr(def.v6, o)); !sameErr(err, want) {
			t.Fatalf("step %d: Check(%v) = %v, model %v", step, offAddr(def.v6, o), err, want)
		}
	}
}
