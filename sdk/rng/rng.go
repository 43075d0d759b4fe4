package rng

import (
	"math/rand/v2"
)

// splitmix64 is one step of the SplitMix64 output function.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func mixString(h uint64, s string) uint64 {
	// FNV-1a over the bytes, then a SplitMix64 finaliser so that short
	// strings spread over all 64 bits.
	f := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		f ^= uint64(s[i])
		f *= 1099511628211
	}
	return splitmix64(h ^ splitmix64(f^uint64(len(s))))
}

// Key derives the seed of the stream (seed, purpose, split, record, draw).
// Use -1 for an index that does not apply. Different tuples give
// independent-looking seeds; the same tuple always gives the same seed.
func Key(seed uint64, purpose, split string, record, draw int) uint64 {
	h := splitmix64(seed)
	h = mixString(h, purpose)
	h = mixString(h, split)
	h = splitmix64(h ^ splitmix64(uint64(int64(record))+0x51ed2701))
	h = splitmix64(h ^ splitmix64(uint64(int64(draw))+0xa24baed4))
	return h
}

// New returns a generator for the stream with the given key. A generator
// belongs to one goroutine.
func New(key uint64) *rand.Rand {
	return rand.New(rand.NewPCG(key, splitmix64(key^0x6a09e667f3bcc909)))
}

// For is New(Key(seed, purpose, split, record, draw)).
func For(seed uint64, purpose, split string, record, draw int) *rand.Rand {
	return New(Key(seed, purpose, split, record, draw))
}
