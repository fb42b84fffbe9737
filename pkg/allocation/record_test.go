package allocation

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
)

// TestNonCanonicalKeysAreHeld: an address recorded in another spelling than the operator's — by a
// person editing the status or a restore tool — is held all the same. A static claim of it by
// another FloatingIP is refused naming the holder, a dynamic claim passes it over, and the holder
// keeps it.
func TestNonCanonicalKeysAreHeld(t *testing.T) {
	for _, tc := range []struct {
		cidr, key, addr string
	}{
		{"fd00::/120", "FD00::5", "fd00::5"},
		{"fd00::/120", "fd00:0::5", "fd00::5"},
		{"fd00::/120", "fd00:0000:0000:0000:0000:0000:0000:0005", "fd00::5"},
		{"fd00::/120", "fd00::5%eth0", "fd00::5"},
		{"::/112", "::FFFF", "::ffff"},
		{"10.0.0.0/29", "::ffff:10.0.0.1", "10.0.0.1"},
		{"10.0.0.0/29", "::FFFF:a00:1", "10.0.0.1"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			view := NewView(rangeOf("r", tc.cidr, time.Now(), map[string]string{tc.key: "a"}))
			if view.problem != nil {
				t.Fatalf("problem = %+v, want none: the key names an address of the range", view.problem)
			}
			want := netip.MustParseAddr(tc.addr)
			_, _, changed, err := view.plan(owner("b"), want, nil)
			var taken *ipam.TakenError
			if !errors.As(err, &taken) || taken.Holder.UID != "a" || changed {
				t.Errorf("static claim of %s by another owner: changed=%v err=%v, want taken by a", want, changed, err)
			}
			next, _, _, err := view.plan(owner("c"), netip.Addr{}, nil)
			if err != nil || next == want {
				t.Errorf("dynamic claim got %s, %v; want another address than %s", next, err, want)
			}
			if held := view.HeldBy("a"); len(held) != 1 || held[0] != want {
				t.Errorf("HeldBy(a) = %v, want [%s]", held, want)
			}
			if addr, _, changed, err := view.plan(owner("a"), want, nil); err != nil || changed || addr != want {
				t.Errorf("the holder's own claim = %s changed=%v %v; want %s unchanged", addr, changed, err, want)
			}
		})
	}
}

// TestAddressRecordedTwiceIsFlagged: the same address in two spellings for two FloatingIPs is
// flagged, and only the canonical spelling's holder holds it: the other is never told it does.
func TestAddressRecordedTwiceIsFlagged(t *testing.T) {
	view := NewView(rangeOf("r", "fd00::/120", time.Now(), map[string]string{"FD00::5": "b", "fd00::5": "a"}))
	if view.problem == nil || view.problem.Reason != ReasonOrphanedAllocations || !strings.Contains(view.problem.Message, "FD00::5 (ns/fip-b: recorded twice") {
		t.Fatalf("problem = %+v, want OrphanedAllocations naming FD00::5 recorded twice", view.problem)
	}
	if held := view.HeldBy("b"); len(held) != 0 {
		t.Errorf("HeldBy(b) = %v, want nothing: a holds fd00::5", held)
	}
	if h, ok := view.Holder(netip.MustParseAddr("fd00::5")); !ok || h.UID != "a" {
		t.Errorf("Holder = %+v, want a", h)
	}
	var nr *NotReadyError
	if _, _, _, err := view.plan(owner("b"), netip.Addr{}, view.problem); !errors.As(err, &nr) {
		t.Errorf("b's claim = %v, want refused while the record is in doubt", err)
	}
}

// TestAmbiguousKeysAreFlagged: a key that names no address in one reading only ("010.0.0.1": ten
// or eight?) is never guessed at: it is flagged, and the range hands out nothing new meanwhile.
func TestAmbiguousKeysAreFlagged(t *testing.T) {
	view := NewView(rangeOf("r", "10.0.0.0/29", time.Now(), map[string]string{"010.0.0.1": "a"}))
	if view.problem == nil || !strings.Contains(view.problem.Message, "010.0.0.1 (ns/fip-a: not an address)") {
		t.Fatalf("problem = %+v, want the key flagged", view.problem)
	}
	var nr *NotReadyError
	if _, _, _, err := view.plan(owner("b"), netip.MustParseAddr("10.0.0.1"), view.problem); !errors.As(err, &nr) {
		t.Errorf("a claim of 10.0.0.1 = %v, want refused while the record is in doubt", err)
	}
}

