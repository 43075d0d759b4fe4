package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// parallelRange runs fn over the batches [r0+k*batch, ...) of [r0, r1)
// with up to workers goroutines (r0 a multiple of batch, so the batches
// are those of the whole split). fn gets Parallel's context, which the
// first failing batch cancels: every call a batch makes must take it, so
// that its siblings stop at once instead of running to their deadlines.
func parallelRange(ctx context.Context, r0, r1, batch, workers int, fn func(ctx context.Context, b0, b1 int) error) error {
	nb := (r1 - r0 + batch - 1) / batch
	return Parallel(ctx, nb, workers, func(ctx context.Context, b int) error {
		return fn(ctx, r0+b*batch, min(r0+(b+1)*batch, r1))
	})
}

// Parallel runs fn(ctx, 0..n-1) on up to workers goroutines, tasks taken
// in order; the first error cancels the ctx the others get, stops them and
// is returned (a panic becomes an error, see protect).
func Parallel(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := protect(func() error { return fn(ctx, i) }); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// protect runs fn and turns a panic into an error, so that a bug on a
// worker goroutine fails the run cleanly (plugins are killed, results
// written so far are kept) instead of crashing the host.
func protect(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error (please report): %v", r)
		}
	}()
	return fn()
}
