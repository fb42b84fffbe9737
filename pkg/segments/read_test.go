package segments

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubefip/kube-fip-operator/pkg/guest"
)

// fakeGetter serves lists of items in pages, as an API server does: limit objects a page, the
// offset of the next page as its continue token. A path it has no items for is not served.
type fakeGetter struct {
	items map[string][][]byte
	// errs fail every request of a path.
	errs map[string]error
	// tooLarge, when set, refuses pages of more than that many objects as the guest client would.
	tooLarge int
	// ignoreLimit answers every object at once, and endless answers empty pages forever.
	ignoreLimit, endless bool
	requests             []string
}

func (f *fakeGetter) Get(ctx context.Context, pathAndQuery string) ([]byte, error) {
	f.requests = append(f.requests, pathAndQuery)
	u, err := url.Parse(pathAndQuery)
	if err != nil {
		return nil, err
	}
	if err := f.errs[u.Path]; err != nil {
		return nil, err
	}
	if f.endless {
		return []byte(`{"kind":"List","metadata":{"continue":"more"},"items":[]}`), nil
	}
	items, ok := f.items[u.Path]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{}, "")
	}
	limit, err := strconv.Atoi(u.Query().Get("limit"))
	if err != nil || limit <= 0 {
		return nil, fmt.Errorf("bad limit %q", u.Query().Get("limit"))
	}
	if f.tooLarge > 0 && limit > f.tooLarge {
		return nil, fmt.Errorf("reading the answer: %w", guest.ErrGuestResponseTooLarge)
	}
	from := 0
	if c := u.Query().Get("continue"); c != "" {
		if from, err = strconv.Atoi(c); err != nil {
			return nil, apierrors.NewResourceExpired("bad continue")
		}
	}
	to, next := len(items), ""
	if !f.ignoreLimit && from+limit < len(items) {
		to, next = from+limit, strconv.Itoa(from+limit)
	}
	return listJSON("X", next, items[from:to]...), nil
}

const (
	pathNAD  = "/apis/k8s.cni.cncf.io/v1/network-attachment-definitions"
	pathLB   = "/apis/loadbalancer.harvesterhci.io/v1beta1/ippools"
	pathDHCP = "/apis/network.harvesterhci.io/v1alpha1/ippools"
	pathVMI  = "/apis/kubevirt.io/v1/virtualmachineinstances"
)

// cluster is a Harvester cluster without vm-dhcp-controller: two VLAN networks, a NAD that is none,
// a pool on VLAN 10, a global pool, and a guest's node on VLAN 10.
func cluster(t testing.TB) *fakeGetter {
	return &fakeGetter{items: map[string][][]byte{
		pathNAD: {
			nadJSON(t, "default", "vlan10", vlanLabels("mgmt", "10"), nil, harvesterConfig("vlan10", "mgmt", 10)),
			nadJSON(t, "default", "macvlan", nil, nil, `{"type":"macvlan"}`),
			nadJSON(t, "prod", "vlan20", vlanLabels("mgmt", "20"), nil, harvesterConfig("vlan20", "mgmt", 20)),
		},
		pathLB: {
			fromYAML(t, lbPool("vlan10", "", "    - subnet: 10.0.10.0/24\n      rangeStart: 10.0.10.100\n      rangeEnd: 10.0.10.150\n",
				"    network: default/vlan10\n    scope:\n      - namespace: default\n")),
			fromYAML(t, lbPool("global", "", "    - subnet: 192.168.0.0/24\n", "    scope:\n      - namespace: \"*\"\n        project: \"*\"\n        guestCluster: \"*\"\n")),
		},
		pathVMI: {[]byte(guestNodeVMI),
			[]byte(`{"metadata":{"name":"other","namespace":"prod"},"spec":{"networks":[{"name":"n","multus":{"networkName":"vlan20"}}]},"status":{"interfaces":[{"name":"n","ipAddress":"10.0.20.9"}]}}`)},
	}}
}

