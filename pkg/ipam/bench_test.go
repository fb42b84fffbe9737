package ipam

import (
	"runtime"
	"strconv"
	"testing"
)

var benchRanges = []struct {
	name, cidr string
	capacity   int // 0: larger than any benchmark fills
}{
	{"24", "10.0.0.0/24", 254},
	{"16", "10.0.0.0/16", 65534},
	{"64", "2001:db8::/64", 0},
}

// benchOwners builds distinct owners up front so that string formatting is
// not timed and, in BenchmarkPoolMemory, not counted as pool memory.
func benchOwners(n int) []Owner {
	os := make([]Owner, n)
	for i := range os {
		os[i] = Owner{Namespace: "bench", Name: "fip", UID: "uid-" + strconv.Itoa(i)}
	}
	return os
}

// BenchmarkTakeNext measures dynamic allocation into an ever fuller pool, as
// the allocation engine does it: reserve the lowest free address, then
// confirm it. Full /24 and /16 pools are replaced (untimed) so b.N may
// exceed the capacity. The /16 case always fills at least one whole /16 even
// when b.N is smaller, to expose any per-claim scan; allocs/s therefore uses
// the real count, and ns/op is only meaningful once b.N >= 65534.
func BenchmarkTakeNext(b *testing.B) {
	for _, r := range benchRanges {
		b.Run(r.name, func(b *testing.B) {
			n := b.N
			if r.name == "16" {
				n = max(n, r.capacity)
			}
			owners := benchOwners(n)
			if r.capacity > 0 {
				owners = owners[:min(n, r.capacity)]
			}
			p := mustPool(b, r.cidr)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range n {
				if r.capacity > 0 && i > 0 && i%r.capacity == 0 {
					b.StopTimer()
					p = mustPool(b, r.cidr)
					b.StartTimer()
				}
				if _, err := takeNext(p, owners[i%len(owners)]); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "allocs/s")
		})
	}
}

// BenchmarkPoolMemory reports the live heap of a pool after filling it with
// N addresses: the whole /24, the whole /16, and the same 65534 addresses
// in a /64, which should cost the same as the /16 since memory follows
// allocations, not range size.
func BenchmarkPoolMemory(b *testing.B) {
	for _, r := range benchRanges {
		b.Run(r.name, func(b *testing.B) {
			n := r.capacity
			if n == 0 {
				n = 65534
			}
			owners := benchOwners(n)
			var total int64
			var ms runtime.MemStats
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&ms)
				before := int64(ms.HeapAlloc)
				b.StartTimer()

				p := mustPool(b, r.cidr)
				for _, o := range owners {
					if _, err := takeNext(p, o); err != nil {
						b.Fatal(err)
					}
				}

				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&ms)
				total += int64(ms.HeapAlloc) - before
				runtime.KeepAlive(p)
				b.StartTimer()
			}
			perPool := float64(total) / float64(b.N)
			b.ReportMetric(perPool, "bytes/pool")
			b.ReportMetric(perPool/float64(n), "bytes/alloc")
		})
	}
}