// TestReleaseTakesEverySpelling: releasing a FloatingIP removes its keys in every spelling,
// readable or not, so nothing of it stays behind to block or leak an address.
func TestReleaseTakesEverySpelling(t *testing.T) {
	record := map[string]v1.Allocation{
		"FD00::5":   {Name: "fip-a", UID: "a"},
		"fd00:0::5": {Name: "fip-a", UID: "a"},
		"0fd00::9":  {Name: "fip-a", UID: "a"},
		"fd00::6":   {Name: "fip-b", UID: "b"},
	}
	if got, want := keysOf(record, "a", nil), []string{"0fd00::9", "FD00::5", "fd00:0::5"}; !reflect.DeepEqual(got, want) {
		t.Errorf("keys of a = %v, want %v", got, want)
	}
	if got, want := keysOf(record, "a", []netip.Addr{netip.MustParseAddr("fd00::5")}), []string{"FD00::5", "fd00:0::5"}; !reflect.DeepEqual(got, want) {
		t.Errorf("keys of a for fd00::5 = %v, want %v", got, want)
	}
	if got := keysOf(record, "a", []netip.Addr{netip.MustParseAddr("fd00::6")}); len(got) != 0 {
		t.Errorf("keys of a for b's address = %v, want none", got)
	}
}

func TestNormalise(t *testing.T) {
	record := map[string]v1.Allocation{
		"FD00::5":         {UID: "a"},
		"fd00:0::5":       {UID: "a"},
		"fd00::6":         {UID: "b"},
		"FD00::6":         {UID: "c"},
		"::ffff:10.0.0.1": {UID: "d"},
		"010.0.0.2":       {UID: "e"},
	}
	if !needsNormalising(record) {
		t.Fatal("needsNormalising = false")
	}
	normalise(record)
	want := map[string]v1.Allocation{
		"fd00::5":   {UID: "a"},
		"fd00::6":   {UID: "b"},
		"FD00::6":   {UID: "c"}, // another holder: left for the flag
		"10.0.0.1":  {UID: "d"},
		"010.0.0.2": {UID: "e"}, // ambiguous: left for the flag
	}
	if !reflect.DeepEqual(record, want) {
		t.Errorf("normalised = %v, want %v", record, want)
	}
	if needsNormalising(record) {
		t.Error("needsNormalising after normalise = true: a range would be rewritten forever")
	}
}

func TestWarnings(t *testing.T) {
	for _, tc := range []struct {
		cidr    string
		exclude []string
		want    []string
	}{
		{"10.0.0.0/24", nil, nil},
		{"0.0.0.0/0", nil, []string{ReasonWholeAddressSpace}},
		{"::/0", nil, []string{ReasonWholeAddressSpace}},
		{"10.0.0.0/30", []string{"10.0.0.1-10.0.0.2"}, []string{ReasonNoCapacity}},
		{"10.0.0.0/24", []string{"10.0.0.0/24"}, []string{ReasonNoCapacity}},
		{"0.0.0.0/0", []string{"0.0.0.0/0"}, []string{ReasonWholeAddressSpace, ReasonNoCapacity}},
	} {
		r := rangeOf("r", tc.cidr, time.Now(), nil, tc.exclude...)
		var got []string
		for _, w := range NewView(r).Warnings(r) {
			got = append(got, w.Reason)
			if !strings.Contains(w.Message, tc.cidr) {
				t.Errorf("%s: warning %q does not name the range", tc.cidr, w.Message)
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s minus %v: warnings %v, want %v", tc.cidr, tc.exclude, got, tc.want)
		}
	}
}
