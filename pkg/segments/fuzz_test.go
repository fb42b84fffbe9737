package segments

import (
	"context"
	"os"
	"testing"
)

// fuzzSeeds are pages and objects shaped as upstream writes them.
func fuzzSeeds(f *testing.F) [][]byte {
	vmi, err := os.ReadFile("testdata/vmi-harvester-v1.8.2-nodedrain.json")
	if err != nil {
		f.Fatal(err)
	}
	g := cluster(f)
	seeds := [][]byte{vmi, []byte(guestNodeVMI), []byte(`{"items":[]}`), []byte(`{"items":[{},null,1,"x",[]]}`),
		[]byte(`{"metadata":{"continue":"1"},"items":[{"metadata":{"name":"a","namespace":"b"}}]}`), []byte(`null`), []byte(`{`)}
	for _, path := range []string{pathNAD, pathLB, pathVMI} {
		seeds = append(seeds, listJSON("X", "", g.items[path]...))
		seeds = append(seeds, g.items[path]...)
	}
	seeds = append(seeds, fromYAML(f, dhcpPool("default/vlan10", "192.168.48.0/24", "192.168.48.81", "192.168.48.90", "192.168.48.77", "192.168.48.1")))
	return seeds
}

// FuzzParse: whatever bytes come as a page of any kind, or as one object of it, parsing never
// panics, and every claim it makes is a run of one family, on the cluster's segment or on none,
// that the view finds again.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b := newBuilder(testCluster)
		items, _, pageErr := decodePage(data)
		for _, s := range sources() {
			if pageErr == nil {
				for _, item := range items {
					b.add(s.kind, item)
				}
			}
			b.add(s.kind, data)
		}
		v := b.view()
		for _, c := range v.Claims {
			if !wellFormed(c) || c.First.Is4In6() {
				t.Fatalf("claim %+v is no run of one family", c)
			}
			if c.Segment != (Segment{}) && c.Segment.Cluster != testCluster {
				t.Fatalf("claim %+v is on another cluster", c)
			}
			found := false
			for _, o := range v.Overlapping(c.Segment, c.First, c.Last) {
				found = found || o == c
			}
			if !found {
				t.Fatalf("claim %+v is not found on its own run", c)
			}
		}
		for _, n := range v.Networks {
			if got, ok, why := v.NetworkNamed(n.String()); !ok || got != n {
				t.Fatalf("network %s is not found by its name: %s", n, why)
			}
		}
		for k, names := range v.Skipped {
			if len(names) > MaxSkippedNames || v.SkippedCount[k] < len(names) {
				t.Fatalf("skipped %v %v", v.Skipped, v.SkippedCount)
			}
		}
	})
}

// FuzzRead: whatever a cluster answers to every request, Read never panics and never asks more
// than its limits allow.
func FuzzRead(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Add([]byte(`{"metadata":{"continue":"again"},"items":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := Limits{PageSize: 4, MaxPages: 3, MaxObjects: 10}
		v, err := Read(context.Background(), pageGetter(string(data)), testCluster, lim)
		if err != nil {
			return
		}
		if v.Requests > len(sources())*lim.MaxPages {
			t.Fatalf("%d requests", v.Requests)
		}
	})
}
