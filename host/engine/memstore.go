package engine

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// memStore keeps payloads in memory: Run's store, for a run in one
// process.
type memStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *memStore) Save(name string, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.m[name] = slices.Clone(b)
	return nil
}

func (s *memStore) Load(name string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[name]
	return b, ok, nil
}

func (s *memStore) Has(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[name]
	return ok
}

func (s *memStore) SetAside(name string) (string, error) {
	return "", errors.New("a run in memory has nothing to set aside")
}

func (s *memStore) Lock(context.Context, string, func()) (func(), error) { return func() {}, nil }
