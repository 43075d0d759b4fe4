package data

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/uaxai/uaxai/sdk/rng"
)

// Split is a named list of records.
type Split struct {
	Name    string
	Records []Record
	// Channels is C, the channels of every record: a record's X, D and
	// Event hold C rows of T samples, channel-major (X[c*T+t]). 0 means 1.
	Channels int
	// Classes names the labels (Classes[label]); nil: the 16 classes of
	// the one-phase generator, ClassNames.
	Classes []string
}

// C returns the split's channels, at least 1.
func (s Split) C() int { return max(s.Channels, 1) }

// ClassList returns the split's class names: Classes, or ClassNames when
// it is nil.
func (s Split) ClassList() []string {
	if s.Classes == nil {
		return ClassNames[:]
	}
	return s.Classes
}

// Generator is a synthetic source of labelled records: the one-phase PQD
// generator (PQD) and the three-phase one. Generate must be a pure
// function of (cfg, class, the stream of r), and must panic only for a
// class out of range or a cfg that does not Validate (programmer errors).
type Generator interface {
	// Name is the recipe's source name ("pqd", "pqd-3phase").
	Name() string
	// Classes names the classes; a class is an index into it.
	Classes() []string
	// Channels is C, the channels of each record.
	Channels() int
	// Generate draws one record of class from r: X, D and Event of
	// Channels() x cfg.N() values, channel-major.
	Generate(cfg Config, class int, r *rand.Rand) Record
}

// PQD is the one-phase generator of docs/spec/pqd-signals.md (Generate).
type PQD struct{}

// Name returns "pqd".
func (PQD) Name() string { return "pqd" }

// Classes returns ClassNames.
func (PQD) Classes() []string { return ClassNames[:] }

// Channels returns 1.
func (PQD) Channels() int { return 1 }

// Generate is the package's Generate.
func (PQD) Generate(cfg Config, class int, r *rand.Rand) Record { return Generate(cfg, class, r) }

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
	return makeSplit(ctx, PQD{}, cfg, seed, name, perClass, classes, runtime.GOMAXPROCS(0))
}

// MakeSplitOf is MakeSplit for the records of gen (nil or empty classes:
// all of gen's classes in order).
func MakeSplitOf(ctx context.Context, gen Generator, cfg Config, seed uint64, name string, perClass int, classes []int) (Split, error) {
	return makeSplit(ctx, gen, cfg, seed, name, perClass, classes, runtime.GOMAXPROCS(0))
}

func checkClasses(classes []int, names []string) ([]int, error) {
	nc := len(names)
	if len(classes) == 0 {
		all := make([]int, nc)
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	seen := make([]bool, nc)
	for j, c := range classes {
		if c < 0 || c >= nc {
			return nil, fmt.Errorf("data: classes[%d] = %d: want a class index in 0..%d", j, c, nc-1)
		}
		if seen[c] {
			return nil, fmt.Errorf("data: classes[%d] = %d (%s) is listed twice", j, c, names[c])
		}
		seen[c] = true
	}
	return classes, nil
}

func makeSplit(ctx context.Context, gen Generator, cfg Config, seed uint64, name string, perClass int, classes []int, workers int) (Split, error) {
	if err := cfg.Validate(); err != nil {
		return Split{}, err
	}
	if name == "" {
		return Split{}, fmt.Errorf("data: empty split name")
	}
	classes, err := checkClasses(classes, gen.Classes())
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
					recs[i] = gen.Generate(cfg, classes[i%len(classes)], rng.New(key))
					recs[i].Seed = key
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Split{}, fmt.Errorf("data: generating split %q: %w", name, err)
	}
	return newSplit(gen, name, recs), nil
}

// newSplit is a split of gen's records, with its channels and (for a
// generator other than PQD) its class names.
func newSplit(gen Generator, name string, recs []Record) Split {
	s := Split{Name: name, Records: recs}
	if _, one := gen.(PQD); !one {
		s.Channels, s.Classes = gen.Channels(), gen.Classes()
	}
	return s
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
	return MakePaperSplitsOf(ctx, PQD{}, cfg, seed, trainPerClass, valFrac, testSplits, testPerClass)
}

// MakePaperSplitsOf is MakePaperSplits for the records of gen, of all its
// classes.
func MakePaperSplitsOf(ctx context.Context, gen Generator, cfg Config, seed uint64, trainPerClass int, valFrac float64, testSplits, testPerClass int) (PaperSplits, error) {
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
	pool, err := MakeSplitOf(ctx, gen, cfg, seed, PoolName, trainPerClass, nil)
	if err != nil {
		return PaperSplits{}, err
	}
	nc := len(gen.Classes())
	isVal := make([]bool, len(pool.Records))
	for c := range nc {
		perm := rng.For(seed, PurposeSplit, PoolName, c, -1).Perm(trainPerClass)
		for _, j := range perm[:nVal] {
			isVal[j*nc+c] = true
		}
	}
	ps := PaperSplits{
		Train: newSplit(gen, "train", make([]Record, 0, len(pool.Records)-nVal*nc)),
		Val:   newSplit(gen, "val", make([]Record, 0, nVal*nc)),
	}
	for i, r := range pool.Records {
		if isVal[i] {
			ps.Val.Records = append(ps.Val.Records, r)
		} else {
			ps.Train.Records = append(ps.Train.Records, r)
		}
	}
	for k := range testSplits {
		s, err := MakeSplitOf(ctx, gen, cfg, seed, fmt.Sprintf("test-%d", k), testPerClass, nil)
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
