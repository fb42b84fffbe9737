package ipam

import (
	"errors"
	"math/big"
	"net/netip"
	"slices"
	"strconv"
	"testing"
)

func TestAllocateWholeSmallRanges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cidr    string
		exclude []string
		want    []string
	}{
		{cidr: "10.0.0.0/29", want: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"}},
		{cidr: "10.0.0.0/30", want: []string{"10.0.0.1", "10.0.0.2"}},
		{cidr: "10.0.0.0/31", want: []string{"10.0.0.0", "10.0.0.1"}},
		{cidr: "10.0.0.7/32", want: []string{"10.0.0.7"}},
		{cidr: "0.0.0.0/32", want: []string{"0.0.0.0"}},
		{cidr: "255.255.255.254/31", want: []string{"255.255.255.254", "255.255.255.255"}},
		{cidr: "2001:db8::/126", want: []string{"2001:db8::1", "2001:db8::2", "2001:db8::3"}},
		{cidr: "2001:db8::/127", want: []string{"2001:db8::", "2001:db8::1"}},
		{cidr: "2001:db8::5/128", want: []string{"2001:db8::5"}},
		{cidr: "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffc/126", want: []string{
			"ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffd",
			"ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe",
			"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
		}},
		{cidr: "10.0.0.0/29", exclude: []string{"10.0.0.1", "10.0.0.3-10.0.0.4", "10.0.0.6/32"}, want: []string{"10.0.0.2", "10.0.0.5"}},
		{cidr: "10.0.0.0/30", exclude: []string{"10.0.0.0/30"}, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.cidr, func(t *testing.T) {
			p := mustPool(t, tc.cidr, tc.exclude...)
			if got := p.Capacity(); got.Cmp(big.NewInt(int64(len(tc.want)))) != 0 {
				t.Errorf("Capacity() = %v, want %d", got, len(tc.want))
			}
			got := drain(t, p)
			var want []netip.Addr
			for _, s := range tc.want {
				want = append(want, addr(s))
			}
			if !slices.Equal(got, want) {
				t.Errorf("allocated %v, want %v", got, want)
			}
			if _, err := p.ReserveNext(owner("one-more")); !errors.Is(err, ErrExhausted) {
				t.Errorf("ReserveNext on full pool: %v, want ErrExhausted", err)
			}
			if available(p).Sign() != 0 || p.Held() != len(want) {
				t.Errorf("full pool: held %d available %v", p.Held(), available(p))
			}
			if err := checkInvariants(p); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCapacityLargeRanges(t *testing.T) {
	t.Parallel()
	pow := func(n uint) *big.Int { return new(big.Int).Lsh(big.NewInt(1), n) }
	minus := func(x *big.Int, n int64) *big.Int { return x.Sub(x, big.NewInt(n)) }
	tests := []struct {
		cidr    string
		exclude []string
		want    *big.Int
		first   string
	}{
		{cidr: "10.0.0.0/24", want: big.NewInt(254), first: "10.0.0.1"},
		{cidr: "10.0.0.0/16", want: big.NewInt(65534), first: "10.0.0.1"},
		{cidr: "0.0.0.0/0", want: minus(pow(32), 2), first: "0.0.0.1"},
		{cidr: "2001:db8::/120", want: big.NewInt(255), first: "2001:db8::1"},
		{cidr: "2001:db8::/64", want: minus(pow(64), 1), first: "2001:db8::1"},
		{cidr: "::/0", want: minus(pow(128), 1), first: "::1"},
		{cidr: "2001:db8::/64", exclude: []string{"2001:db8::/96"}, want: minus(pow(64), 1<<32), first: "2001:db8::1:0:0"},
		{cidr: "2001:db8::/64", exclude: []string{"2001:db8::1-2001:db8::ff", "2001:db8::100"}, want: minus(pow(64), 257), first: "2001:db8::101"},
	}
	for _, tc := range tests {
		t.Run(tc.cidr, func(t *testing.T) {
			p := mustPool(t, tc.cidr, tc.exclude...)
			if got := p.Capacity(); got.Cmp(tc.want) != 0 {
				t.Errorf("Capacity() = %v, want %v", got, tc.want)
			}
			a, err := takeNext(p, owner("a"))
			if err != nil || a != addr(tc.first) {
				t.Errorf("takeNext = %v, %v; want %s", a, err, tc.first)
			}
			if want := new(big.Int).Sub(tc.want, big.NewInt(1)); available(p).Cmp(want) != 0 {
				t.Errorf("available = %v, want %v", available(p), want)
			}
			// The caller must not be able to corrupt the pool via the result.
			p.Capacity().SetInt64(0)
			if p.Capacity().Cmp(tc.want) != 0 {
				t.Error("Capacity() aliases internal state")
			}
			if err := checkInvariants(p); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestExcludesNeverHandedOut(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		exclude []string
		wantCap int64
	}{
		{"none", nil, 254},
		{"single", []string{"10.0.0.5"}, 253},
		{"cidr", []string{"10.0.0.8/30"}, 250},
		{"range", []string{"10.0.0.20-10.0.0.29"}, 244},
		{"all forms", []string{"10.0.0.5", "10.0.0.8/30", "10.0.0.20-10.0.0.29"}, 239},
		{"overlapping", []string{"10.0.0.8/29", "10.0.0.10-10.0.0.20", "10.0.0.12"}, 254 - 13},
		{"covers reserved", []string{"10.0.0.0/30", "10.0.0.252/30"}, 254 - 6},
		{"whole", []string{"10.0.0.0/24"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mustPool(t, "10.0.0.0/24", tc.exclude...)
			if got := p.Capacity(); got.Cmp(big.NewInt(tc.wantCap)) != 0 {
				t.Errorf("Capacity() = %v, want %d", got, tc.wantCap)
			}
			got := drain(t, p)
			if int64(len(got)) != tc.wantCap {
				t.Errorf("drained %d addresses, want %d", len(got), tc.wantCap)
			}
			for _, a := range got {
				if err := p.Check(a); err != nil {
					t.Errorf("handed out %v: %v", a, err)
				}
			}
			if !slices.IsSortedFunc(got, netip.Addr.Compare) {
				t.Errorf("not handed out lowest first: %v", got)
			}
		})
	}
}

func TestFillSixteen(t *testing.T) {
	t.Parallel()
	p := mustPool(t, "10.1.0.0/16")
	prev := netip.Addr{}
	for i := range 65534 {
		a, err := takeNext(p, Owner{UID: strconv.Itoa(i)})
		if err != nil {
			t.Fatalf("#%d: %v", i, err)
		}
		if prev.IsValid() && a != prev.Next() {
			t.Fatalf("#%d: got %v after %v", i, a, prev)
		}
		prev = a
	}
	if prev != addr("10.1.255.254") || p.free.n != 0 {
		t.Errorf("last = %v, spans left %d", prev, p.free.n)
	}
	if _, err := p.ReserveNext(owner("one-more")); !errors.Is(err, ErrExhausted) {
		t.Errorf("ReserveNext on full /16 = %v", err)
	}
	// Release every other address, then everything: the free tree must
	// fragment and merge back to a single span.
	for i := 1; i < 65535; i += 2 {
		p.Release(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}))
	}
	if p.free.n != 32767 {
		t.Errorf("fragmented into %d spans, want 32767", p.free.n)
	}
	if err := checkInvariants(p); err != nil {
		t.Fatal(err)
	}
	for i := 2; i < 65535; i += 2 {
		p.Release(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}))
	}
	if p.free.n != 1 || p.Held() != 0 {
		t.Errorf("after releasing all: %d spans, %d held", p.free.n, p.Held())
	}
	if err := checkInvariants(p); err != nil {
		t.Fatal(err)
	}
}

// TestClaimsAmongExcludesIPv6: static claims and excludes both split the free intervals of an IPv6
// range; capacity counts neither, and dynamic allocation flows around both.
func TestClaimsAmongExcludesIPv6(t *testing.T) {
	t.Parallel()
	p := mustPool(t, "2001:db8::/120", "2001:db8::2-2001:db8::4", "2001:db8::f0/124")
	for _, s := range []string{"2001:db8::1", "2001:db8::5", "2001:db8::80"} {
		if err := p.Claim(addr(s), owner(s)); err != nil {
			t.Fatal(err)
		}
	}
	if want := big.NewInt(255 - 3 - 16); p.Capacity().Cmp(want) != 0 {
		t.Errorf("Capacity() = %v, want %v", p.Capacity(), want)
	}
	if p.Held() != 3 {
		t.Errorf("Held() = %d", p.Held())
	}
	if err := checkInvariants(p); err != nil {
		t.Fatal(err)
	}
	got := drain(t, p)
	if len(got) != 255-3-16-3 || got[0] != addr("2001:db8::6") || got[len(got)-1] != addr("2001:db8::ef") {
		t.Errorf("drained %d, %v .. %v", len(got), got[0], got[len(got)-1])
	}
	if err := checkInvariants(p); err != nil {
		t.Fatal(err)
	}
}
