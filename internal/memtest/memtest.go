package memtest

import "runtime"

// Allocated returns the bytes f allocates on the heap (runtime.MemStats'
// TotalAlloc, after a collection so that nothing earlier is pending).
func Allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}
