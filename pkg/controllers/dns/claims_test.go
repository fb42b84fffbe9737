package dns

import (
	"slices"
	"testing"
)

// TestClaims: a name is one guest cluster's; within it, one FloatingIP per record type; a name
// published before the process started counts as taken; a holder that lets its names go frees
// them.
func TestClaims(t *testing.T) {
	t.Parallel()
	var c claims
	none := func(string) []holder { return nil }
	a4 := holder{key: "c-m-a/a-kubevip", cluster: "c-m-a", recordType: "A"}
	a6 := holder{key: "c-m-a/a-kubevip-v6", cluster: "c-m-a", recordType: "AAAA"}
	a4too := holder{key: "c-m-a/extra", cluster: "c-m-a", recordType: "A"}
	b4 := holder{key: "c-m-b/b-kubevip", cluster: "c-m-b", recordType: "A"}
	if o, _, _ := c.take(a4, []string{"a.example.com", "*.a.example.com"}, none); o != nil {
		t.Fatalf("the first holder was refused for %v", o)
	}
	if o, _, _ := c.take(a6, []string{"a.example.com"}, none); o != nil {
		t.Errorf("the cluster's AAAA was refused for %v", o)
	}
	if o, n, _ := c.take(a4too, []string{"a.example.com"}, none); o == nil || o.key != a4.key || n != "a.example.com" {
		t.Errorf("a second A of the same cluster got %v, %q; want refused for %s", o, n, a4.key)
	}
	if o, n, _ := c.take(b4, []string{"b.example.com", "*.a.example.com"}, none); o == nil || o.cluster != "c-m-a" || n != "*.a.example.com" {
		t.Errorf("another cluster got %v, %q; want refused for cluster c-m-a", o, n)
	}
	// Taken again, with a name that is free: it keeps that one only, and those refused the names it
	// let go are woken.
	if o, _, wake := c.take(a4, []string{"a2.example.com"}, none); o != nil || !slices.Equal(wake, []string{a4too.key, b4.key}) {
		t.Fatalf("a holder moving to a free name: refused for %v, woke %v; want %s and %s woken", o, wake, a4too.key, b4.key)
	}
	if o, _, _ := c.take(b4, []string{"*.a.example.com"}, none); o != nil {
		t.Errorf("a name let go is still refused for %v", o)
	}
	c.release(b4.key)
	published := func(n string) []holder {
		if n == "*.a.example.com" {
			return []holder{{key: "c-m-z/z", cluster: "c-m-z", recordType: "A"}}
		}
		return nil
	}
	if o, _, _ := c.take(b4, []string{"*.a.example.com"}, published); o == nil || o.key != "c-m-z/z" {
		t.Errorf("a published name was given away: %v", o)
	}
	if o, _, _ := c.take(holder{key: "c-m-z/z", cluster: "c-m-z", recordType: "A"}, []string{"*.a.example.com"}, published); o != nil {
		t.Errorf("the publisher itself was refused its name for %v", o)
	}
}
