package script

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/traefik/yaegi/interp"

	"github.com/uaxai/uaxai/sdk"
)

var panicRE = regexp.MustCompile(`^(?:[^\s:]*:)?(\d+):(\d+): panic: (.*)\(\.\.\.\)$`)

// acquire returns an idle interpreter, or starts one if fewer than the
// allowed number are live.
func (s *Script) acquire(ctx context.Context) (*instance, error) {
	select {
	case in := <-s.idle:
		return in, nil
	default:
	}
	select {
	case in := <-s.idle:
		return in, nil
	case s.slots <- struct{}{}:
		return s.newInstance(ctx)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *Script) release(in *instance) { s.idle <- in }

// discard drops an interpreter that was stopped inside a call.
func (s *Script) discard(*instance) { <-s.slots }

// run executes prog in the instance under ctx, recovering panics. It
// reports whether the instance can be reused.
func (s *Script) run(ctx context.Context, in *instance, prog *interp.Program, fn string) (reusable bool, err error) {
	in.stderr.Reset()
	defer func() {
		if r := recover(); r != nil { // a panic that escaped yaegi's own recover
			err = &Error{Script: s.path, Msg: fmt.Sprintf("%s panicked: %v", fn, r)}
			reusable = false
		}
	}()
	_, err = in.in.ExecuteWithContext(ctx, prog)
	if ctx.Err() != nil {
		// Stopped inside the call (or it ended just as ctx did). yaegi's
		// goroutine may still be writing its own results and the exchange
		// area, so neither err nor in.io is read, and the interpreter is
		// dropped.
		return false, fmt.Errorf("script %s: %s stopped: %w", s.path, fn, ctx.Err())
	}
	if err == nil {
		return true, nil
	}
	var p interp.Panic
	if errors.As(err, &p) {
		e := &Error{Script: s.path, Msg: fmt.Sprintf("%s panicked: %v", fn, p.Value)}
		// yaegi logs the panicking frames, innermost first, as
		// "name:line:col: panic: pkg.Func(...)" where line:col is the first
		// statement of the function, not the statement that panicked.
		if first, _, _ := strings.Cut(in.stderr.String(), "\n"); first != "" {
			if m := panicRE.FindStringSubmatch(first); m != nil {
				e.Msg += fmt.Sprintf(" (in %s, whose body starts at line %s)", m[3], m[1])
			}
		}
		return true, e
	}
	return true, fmt.Errorf("script %s: %s: %w", s.path, fn, err)
}

// Check validates the recipe table with the script's Check function. A
// script without Check accepts no keys.
func (s *Script) Check(cfg sdk.Config) error {
	if !s.check {
		if len(cfg) == 0 {
			return nil
		}
		keys := make([]string, 0, len(cfg))
		for k := range cfg {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return fmt.Errorf("script %s: unknown key %q (the script defines no Check function, so it accepts no keys)", s.path, keys[0])
	}
	ctx := context.Background()
	if s.opts.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.opts.timeout)
		defer cancel()
	}
	in, err := s.acquire(ctx)
	if err != nil {
		return err
	}
	in.io.cfg = cfg.Clone()
	in.io.checkErr, in.io.checkCalled = nil, false
	reusable, err := s.run(ctx, in, in.check, "Check")
	if !reusable { // stopped inside the call: its goroutine may still touch in.io
		s.discard(in)
		return err
	}
	res, called := in.io.checkErr, in.io.checkCalled
	in.io.cfg = nil
	s.release(in)
	if err != nil {
		return err
	}
	if !called {
		return &Error{Script: s.path, Msg: "Check did not return"}
	}
	if res != nil {
		return fmt.Errorf("script %s: %s", s.path, res.Error())
	}
	return nil
}

// Summarise runs the script once for the whole batch: draws[i][s] is draw
// s of input i. It converts what the script returns into Results; the
// host checks batches and results as it checks any summary's, through
// sdk/driver (over gRPC, the script running in a plugin process).
func (s *Script) Summarise(ctx context.Context, draws [][][]float64, cfg sdk.Config) ([]sdk.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(draws) == 0 {
		return nil, nil
	}
	lens := make([]int, len(draws))
	for i, d := range draws {
		if len(d) == 0 {
			return nil, fmt.Errorf("script %s: input %d has no draws", s.path, i)
		}
		lens[i] = len(d[0])
		for k, r := range d {
			if len(r) != lens[i] {
				return nil, fmt.Errorf("script %s: input %d: draw %d has %d values, draw 0 has %d", s.path, i, k, len(r), lens[i])
			}
		}
	}
	in, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	h := in.io
	h.draws, h.cfg = copyDraws(draws), cfg.Clone()
	h.out, h.lo, h.hi, h.err, h.resultCalled = nil, nil, nil, nil, false
	reusable, err := s.run(ctx, in, in.summarise, s.fn)
	if !reusable { // stopped inside the call: its goroutine may still touch in.io
		s.discard(in)
		return nil, err
	}
	out, lo, hi, res, called := h.out, h.lo, h.hi, h.err, h.resultCalled
	h.draws, h.cfg, h.out, h.lo, h.hi, h.err = nil, nil, nil, nil, nil, nil
	s.release(in)
	if err != nil {
		return nil, err
	}
	if !called {
		return nil, &Error{Script: s.path, Msg: s.fn + " did not return"}
	}
	if res != nil {
		return nil, fmt.Errorf("script %s: %s: %w", s.path, s.fn, res)
	}
	// The host checks the results as it checks every summary's (count,
	// lengths, finite values, lower <= upper: sdk/driver); here they are
	// only converted.
	var results []sdk.Result
	switch s.info.Output {
	case sdk.OutputMap, sdk.OutputSet:
		results = make([]sdk.Result, len(out))
		for i, m := range out {
			if s.info.Output == sdk.OutputMap {
				results[i].Map = append([]float64(nil), m...)
				continue
			}
			set := make([]bool, len(m))
			for n, v := range m {
				if v != 0 && v != 1 {
					return nil, fmt.Errorf("script %s: %s: result for input %d, coordinate %d is %v; a set script returns 0 (out) or 1 (in)", s.path, s.fn, i, n, v)
				}
				set[n] = v == 1
			}
			results[i].Set = set
		}
	case sdk.OutputBand:
		if len(lo) != len(hi) {
			return nil, fmt.Errorf("script %s: %s returned %d lower and %d upper maps (want one of each per input)", s.path, s.fn, len(lo), len(hi))
		}
		results = make([]sdk.Result, len(lo))
		for i := range lo {
			results[i].Lower = append([]float64(nil), lo[i]...)
			results[i].Upper = append([]float64(nil), hi[i]...)
		}
	}
	return results, nil
}

func copyDraws(d [][][]float64) [][][]float64 {
	n := 0
	for _, in := range d {
		for _, r := range in {
			n += len(r)
		}
	}
	flat := make([]float64, 0, n)
	out := make([][][]float64, len(d))
	for i, in := range d {
		out[i] = make([][]float64, len(in))
		for k, r := range in {
			start := len(flat)
			flat = append(flat, r...)
			out[i][k] = flat[start:len(flat):len(flat)]
		}
	}
	return out
}
