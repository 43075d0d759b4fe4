package data

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/uaxai/uaxai/sdk/rng"
)

// Split is a named list of records.
type Split struct {
	Name    string
	Records []Record
}

// Purpose strings of the random streams of this package (see sdk/rng).
const (
	// PurposeData keys the stream of one record: rng.Key(seed, PurposeData,
	// split, record, -1).
	PurposeData = "data"
	// PurposeSplit keys the train/val selection of class c of the training
	// pool: rng.Key(seed, PurposeSplit, PoolName, c, -1).
	PurposeSplit = "data-split"
	// PoolName is the split name of the training pool of MakePaperSplits.
	PoolName = "train"
)

// RecordKey returns the stream key of record i of split name:
// rng.Key(seed, "data", name, i, -1).
func RecordKey(seed uint64, name string, i int) uint64 {
	return rng.Key(seed, PurposeData, name, i, -1)
}

// genChunk is the number of records a worker takes at a time.
const genChunk = 16

// MakeSplit generates perClass records of every class in classes (nil or
// empty: all 16 classes in order).
//
// Records are interleaved: record i has class classes[i % len(classes)] and
// is Generate(cfg, class, rng.For(seed, "data", name, i, -1)), with Seed set
// to that key. So a split is a pure function of (cfg, seed, name, classes),
// a split with fewer records a class is a prefix of one with more, and
// every prefix is class-balanced. The work is spread over GOMAXPROCS
// goroutines; the result does not depend on their number. MakeSplit stops
// and returns an error wrapping ctx.Err() when ctx is done.
func MakeSplit(ctx context.Context, cfg Config, seed uint64, name string, perClass int, classes []int) (Split, error) {
	return makeSplit(ctx, cfg, seed, name, perClass, classes, runtime.GOMAXPROCS(0))
}

func checkClasses(classes []int) ([]int, error) {
	if len(classes) == 0 {
		all := make([]int, NumClasses)
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	var seen [NumClasses]bool
	for j, c := range classes {
		if c < 0 || c >= NumClasses {
			return nil, fmt.Errorf("data: classes[%d] = %d: want a class index in 0..%d", j, c, NumClasses-1)
		}
		if seen[c] {
			return nil, fmt.Errorf("data: classes[%d] = %d (%s) is listed twice", j, c, ClassNames[c])
		}
		seen[c] = true
	}
	return classes, nil
}

func makeSplit(ctx context.Context, cfg Config, seed uint64, name string, perClass int, classes []int, workers int) (Split, error) {
	if err := cfg.Validate(); err != nil {
		return Split{}, err
	}
	if name == "" {
		return Split{}, fmt.Errorf("data: empty split name")
	}
	classes, err := checkClasses(classes)
	if err != nil {
		return Split{}, err
	}
	const maxRecords = 1 << 26
	if perClass < 1 || perClass > maxRecords/len(classes) {
		return Split{}, fmt.Errorf("data: split %q: perClass = %d: want 1..%d records a class", name, perClass, maxRecords/len(classes))
	}
	total := perClass * len(classes)
	recs := make([]Record, total)
	if workers < 1 {
		workers = 1
	}
	workers = min(workers, (total+genChunk-1)/genChunk)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				lo := int(next.Add(genChunk)) - genChunk
				if lo >= total {
					return
				}
				for i := lo; i < min(lo+genChunk, total); i++ {
					key := RecordKey(seed, name, i)
					recs[i] = Generate(cfg, classes[i%len(classes)], rng.New(key))
					recs[i].Seed = key
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Split{}, fmt.Errorf("data: generating split %q: %w", name, err)
	}
	return Split{Name: name, Records: recs}, nil
}

// PaperSplits are the splits of the paper's recipes.
type PaperSplits struct {
	Train, Val Split
	Tests      []Split
}

// MakePaperSplits generates the paper's splits: a training pool of
// trainPerClass records of each of the 16 classes (MakeSplit with name
// "train"), divided into Train ("train") and Val ("val"), and testSplits
// test splits "test-0", "test-1", ... of testPerClass records a class
// (MakeSplit with those names).
//
// The division is stratified: of class c, round(valFrac*trainPerClass)
// records go to Val, chosen by the permutation r.Perm(trainPerClass) of
// r = rng.For(seed, "data-split", "train", c, -1) (its first entries index
// the class's pool records in pool order). Train and Val keep pool order.
// Records keep the Seed of their pool stream, so they can be regenerated.
// With the paper's 900 a class and valFrac 0.1: 12,960 train and 1,440
// validation records.
func MakePaperSplits(ctx context.Context, cfg Config, seed uint64, trainPerClass int, valFrac float64, testSplits, testPerClass int) (PaperSplits, error) {
	if !(valFrac >= 0 && valFrac < 1) {
		return PaperSplits{}, fmt.Errorf("data: valFrac = %v: want a fraction in [0, 1)", valFrac)
	}
	if trainPerClass < 1 {
		return PaperSplits{}, fmt.Errorf("data: trainPerClass = %d: want at least 1", trainPerClass)
	}
	nVal := int(math.Round(valFrac * float64(trainPerClass)))
	if nVal >= trainPerClass {
		return PaperSplits{}, fmt.Errorf("data: valFrac = %v of trainPerClass = %d leaves no training record: want round(valFrac*trainPerClass) < trainPerClass", valFrac, trainPerClass)
	}
	if testSplits < 0 {
		return PaperSplits{}, fmt.Errorf("data: testSplits = %d: want 0 or more", testSplits)
	}
	if testSplits > 0 && testPerClass < 1 {
		return PaperSplits{}, fmt.Errorf("data: testPerClass = %d: want at least 1", testPerClass)
	}
	pool, err := MakeSplit(ctx, cfg, seed, PoolName, trainPerClass, nil)
	if err != nil {
		return PaperSplits{}, err
	}
	isVal := make([]bool, len(pool.Records))
	for c := range NumClasses {
		perm := rng.For(seed, PurposeSplit, PoolName, c, -1).Perm(trainPerClass)
		for _, j := range perm[:nVal] {
			isVal[j*NumClasses+c] = true
		}
	}
	ps := PaperSplits{
		Train: Split{Name: "train", Records: make([]Record, 0, len(pool.Records)-nVal*NumClasses)},
		Val:   Split{Name: "val", Records: make([]Record, 0, nVal*NumClasses)},
	}
	for i, r := range pool.Records {
		if isVal[i] {
			ps.Val.Records = append(ps.Val.Records, r)
		} else {
			ps.Train.Records = append(ps.Train.Records, r)
		}
	}
	for k := range testSplits {
		s, err := MakeSplit(ctx, cfg, seed, fmt.Sprintf("test-%d", k), testPerClass, nil)
		if err != nil {
			return PaperSplits{}, err
		}
		ps.Tests = append(ps.Tests, s)
	}
	return ps, nil
}

// Mask implements the paper's Definition 4.1, mask[n] = |d[n]| > eps, into
// dst (grown if its capacity is short) and returns dst[:len(d)].
func Mask(dst []bool, d []float64, eps float64) []bool {
	dst = grow(dst, len(d))
	for i, v := range d {
		dst[i] = math.Abs(v) > eps
	}
	return dst
}

// EventMask copies the event indicator into dst (grown if its capacity is
// short) and returns dst[:len(event)]: the mask of recipe option
// mask = "event".
func EventMask(dst []bool, event []bool) []bool {
	dst = grow(dst, len(event))
	copy(dst, event)
	return dst
}

func grow(dst []bool, n int) []bool {
	if cap(dst) < n {
		return make([]bool, n)
	}
	return dst[:n]
}