func TestRead(t *testing.T) {
	get := cluster(t)
	v, err := Read(context.Background(), get, testCluster, Limits{PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	var nets []string
	for _, n := range v.Networks {
		nets = append(nets, n.String()+" "+n.Segment.String())
	}
	if want := []string{"default/vlan10 cluster network mgmt, VLAN 10", "prod/vlan20 cluster network mgmt, VLAN 20"}; !slices.Equal(nets, want) {
		t.Errorf("networks %q, want %q", nets, want)
	}
	var claims []string
	for _, c := range v.Claims {
		claims = append(claims, c.String())
	}
	want := []string{
		"IPPool global 192.168.0.2-192.168.0.254 on any segment",
		"VirtualMachineInstance default/guest1-pool1-abcde 10.0.10.5 on cluster network mgmt, VLAN 10",
		"IPPool vlan10 10.0.10.100-10.0.10.150 on cluster network mgmt, VLAN 10",
		"VirtualMachineInstance default/guest1-pool1-abcde 10.0.10.200 on cluster network mgmt, VLAN 10",
		"VirtualMachineInstance default/guest1-pool1-abcde fd00:10::5 on cluster network mgmt, VLAN 10",
		"VirtualMachineInstance prod/other 10.0.20.9 on cluster network mgmt, VLAN 20",
	}
	if !slices.Equal(claims, want) {
		t.Errorf("claims\n%s\nwant\n%s", strings.Join(claims, "\n"), strings.Join(want, "\n"))
	}
	if len(v.Interfaces) != 2 || v.Interfaces[0].Guest != "guest1" || v.Interfaces[1].Guest != "" {
		t.Errorf("interfaces %+v", v.Interfaces)
	}
	if !slices.Equal(v.Absent, []Kind{KindDHCPPool}) || v.Limited != "" {
		t.Errorf("absent %v, limited %q", v.Absent, v.Limited)
	}
	if !slices.Equal(v.Skipped[KindNetwork], []string{"default/macvlan"}) || v.SkippedCount[KindNetwork] != 1 {
		t.Errorf("skipped %v %v", v.Skipped, v.SkippedCount)
	}
	// NADs in 2 pages, pools 1, DHCP 1 (absent), VMIs 1.
	if v.Requests != 5 || v.Requests != len(get.requests) {
		t.Errorf("%d requests counted, %d made: %q", v.Requests, len(get.requests), get.requests)
	}
	if got := v.Overlapping(seg("mgmt", 10), addr("10.0.10.200"), addr("10.0.10.210")); len(got) != 1 || got[0].Guest != "guest1" {
		t.Errorf("the guest's floating IP is not found as its VM's: %v", got)
	}
}

func TestReadWithoutVMs(t *testing.T) {
	get := cluster(t)
	v, err := Read(context.Background(), get, testCluster, Limits{NoVMs: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range get.requests {
		if strings.HasPrefix(r, "/apis/kubevirt.io/") {
			t.Errorf("asked for VMs: %s", r)
		}
	}
	if len(v.Networks) != 2 || len(v.Claims) != 2 || len(v.Interfaces) != 0 || v.Requests != 3 {
		t.Errorf("view %+v", v)
	}
}

func TestReadLimits(t *testing.T) {
	tests := []struct {
		name    string
		lim     Limits
		mod     func(*fakeGetter)
		limited string
		nads    int
	}{
		{name: "MaxPages", lim: Limits{PageSize: 1, MaxPages: 2}, nads: 1,
			limited: "NetworkAttachmentDefinitions: MaxPages (2 pages)"},
		{name: "MaxObjects", lim: Limits{PageSize: 2, MaxObjects: 2}, nads: 1,
			limited: "NetworkAttachmentDefinitions: MaxObjects (2 objects)"},
		{name: "MaxObjects against a server that ignores limit", lim: Limits{PageSize: 1, MaxObjects: 2}, nads: 1,
			mod: func(f *fakeGetter) { f.ignoreLimit = true }, limited: "NetworkAttachmentDefinitions: MaxObjects (2 objects)"},
		{name: "MaxBytes", lim: Limits{PageSize: 1, MaxBytes: 1}, nads: 1,
			limited: "NetworkAttachmentDefinitions: MaxBytes (1 bytes); load balancer IPPools: MaxBytes (1 bytes); VirtualMachineInstances: MaxBytes (1 bytes)"},
		{name: "a page too large is asked again at half the size", lim: Limits{PageSize: 8}, nads: 2,
			mod: func(f *fakeGetter) { f.tooLarge = 2 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			get := cluster(t)
			if tt.mod != nil {
				tt.mod(get)
			}
			v, err := Read(context.Background(), get, testCluster, tt.lim)
			if err != nil {
				t.Fatal(err)
			}
			if v.Limited != tt.limited || len(v.Networks) != tt.nads {
				t.Errorf("limited %q with %d networks, want %q and %d", v.Limited, len(v.Networks), tt.limited, tt.nads)
			}
			if v.Requests != len(get.requests) {
				t.Errorf("%d requests counted, %d made", v.Requests, len(get.requests))
			}
			if _, _, why := v.NetworkNamed("nope"); tt.nads < 2 && !strings.Contains(why, "not all read") {
				t.Errorf("a limited read of networks is not said: %q", why)
			}
		})
	}
	get := &fakeGetter{endless: true}
	v, err := Read(context.Background(), get, testCluster, Limits{MaxPages: 3})
	if err != nil || len(get.requests) != 12 || !strings.Contains(v.Limited, "VirtualMachineInstances: MaxPages (3 pages)") {
		t.Errorf("endless pages: %v, %d requests, %q", err, len(get.requests), v.Limited)
	}
}

func TestReadErrors(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "kubevirt.io", Resource: "virtualmachineinstances"}, "", errors.New("no"))
	tests := []struct {
		name  string
		mod   func(*fakeGetter)
		ctx   func() context.Context
		check func(error) bool
	}{
		{name: "forbidden fails the read", mod: func(f *fakeGetter) { f.errs = map[string]error{pathVMI: forbidden} },
			check: apierrors.IsForbidden},
		{name: "a single object over the budget", mod: func(f *fakeGetter) {
			f.tooLarge = 0
			f.errs = map[string]error{pathNAD: guest.ErrGuestResponseTooLarge}
		},
			check: func(err error) bool { return errors.Is(err, guest.ErrGuestResponseTooLarge) }},
		{name: "a Getter's own not-served error is an absent list",
			mod:   func(f *fakeGetter) { f.errs = map[string]error{pathLB: fmt.Errorf("404: %w", ErrNotServed)} },
			check: func(err error) bool { return err == nil }},
		{name: "the pass ends", ctx: func() context.Context {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(errors.New("pass over"))
			return ctx
		}, check: func(err error) bool { return err != nil && strings.Contains(err.Error(), "pass over") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			get := cluster(t)
			if tt.mod != nil {
				tt.mod(get)
			}
			ctx := context.Background()
			if tt.ctx != nil {
				ctx = tt.ctx()
			}
			_, err := Read(ctx, get, testCluster, Limits{})
			if !tt.check(err) {
				t.Errorf("Read: %v", err)
			}
		})
	}
}

// TestReadBadPages: an answer that is no list, or whose token is absurd, fails the read.
func TestReadBadPages(t *testing.T) {
	for _, body := range []string{`not json`, `null`, `{}`, `{"items":{}}`, `[]`, `{"kind":"Status","code":200}`,
		`{"metadata":{"continue":"` + strings.Repeat("x", maxContinue+1) + `"},"items":[]}`} {
		get := pageGetter(body)
		if v, err := Read(context.Background(), get, testCluster, Limits{}); err == nil {
			t.Errorf("%.40q read as %+v", body, v)
		}
	}
	// 404 after the first page is no absent API.
	get := cluster(t)
	calls := 0
	wrapped := getterFunc(func(ctx context.Context, pq string) ([]byte, error) {
		if calls++; calls == 2 {
			return nil, apierrors.NewNotFound(schema.GroupResource{}, "")
		}
		return get.Get(ctx, pq)
	})
	if _, err := Read(context.Background(), wrapped, testCluster, Limits{PageSize: 1}); err == nil {
		t.Error("a 404 on the second page was taken for an absent API")
	}
}

type getterFunc func(ctx context.Context, pathAndQuery string) ([]byte, error)

func (f getterFunc) Get(ctx context.Context, pq string) ([]byte, error) { return f(ctx, pq) }

// pageGetter answers every request with body.
func pageGetter(body string) Getter {
	return getterFunc(func(context.Context, string) ([]byte, error) { return []byte(body), nil })
}

func TestDecodePage(t *testing.T) {
	for body, want := range map[string]int{`{"items":[]}`: 0, `{"items":null}`: 0, `{"items":[{},{}]}`: 2} {
		items, next, err := decodePage([]byte(body))
		if err != nil || len(items) != want || next != "" {
			t.Errorf("%s: %d items, %q, %v", body, len(items), next, err)
		}
	}
}
