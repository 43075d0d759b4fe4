package bench

import (
	"context"
	"sync"
	"testing"
)

var (
	setupOnce sync.Once
	setup     *Setup
	setupErr  error
)

func sharedSetup(tb testing.TB) *Setup {
	tb.Helper()
	setupOnce.Do(func() { setup, setupErr = NewSetup(context.Background(), 1) })
	if setupErr != nil {
		tb.Fatal(setupErr)
	}
	return setup
}

// BenchmarkMaps reports ms a map (and, for the operators whose plain
// computation is a count of forward passes, the GFLOP/s that computation
// would need to take the same time) for every case of Cases: go test
// -bench Maps -count 5 ./host/bench, and take the medians.
func BenchmarkMaps(b *testing.B) {
	s := sharedSetup(b)
	for _, c := range s.Cases() {
		b.Run(c.Key, func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				if err := c.Run(ctx); err != nil {
					b.Fatal(err)
				}
			}
			ms := b.Elapsed().Seconds() * 1e3 / float64(b.N*c.Maps)
			b.ReportMetric(ms, "ms/map")
			if c.FLOPs > 0 {
				b.ReportMetric(c.FLOPs/(ms*1e-3)/1e9, "eff-GFLOP/s")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}
