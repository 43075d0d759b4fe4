package check

import (
	"errors"
	"fmt"
	"math"
	"runtime/debug"
)

// Finite reports whether v is neither NaN nor an infinity.
func Finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Recovered turns a panic of a plugin's method into an error that holds
// the panic value and the stack.
func Recovered(id, method string, r any) error {
	return fmt.Errorf("%s: %s: panic: %v\n%s", id, method, r, debug.Stack())
}

// Batch checks a batch of explainer inputs: len(x) = B*inputLen for B =
// len(targets) >= 1, targets in [0, classes), and one seed per input (or
// none, for an explainer that is not stochastic).
func Batch(inputLen, classes int, x []float32, targets []int, seeds []uint64, stochastic bool) error {
	if inputLen <= 0 {
		return fmt.Errorf("bad request: model input length %d", inputLen)
	}
	b := len(targets)
	if b == 0 {
		return errors.New("bad request: empty batch (no targets)")
	}
	if len(x) != b*inputLen {
		return fmt.Errorf("bad request: x has %d values, want %d (%d targets x input length %d)", len(x), b*inputLen, b, inputLen)
	}
	for i, t := range targets {
		if t < 0 || t >= classes {
			return fmt.Errorf("bad request: input %d: target class %d out of range 0..%d", i, t, classes-1)
		}
	}
	switch {
	case len(seeds) == b:
	case len(seeds) == 0 && !stochastic:
	case stochastic:
		return fmt.Errorf("bad request: a stochastic explainer needs one seed per input: %d seeds for %d inputs", len(seeds), b)
	default:
		return fmt.Errorf("bad request: %d seeds for %d inputs (want one per input, or none)", len(seeds), b)
	}
	return nil
}

// Draws checks a summary's input: for each input, S >= max(1, minDraws)
// draws of the same length N >= 1.
func Draws(draws [][][]float64, minDraws int) error {
	if len(draws) == 0 {
		return errors.New("bad request: empty batch (no inputs)")
	}
	for i, d := range draws {
		if len(d) == 0 {
			return fmt.Errorf("bad request: input %d has no draws", i)
		}
		if len(d) < minDraws {
			return fmt.Errorf("bad request: input %d has %d draws; the summary needs at least %d", i, len(d), minDraws)
		}
		n := len(d[0])
		if n == 0 {
			return fmt.Errorf("bad request: input %d: draw 0 is empty", i)
		}
		for s, r := range d {
			if len(r) != n {
				return fmt.Errorf("bad request: input %d: draw %d has %d values, draw 0 has %d (want S x N)", i, s, len(r), n)
			}
		}
	}
	return nil
}

// Dataset checks a dataset's shape: n rows of length l in x, and one
// label per row or none.
func Dataset(name string, x []float32, y []int, n, l int) error {
	if n < 0 || l < 0 || len(x) != n*l {
		return fmt.Errorf("bad request: %s set: %d values for %d rows of %d", name, len(x), n, l)
	}
	if len(y) != n && len(y) != 0 {
		return fmt.Errorf("bad request: %s set: %d labels for %d rows", name, len(y), n)
	}
	return nil
}

// MaxParts is the most parts a parted fit may have (sdk.Parted): far more
// than any ensemble, and few enough that a host can list them.
const MaxParts = 100000

// Part checks the part a fit request asks for: parts = 0 is a whole fit
// (part must be 0 then), and parts in 1..MaxParts asks for part
// 0 <= part < parts.
func Part(part, parts int64) error {
	// Ifs, not a switch: gremlins sees no coverage of case expressions.
	if parts < 0 || parts > MaxParts {
		return fmt.Errorf("bad request: parts = %d (accepted: 0 for a whole fit, or 1..%d)", parts, MaxParts)
	}
	if parts == 0 && part != 0 {
		return fmt.Errorf("bad request: part = %d of a whole fit (parts = 0; set parts to ask for a part)", part)
	}
	if parts > 0 && (part < 0 || part >= parts) {
		return fmt.Errorf("bad request: part = %d of %d parts (accepted: 0..%d)", part, parts, parts-1)
	}
	return nil
}

// Replicate checks the replicate a fit request belongs to: r >= 0
// (0 is the run without replicates), and an int on this platform.
func Replicate(r int64) error {
	if r < 0 || int64(int(r)) != r {
		return fmt.Errorf("bad request: replicate = %d (accepted: 0 for the run without replicates, or a replicate's index 1, 2, ...)", r)
	}
	return nil
}

// Parts checks a posterior's answer to Parts: 0 <= k <= MaxParts.
func Parts(k int64) error {
	if k < 0 || k > MaxParts {
		return fmt.Errorf("answered %d parts (accepted: 0..%d; 0 or 1 for a fit that is not parted)", k, MaxParts)
	}
	return nil
}

// Unparted checks a fit request to a posterior that is not parted (it
// does not implement sdk.Parted): it may not ask for a part, which the
// posterior would answer with the whole fit passed off as one part.
func Unparted(part, parts int64) error {
	if parts == 0 {
		return nil
	}
	return fmt.Errorf("bad request: part %d of %d parts asked of a posterior whose fit is not parted (it does not implement sdk.Parted; send parts = 0)", part, parts)
}
