package config

import "sync"

// Store holds the configuration in force and tells subscribers when it changes. One Store is
// created at start-up and passed to everything that reads the configuration.
type Store struct {
	mu          sync.RWMutex
	current     Config
	subscribers []func(old, updated Config)
}

// NewStore returns a store holding initial.
func NewStore(initial Config) *Store {
	return &Store{current: initial}
}

// Get returns the configuration in force. The chart values maps are shared: treat them as
// read-only.
func (s *Store) Get() Config {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.current
}

// Set makes cfg the configuration in force and calls the subscribers if it differs from the one
// before. It reports whether anything changed.
func (s *Store) Set(cfg Config) bool {
	s.mu.Lock()
	old := s.current
	if old.Equal(cfg) {
		s.mu.Unlock()
		return false
	}
	s.current = cfg
	subscribers := append([]func(old, updated Config){}, s.subscribers...)
	s.mu.Unlock()

	for _, fn := range subscribers {
		fn(old, cfg)
	}
	return true
}

// Subscribe registers fn to be called after every change, with the old and the new configuration.
func (s *Store) Subscribe(fn func(old, updated Config)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subscribers = append(s.subscribers, fn)
}
