package nn

import (
	"runtime"
	"testing"
)

// TestGraphTrainNetWorkers: a training pass runs on the workers asked
// for, and on every processor (GOMAXPROCS) when asked for none or fewer.
func TestGraphTrainNetWorkers(t *testing.T) {
	for _, c := range []struct{ ask, want int }{{1, 1}, {3, 3}, {0, runtime.GOMAXPROCS(0)}, {-2, runtime.GOMAXPROCS(0)}} {
		tn, err := newGraphTrainNet(smallArch(), c.ask)
		if err != nil {
			t.Fatal(err)
		}
		if tn.net.Workers != c.want {
			t.Errorf("%d workers asked: %d, want %d", c.ask, tn.net.Workers, c.want)
		}
	}
}
