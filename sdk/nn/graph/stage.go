package graph

import (
	"sync"
	"sync/atomic"
)

// A stage is one parallel step over the chunks of a batch (chunked,
// forwardSamples): the calling goroutine runs chunks until none is left,
// joined by the helpers that are idle (a package-wide pool, started on
// demand up to the most workers asked for less one). A helper that is
// busy is not waited for: on a loaded machine the caller does its share
// rather than wait for a goroutine to be scheduled, and a step starts no
// goroutine and allocates nothing. Which goroutine runs a chunk does not
// change its bytes.

// chunkWork is a stage's work: chunk k of the step.
type chunkWork interface{ chunk(k int) }

type stage struct {
	work chunkWork
	n    int // chunks
	next atomic.Int64
	wg   sync.WaitGroup
}

var helpers struct {
	mu sync.Mutex
	n  atomic.Int64
	ch chan *stage
}

func helper(ch chan *stage) {
	for t := range ch {
		t.run()
		t.wg.Done()
	}
}

// run takes chunks until none is left.
func (t *stage) run() {
	for {
		k := int(t.next.Add(1) - 1)
		if k >= t.n {
			return
		}
		t.work.chunk(k)
	}
}

// runStage runs the n chunks of work on the caller and up to workers-1
// idle helpers, and returns when all are done.
func runStage(t *stage, work chunkWork, n, workers int) {
	t.work, t.n = work, n
	t.next.Store(0)
	if h := min(workers, n) - 1; h > 0 {
		if helpers.n.Load() < int64(h) {
			helpers.mu.Lock()
			if helpers.ch == nil {
				helpers.ch = make(chan *stage)
			}
			for helpers.n.Load() < int64(h) {
				go helper(helpers.ch)
				helpers.n.Add(1)
			}
			helpers.mu.Unlock()
		}
		for range h {
			t.wg.Add(1)
			select {
			case helpers.ch <- t:
			default:
				t.wg.Done() // none idle
			}
		}
	}
	t.run()
	t.wg.Wait()
	t.work = nil
}

// callsWork is chunked's stage: fn on each chunk call.
type callsWork struct {
	calls []Call
	fn    func(*Call)
}

func (c *callsWork) chunk(k int) { c.fn(&c.calls[k]) }

// samplesWork is forwardSamples' stage.
type samplesWork struct {
	n     *Net
	w     *workspace
	nodes []int
	B, nc int
}

func (s *samplesWork) chunk(k int) { s.n.forwardChunk(s.w, s.nodes, s.B, s.nc, k) }
