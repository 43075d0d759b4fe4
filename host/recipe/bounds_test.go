package recipe

import (
	"runtime"
	"strings"
	"testing"
)

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestKeyLinesLinear: the line scanner's memory grows linearly with the
// depth of a nested value: doubling the depth at most doubles the bytes
// allocated (with some slack for map growth), where a path copied or
// joined at each level would quadruple them. The depth here is far beyond
// what Parse lets through (MaxDepth); scanKeyLines is tested on its own.
func TestKeyLinesLinear(t *testing.T) {
	for _, c := range []struct {
		name string
		gen  func(n int) string
	}{
		{"array", func(n int) string { return "x = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n" }},
		{"inline", func(n int) string { return "x = " + strings.Repeat("{a=", n) + "1" + strings.Repeat("}", n) + "\n" }},
		{"dotted", func(n int) string { return "x" + strings.Repeat(".a", n) + " = 1\n" }},
		{"header", func(n int) string { return "[x" + strings.Repeat(".a", n) + "]\ny = 1\n" }},
	} {
		const n = 3000
		var kl *keyLines
		small := allocated(func() { kl = scanKeyLines(c.gen(n)) })
		// The deepest key is found, at line 1 (2 for the header's key).
		path := []string{"x"}
		for range n {
			if c.name == "array" {
				path = append(path, "0")
			} else {
				path = append(path, "a")
			}
		}
		if c.name == "array" {
			path = path[:len(path)-1] // the innermost array is empty
		}
		if c.name == "header" {
			path = append(path, "y")
		}
		if got := kl.get(path...); got < 1 {
			t.Errorf("%s: the deepest key has no line", c.name)
		}
		big := allocated(func() { scanKeyLines(c.gen(4 * n)) })
		t.Logf("%s: depth %d: %d bytes; depth %d: %d bytes", c.name, n, small, 4*n, big)
		if ratio := float64(big) / float64(small); ratio > 6 {
			t.Errorf("%s: depth %d allocates %d bytes, depth %d %d: %.1f times for 4 times the depth (linear: about 4, quadratic: 16)", c.name, n, small, 4*n, big, ratio)
		}
	}
}
