package allocation

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
)

func rangeOf(name, cidr string, created time.Time, alloc map[string]string, exclude ...string) *v1.FloatingIPRange {
	r := &v1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("range-" + name), ResourceVersion: "1", CreationTimestamp: metav1.NewTime(created)},
		Spec:       v1.FloatingIPRangeSpec{IPRange: cidr, Exclude: exclude},
	}
	if len(alloc) > 0 {
		r.Status.Allocations = map[string]v1.Allocation{}
		for addr, uid := range alloc {
			r.Status.Allocations[addr] = v1.Allocation{Namespace: "ns", Name: "fip-" + uid, UID: types.UID(uid)}
		}
	}
	return r
}

// TestNonCanonicalKeysAreHeld: an address recorded in a legacy record in another spelling than
// the operator's — by a person editing the status or a restore tool — is read as that address, so
// the migration adopts it for its holder.
func TestNonCanonicalKeysAreHeld(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key, addr string
	}{
		{"FD00::5", "fd00::5"},
		{"fd00:0::5", "fd00::5"},
		{"fd00:0000:0000:0000:0000:0000:0000:0005", "fd00::5"},
		{"fd00::5%eth0", "fd00::5"},
		{"::FFFF", "::ffff"},
		{"::ffff:10.0.0.1", "10.0.0.1"},
		{"::FFFF:a00:1", "10.0.0.1"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			idx := indexRecord(map[string]v1.Allocation{tc.key: {UID: "a"}})
			if got := idx.holder[netip.MustParseAddr(tc.addr)]; got != tc.key || len(idx.unreadable) != 0 {
				t.Errorf("holder of %s = %q, unreadable %v; want %q alone", tc.addr, got, idx.unreadable, tc.key)
			}
		})
	}
}

// TestAddressRecordedTwiceHasOneHolder: the same address in two spellings for two FloatingIPs:
// only the canonical spelling's holder holds it; the other is never adopted.
func TestAddressRecordedTwiceHasOneHolder(t *testing.T) {
	t.Parallel()
	record := map[string]v1.Allocation{"FD00::5": {UID: "b"}, "fd00::5": {UID: "a"}}
	idx := indexRecord(record)
	if got := idx.holder[netip.MustParseAddr("fd00::5")]; got != "fd00::5" || len(idx.holder) != 1 {
		t.Errorf("holders %v; want fd00::5 alone holding", idx.holder)
	}
}

// TestAmbiguousKeysAreFlagged: a key that names no address in one reading only ("010.0.0.1": ten
// or eight?) is never guessed at.
func TestAmbiguousKeysAreFlagged(t *testing.T) {
	t.Parallel()
	idx := indexRecord(map[string]v1.Allocation{"010.0.0.1": {UID: "a"}})
	if len(idx.holder) != 0 || !reflect.DeepEqual(idx.unreadable, []string{"010.0.0.1"}) {
		t.Errorf("holders %v, unreadable %v; want 010.0.0.1 unreadable", idx.holder, idx.unreadable)
	}
}

// TestReleaseTakesEverySpelling: releasing a FloatingIP removes its keys in every spelling,
// readable or not, so nothing of it stays behind to block or leak an address.
func TestReleaseTakesEverySpelling(t *testing.T) {
	t.Parallel()
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

func TestWarnings(t *testing.T) {
	for _, tc := range []struct {
		cidr    string
		exclude []string
		want    []string
	}{
		{"10.0.0.0/24", nil, nil},
		{"0.0.0.0/0", nil, []string{v1.ReasonWholeAddressSpace}},
		{"::/0", nil, []string{v1.ReasonWholeAddressSpace}},
		{"10.0.0.0/30", []string{"10.0.0.1-10.0.0.2"}, []string{v1.ReasonNoCapacity}},
		{"10.0.0.0/24", []string{"10.0.0.0/24"}, []string{v1.ReasonNoCapacity}},
		{"0.0.0.0/0", []string{"0.0.0.0/0"}, []string{v1.ReasonWholeAddressSpace, v1.ReasonNoCapacity}},
	} {
		r := rangeOf("r", tc.cidr, time.Now(), nil, tc.exclude...)
		var got []string
		pool, _ := ipam.NewPool(tc.cidr, tc.exclude)
		for _, w := range warnings(r, pool) {
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
