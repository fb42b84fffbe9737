package controllers

import (
	"sync"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// FirstGuestStatus lets the allocator's first status write of a FloatingIP — the one that shows
// its address — also carry the guest condition a guest pass would write right after it without
// contacting the guest, when Rancher's own objects already decide it (no provisioning cluster for
// the namespace, Rancher still provisioning the cluster, its agent disconnected): one status write
// where there were two, which is what a new cluster or a backlog of thousands costs the API
// server. The guest controller sets the function; a pass that comes to the same outcome finds
// nothing to write. The Event the pass would have recorded with it is the allocator's to record
// once the status is written. The zero value applies nothing.
type FirstGuestStatus struct {
	mu sync.RWMutex
	fn func(f *v1.FloatingIP, s *v1.FloatingIPStatus) *GuestEvent
}

// GuestEvent is an Event about a FloatingIP's guest.
type GuestEvent struct {
	Type, Reason, Message string
}

// Set makes fn the function Apply runs.
func (g *FirstGuestStatus) Set(fn func(f *v1.FloatingIP, s *v1.FloatingIPStatus) *GuestEvent) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fn = fn
}

// Apply sets on s, the status about to be written for f, the guest's outcome where Rancher's
// objects decide it, and returns the Event to record once s is written (nil: none). It does so
// only while s shows an address and no guest condition yet.
func (g *FirstGuestStatus) Apply(f *v1.FloatingIP, s *v1.FloatingIPStatus) *GuestEvent {
	if g == nil || s.IPAddress == "" {
		return nil
	}
	if _, shown := v1.GetCondition(s.Conditions, v1.GuestConfigured); shown {
		return nil
	}
	g.mu.RLock()
	fn := g.fn
	g.mu.RUnlock()
	if fn == nil {
		return nil
	}
	return fn(f, s)
}
