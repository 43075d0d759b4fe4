package data

import (
	"fmt"
	"unsafe"

	"github.com/uaxai/uaxai/internal/checked"
)

// DefaultMaxGenerateBytes bounds the memory that GenerateDir holds for
// its records (GenerateBytes) when GenerateOptions.MaxBytes is 0: 8 GiB.
// The paper's splits (900 records a class for the pool, 5 test splits of
// 100) hold about 0.25 GB.
const DefaultMaxGenerateBytes = 8 << 30

// paramsBytes is what a record's map of drawn parameters holds: at most
// 16 float64 values by name, a few hundred bytes; a generous allowance.
const paramsBytes = 512

// recordBytes is the size of a Record value in a split's slice.
const recordBytes = int(unsafe.Sizeof(Record{}))

// GenerateBytes is the memory GenerateDir holds for the records of opt
// before it writes the first one, what its bound (MaxBytes) compares:
// every record's X and D (C x N float64 each), its Event (C x N bools)
// with an eighth more (what the allocator's size classes may add), its
// Record in its split's slice and its drawn parameters
// (paramsBytes); with opt.Paper, also the training and validation splits'
// slices of the pool's Records and its mark of each. records is the
// number of records. A count beyond int is -1, and ok false (also for a
// negative count or an invalid config: the generator reports those).
func GenerateBytes(opt GenerateOptions) (bytes, records int, ok bool) {
	gen := opt.Generator
	if gen == nil {
		gen = PQD{}
	}
	if opt.Config.Validate() != nil || opt.PerClass < 0 || opt.TestSplits < 0 || opt.TestPerClass < 0 {
		return -1, -1, false
	}
	nc := len(gen.Classes())
	pool, ok1 := checked.Prod(opt.PerClass, nc)
	tests, ok2 := 0, true
	if opt.Paper {
		tests, ok2 = checked.Prod(opt.TestSplits, opt.TestPerClass, nc)
	}
	records, ok3 := checked.Sum(pool, tests)
	if !(ok1 && ok2 && ok3) {
		return -1, -1, false
	}
	per, ok := checked.Prod(gen.Channels(), opt.Config.N(), 8+8+1)
	if ok {
		per, ok = checked.Sum(per, per/8, recordBytes, paramsBytes) // per/8: the allocator's rounding up to its size classes
	}
	if ok {
		bytes, ok = checked.Prod(records, per)
	}
	if ok && opt.Paper {
		var split int
		split, ok = checked.Prod(pool, recordBytes+1) // train and val: a copy of each pool Record; isVal
		if ok {
			bytes, ok = checked.Sum(bytes, split)
		}
	}
	if !ok {
		return -1, records, false
	}
	return bytes, records, true
}

// MemoryError is GenerateDir's refusal of a dataset whose records would
// hold more memory than its bound.
type MemoryError struct {
	Records  int // records generated; -1: beyond int
	Channels int // C of each
	Samples  int // N of each channel
	Bytes    int // GenerateBytes; -1: beyond int
	Bound    int // the bound it is above
}

func (e *MemoryError) Error() string {
	held, recs := "more than 2^63 bytes", "more than 2^63"
	if e.Bytes >= 0 {
		held = fmt.Sprintf("%d bytes (%.1f GiB)", e.Bytes, float64(e.Bytes)/(1<<30))
	}
	if e.Records >= 0 {
		recs = fmt.Sprint(e.Records)
	}
	return fmt.Sprintf("data: %s records of %d channel(s) x %d samples (each a float64 waveform and disturbance, an event mask, its parameters) hold %s in memory before they are written, above the bound of %d bytes (%.1f GiB)",
		recs, e.Channels, e.Samples, held, e.Bound, float64(e.Bound)/(1<<30))
}

// checkGenerateBytes refuses opt, of gen's records, when GenerateBytes
// is above its bound.
func checkGenerateBytes(gen Generator, opt GenerateOptions) error {
	bound := opt.MaxBytes
	if bound <= 0 {
		bound = DefaultMaxGenerateBytes
	}
	if opt.Config.Validate() != nil || opt.PerClass < 1 || opt.TestSplits < 0 || opt.TestPerClass < 0 {
		return nil // the generator's checks say what is wrong
	}
	opt.Generator = gen
	bytes, records, ok := GenerateBytes(opt)
	if ok && bytes <= bound {
		return nil
	}
	return &MemoryError{Records: records, Channels: gen.Channels(), Samples: opt.Config.N(), Bytes: bytes, Bound: bound}
}
