package script

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
)

const examplePath = "../../recipes/scripts/trimmed_mean.go"

// write puts a script into a temporary directory and returns its path.
func write(t *testing.T, name, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// mustLoad loads a script and drives it as the host does, through
// driver.LocalSummary, whose checks are the same as for plugin summaries.
func mustLoad(t *testing.T, path string, opts ...Option) sdk.Summary {
	t.Helper()
	s, err := Load(path, append([]Option{WithOutput(io.Discard)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	checked, err := driver.LocalSummary(s)
	if err != nil {
		t.Fatal(err)
	}
	return checked
}

// lineOf returns the 1-based line of the first line of src containing marker.
func lineOf(t *testing.T, src, marker string) int {
	t.Helper()
	for i, l := range strings.Split(src, "\n") {
		if strings.Contains(l, marker) {
			return i + 1
		}
	}
	t.Fatalf("marker %q not in source", marker)
	return 0
}

func wantErr(t *testing.T, err error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one mentioning %q", fragments)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not mention %q", err, f)
		}
	}
}

// batch makes B inputs of S draws of N values (S and N vary per input).
func batch(r *rand.Rand, b int) [][][]float64 {
	out := make([][][]float64, b)
	for i := range out {
		s, n := 1+r.IntN(12), 1+r.IntN(50)
		out[i] = make([][]float64, s)
		for k := range out[i] {
			out[i][k] = make([]float64, n)
			for j := range out[i][k] {
				out[i][k][j] = r.NormFloat64()
				if r.IntN(10) == 0 {
					out[i][k][j] = float64(r.IntN(3)) // ties
				}
			}
		}
	}
	return out
}

// trimmedMean is scipy.stats.trim_mean along the draws: cut
// k = floor(trim*S) values from each end of every coordinate.
func trimmedMean(draws [][]float64, trim float64) []float64 {
	s := len(draws)
	k := int(trim * float64(s))
	out := make([]float64, len(draws[0]))
	for n := range out {
		col := make([]float64, s)
		for i := range col {
			col[i] = draws[i][n]
		}
		sort.Float64s(col)
		var sum float64
		for _, v := range col[k : s-k] {
			sum += v
		}
		out[n] = sum / float64(s-2*k)
	}
	return out
}

func TestTrimmedMeanExample(t *testing.T) {
	s := mustLoad(t, examplePath)
	info := s.Info()
	if info.ID != "summary.trimmed_mean" || info.Version != "0.1.0" || info.Output != sdk.OutputMap {
		t.Errorf("info %+v", info)
	}
	if !strings.HasPrefix(info.Summary, "Package trimmed is the coordinatewise trimmed mean") {
		t.Errorf("summary %q", info.Summary)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, trim := range []float64{0, 0.1, 0.25, 0.49} {
		cfg := sdk.Config{"trim": trim}
		if trim == 0.1 {
			cfg = sdk.Config{} // the default
		}
		if err := s.Check(cfg); err != nil {
			t.Fatal(err)
		}
		draws := batch(r, 9)
		orig := copyDraws(draws)
		res, err := s.Summarise(context.Background(), draws, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != len(draws) {
			t.Fatalf("%d results for %d inputs", len(res), len(draws))
		}
		for i := range draws {
			want := trimmedMean(draws[i], trim)
			got := res[i].Map
			if len(got) != len(want) || res[i].Set != nil || res[i].Lower != nil {
				t.Fatalf("trim %v input %d: result %+v", trim, i, res[i])
			}
			for n := range want {
				if math.Abs(got[n]-want[n]) > 1e-12*(1+math.Abs(want[n])) {
					t.Fatalf("trim %v input %d coord %d: got %v want %v", trim, i, n, got[n], want[n])
				}
			}
		}
		for i := range draws { // the script sorted its own copy
			for k := range draws[i] {
				for n := range draws[i][k] {
					if draws[i][k][n] != orig[i][k][n] {
						t.Fatal("Summarise changed the caller's draws")
					}
				}
			}
		}
	}
}

func TestExampleCheck(t *testing.T) {
	s := mustLoad(t, examplePath)
	for _, ok := range []sdk.Config{nil, {"trim": 0.0}, {"trim": int64(0)}, {"trim": 0.3}} {
		if err := s.Check(ok); err != nil {
			t.Errorf("Check(%v): %v", ok, err)
		}
	}
	wantErr(t, s.Check(sdk.Config{"trm": 0.1}), "trimmed_mean.go", `unknown key "trm"`, "accepted: trim")
	wantErr(t, s.Check(sdk.Config{"trim": 0.5}), `key "trim"`, "outside [0, 0.5)")
	wantErr(t, s.Check(sdk.Config{"trim": "a lot"}), `key "trim"`, "want a number")
	_, err := s.Summarise(context.Background(), [][][]float64{{{1}}}, sdk.Config{"trim": -1.0})
	wantErr(t, err, "trimmed_mean.go", "Summarise", "outside")
}

func TestForbiddenImports(t *testing.T) {
	for _, pkg := range []string{"os", "os/exec", "net", "unsafe", "syscall", "io/ioutil", "reflect", "runtime", "math/rand", "slices"} {
		src := "package evil\n\nimport (\n\t\"math\"\n\t\"" + pkg + "\"\n)\n\nvar _ = math.Pi\n"
		p := write(t, "evil.go", src)
		_, err := Load(p)
		wantErr(t, err, "script "+p, fmt.Sprintf("line %d", lineOf(t, src, `"`+pkg+`"`)),
			fmt.Sprintf("import %q is not allowed", pkg), "accepted: errors, fmt, math, sort, strconv, strings, github.com/uaxai/uaxai/sdk")
	}
}

func TestGoStatementRefused(t *testing.T) {
	src := `package g

func Summarise(d [][][]float64, cfg map[string]interface{}) ([][]float64, error) {
	go func() { panic("boom") }()
	return nil, nil
}
`
	_, err := Load(write(t, "g.go", src))
	wantErr(t, err, "g.go", fmt.Sprintf("line %d", lineOf(t, src, "go func")), "go statements are not allowed")
}

const echo = `
func echo(d [][][]float64) [][]float64 {
	out := make([][]float64, len(d))
	for i := range d {
		out[i] = make([]float64, len(d[i][0]))
		copy(out[i], d[i][0])
	}
	return out
}
`

func TestPanicIsAnError(t *testing.T) {
	src := `package p

func Check(cfg map[string]interface{}) error {
	var m map[string]int
	m["x"] = 1 // check panics
	return nil
}

func Summarise(d [][][]float64, cfg map[string]interface{}) ([][]float64, error) {
	if cfg["boom"] == true {
		panic("custom boom")
	}
	i := len(d) + 3
	return [][]float64{d[i][0]}, nil // index out of range
}
`
	p := write(t, "panicky.go", src)
	s := mustLoad(t, p)
	_, err := s.Summarise(context.Background(), [][][]float64{{{1, 2}}}, nil)
	body := fmt.Sprintf("in p.Summarise, whose body starts at line %d", lineOf(t, src, `if cfg["boom"]`))
	wantErr(t, err, "script "+p, "Summarise panicked", "index out of range", body)
	_, err = s.Summarise(context.Background(), [][][]float64{{{1, 2}}}, sdk.Config{"boom": true})
	wantErr(t, err, "script "+p, "Summarise panicked: custom boom", body)
	wantErr(t, s.Check(nil), "script "+p, "Check panicked", "nil map", fmt.Sprintf("in p.Check, whose body starts at line %d", lineOf(t, src, "var m map")))
	// The interpreter survives a panic.
	if _, err := s.Summarise(context.Background(), [][][]float64{{{1, 2}}}, sdk.Config{"boom": true}); err == nil {
		t.Error("no error after a panic")
	}

	// A panic while loading (a global's initialiser) is an error too.
	_, err = Load(write(t, "initpanic.go", "package q\n\nvar x = []int{}[1]\n"+echo))
	wantErr(t, err, "initpanic.go")
}

func TestLoadErrorsNameTheLine(t *testing.T) {
	syntax := "package s\n\nfunc Summarise(d [][][]float64, cfg map[string]interface{}) ([][]float64, error) {\n\treturn nil, nil +\n}\n"
	p := write(t, "syntax.go", syntax)
	_, err := Load(p)
	wantErr(t, err, "script "+p, fmt.Sprintf("line %d, column 1", lineOf(t, syntax, "return nil, nil +")+1), "syntax error")
	var se *Error
	if !errors.As(err, &se) || se.Line == 0 {
		t.Errorf("want an *Error with a line, got %#v", err)
	}

	undef := "package u\n\nfunc Summarise(d [][][]float64, cfg map[string]interface{}) ([][]float64, error) {\n\treturn nil, undefinedThing\n}\n"
	p = write(t, "undef.go", undef)
	_, err = Load(p)
	wantErr(t, err, "script "+p, fmt.Sprintf("line %d", lineOf(t, undef, "undefinedThing")), "undefined")

	sig := "package w\n\nfunc Summarise(d [][]float64, cfg map[string]interface{}) ([]float64, error) { return nil, nil }\n"
	_, err = Load(write(t, "sig.go", sig))
	wantErr(t, err, "Summarise has type", "want func Summarise(draws [][][]float64")

	_, err = Load(write(t, "nofunc.go", "package n\n\nconst Output = \"band\"\n"+echo+
		"func Summarise(d [][][]float64, cfg map[string]interface{}) ([][]float64, error) { return echo(d), nil }\n"))
	wantErr(t, err, `Output "band" needs func SummariseBand`)

	_, err = Load(write(t, "out.go", "package o\n\nconst Output = \"cloud\"\n"))
	wantErr(t, err, `Output = "cloud" is not accepted`, "map, set, band")

	_, err = Load(write(t, "id.go", "package o\n\nconst ID = 3\n"))
	wantErr(t, err, "ID must be a string constant")

	_, err = Load(write(t, "m.go", "package main\n\nfunc main() {}\n"))
	wantErr(t, err, "m.go", "line 1", "package main is not accepted")

	_, err = Load(filepath.Join(t.TempDir(), "missing.go"))
	wantErr(t, err, "missing.go")
}

func TestResultChecks(t *testing.T) {
	src := `package r

import "math"

func Summarise(d [][][]float64, cfg map[string]interface{}) ([][]float64, error) {
	out := make([][]float64, len(d))
	for i := range d {
		out[i] = make([]float64, len(d[i][0]))
	}
	mode, _ := cfg["mode"].(string)
	switch mode {
	case "short":
		out[2] = out[2][:1]
	case "nan":
		out[1][3] = math.NaN()
	case "inf":
		out[0][0] = math.Inf(1)
	case "count":
		out = out[:1]
	}
	return out, nil
}
`
	s := mustLoad(t, write(t, "shapes.go", src))
	in := [][][]float64{{{1, 2, 3, 4}}, {{1, 2, 3, 4}, {5, 6, 7, 8}}, {{1, 2}}}
	if _, err := s.Summarise(context.Background(), in, nil); err != nil {
		t.Fatal(err)
	}
	_, err := s.Summarise(context.Background(), in, sdk.Config{"mode": "short"})
	wantErr(t, err, "summary.", "input 2: map has 1 values, want 2")
	_, err = s.Summarise(context.Background(), in, sdk.Config{"mode": "nan"})
	wantErr(t, err, "summary.", "input 1: map value 3 is NaN", "finite")
	_, err = s.Summarise(context.Background(), in, sdk.Config{"mode": "inf"})
	wantErr(t, err, "input 0: map value 0 is +Inf")
	_, err = s.Summarise(context.Background(), in, sdk.Config{"mode": "count"})
	wantErr(t, err, "returned 1 results for a batch of 3 inputs")
	// Bad input is reported before the script runs.
	_, err = s.Summarise(context.Background(), [][][]float64{{{1, 2}, {3}}}, nil)
	wantErr(t, err, "input 0: draw 1 has 1 values")
	_, err = s.Summarise(context.Background(), [][][]float64{{}}, nil)
	wantErr(t, err, "input 0 has no draws")
	_, err = s.Summarise(context.Background(), nil, nil)
	wantErr(t, err, "empty batch")
	// The script's own error is passed on.
	e := mustLoad(t, write(t, "err.go", "package e\n\nimport \"errors\"\n\nfunc Summarise(d [][][]float64, cfg map[string]interface{}) ([][]float64, error) {\n\treturn nil, errors.New(\"no luck\")\n}\n"))
	_, err = e.Summarise(context.Background(), in, nil)
	wantErr(t, err, "err.go", "Summarise: no luck")
}

func TestSetOutput(t *testing.T) {
	// The agreement set of the draws: coordinates where every draw is > tau.
	src := `package agree

import "github.com/uaxai/uaxai/sdk"

const Output = sdk.OutputSet

func Check(cfg map[string]interface{}) error { return sdk.Config(cfg).Only("tau") }

func Summarise(d [][][]float64, cfg map[string]interface{}) ([][]float64, error) {
	tau, err := sdk.Config(cfg).Float("tau", 0)
	if err != nil {
		return nil, err
	}
	out := make([][]float64, len(d))
	for i := range d {
		out[i] = make([]float64, len(d[i][0]))
		for n := range out[i] {
			in := 1.0
			for s := range d[i] {
				if !(d[i][s][n] > tau) {
					in = 0
				}
			}
			out[i][n] = in
		}
	}
	if cfg["half"] == true {
		out[0][0] = 0.5
	}
	return out, nil
}
`
	s := mustLoad(t, write(t, "agree.go", src))
	if info := s.Info(); info.Output != sdk.OutputSet || info.ID != "summary.script-agree" || info.Version != "0.0.0" {
		t.Errorf("info %+v", info)
	}
	in := [][][]float64{{{1, 0.5, 2, -1}, {2, 0.1, 0.2, 3}}, {{0.3}}}
	res, err := s.Summarise(context.Background(), in, sdk.Config{"tau": 0.15})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]bool{{true, false, true, false}, {true}}
	for i := range want {
		if fmt.Sprint(res[i].Set) != fmt.Sprint(want[i]) || res[i].Map != nil {
			t.Errorf("input %d: %+v, want set %v", i, res[i], want[i])
		}
	}
	_, err = s.Summarise(context.Background(), in, sdk.Config{"half": true})
	wantErr(t, err, "input 0, coordinate 0 is 0.5", "0 (out) or 1 (in)")
}

func TestBandOutput(t *testing.T) {
	// The order-statistic band [min, max] of the draws.
	src := `package minmax

const (
	ID     = "minmax"
	Output = "band"
)

func SummariseBand(d [][][]float64, cfg map[string]interface{}) (lower, upper [][]float64, err error) {
	lower = make([][]float64, len(d))
	upper = make([][]float64, len(d))
	for i := range d {
		n := len(d[i][0])
		lower[i] = make([]float64, n)
		upper[i] = make([]float64, n)
		for j := 0; j < n; j++ {
			lo, hi := d[i][0][j], d[i][0][j]
			for s := range d[i] {
				if v := d[i][s][j]; v < lo {
					lo = v
				} else if v > hi {
					hi = v
				}
			}
			lower[i][j], upper[i][j] = lo, hi
		}
	}
	if cfg["swap"] == true {
		l, u := upper, lower
		return l, u, nil
	}
	return lower, upper, nil
}

func Check(cfg map[string]interface{}) error { return nil }
`
	s := mustLoad(t, write(t, "minmax.go", src))
	if info := s.Info(); info.Output != sdk.OutputBand || info.ID != "summary.minmax" {
		t.Errorf("info %+v", info)
	}
	in := batch(rand.New(rand.NewPCG(3, 4)), 5)
	res, err := s.Summarise(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		for n := range in[i][0] {
			lo, hi := math.Inf(1), math.Inf(-1)
			for k := range in[i] {
				lo, hi = math.Min(lo, in[i][k][n]), math.Max(hi, in[i][k][n])
			}
			if res[i].Lower[n] != lo || res[i].Upper[n] != hi {
				t.Fatalf("input %d coord %d: [%v, %v], want [%v, %v]", i, n, res[i].Lower[n], res[i].Upper[n], lo, hi)
			}
		}
	}
	_, err = s.Summarise(context.Background(), [][][]float64{{{1, 2}, {3, 2}}}, sdk.Config{"swap": true})
	wantErr(t, err, "input 0: band index 0 has lower 3 > upper 1")
}

const counter = `package counter

var calls int

// Summarise sets every coordinate to the number of calls so far.
func Summarise(d [][][]float64, cfg map[string]interface{}) ([][]float64, error) {
	calls++
	out := make([][]float64, len(d))
	for i := range d {
		out[i] = make([]float64, len(d[i][0]))
		for n := range out[i] {
			out[i][n] = float64(calls)
		}
	}
	if cfg["loop"] == true {
		for {
			calls++
		}
	}
	return out, nil
}
`

func TestOneCallPerBatch(t *testing.T) {
	s := mustLoad(t, write(t, "counter.go", counter))
	in := batch(rand.New(rand.NewPCG(5, 6)), 17)
	for call := 1; call <= 4; call++ {
		res, err := s.Summarise(context.Background(), in, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range res {
			for _, v := range res[i].Map {
				if v != float64(call) {
					t.Fatalf("Summarise %d of a batch of %d: the script counted %v calls", call, len(in), v)
				}
			}
		}
	}
}

func TestNoCheckAcceptsNoKeys(t *testing.T) {
	s := mustLoad(t, write(t, "counter.go", counter))
	if err := s.Check(nil); err != nil {
		t.Error(err)
	}
	wantErr(t, s.Check(sdk.Config{"b": 1, "a": 2}), "counter.go", `unknown key "a"`, "no Check function")
}

func TestContext(t *testing.T) {
	s := mustLoad(t, write(t, "counter.go", counter))
	in := [][][]float64{{{1, 2}}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Summarise(ctx, in, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
	// Loading is bounded too.
	_, err := Load(write(t, "slow.go", "package slow\n\nvar x = forever()\n\nfunc forever() int {\n\tfor {\n\t}\n}\n"),
		WithTimeout(100*time.Millisecond))
	wantErr(t, err, "slow.go", "loading stopped")
	if raceDetector {
		// yaegi's ExecuteWithContext and EvalPathWithContext write their
		// named results from their goroutine after returning ctx.Err(): a
		// race inside yaegi that Script never reads, but the detector
		// reports it.
		t.Skip("stopping a running script races inside yaegi")
	}
	// A script that loops forever is stopped by the context.
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = s.Summarise(ctx, in, sdk.Config{"loop": true})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "counter.go") {
		t.Errorf("looping script: %v", err)
	}
	// The script loops for ever: only the context stops it, and a loaded
	// machine may take seconds to.
	if d := time.Since(start); d > time.Minute {
		t.Errorf("stopping took %v", d)
	}
	// The stopped interpreter was replaced by a fresh one: the count restarts.
	res, err := s.Summarise(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Map[0] != 1 {
		t.Errorf("after a stop: count %v, want 1 (a fresh interpreter)", res[0].Map[0])
	}
}

func TestConcurrentInstances(t *testing.T) {
	s := mustLoad(t, examplePath, WithInstances(2))
	r := rand.New(rand.NewPCG(7, 8))
	inputs := make([][][][]float64, 6)
	for i := range inputs {
		inputs[i] = batch(r, 3)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(inputs))
	for g := range inputs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.Summarise(context.Background(), inputs[g], sdk.Config{"trim": 0.2})
			if err != nil {
				errs[g] = err
				return
			}
			for i := range res {
				want := trimmedMean(inputs[g][i], 0.2)
				for n := range want {
					if math.Abs(res[i].Map[n]-want[n]) > 1e-12*(1+math.Abs(want[n])) {
						errs[g] = fmt.Errorf("batch %d input %d coord %d: %v want %v", g, i, n, res[i].Map[n], want[n])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestPrintGoesToOutput(t *testing.T) {
	var buf strings.Builder
	src := "package pr\n\nimport \"fmt\"\n" + echo + "\nfunc Summarise(d [][][]float64, cfg map[string]interface{}) ([][]float64, error) {\n\tfmt.Println(\"hello from the script\")\n\treturn echo(d), nil\n}\n"
	s, err := Load(write(t, "pr.go", src), WithOutput(&buf))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Summarise(context.Background(), [][][]float64{{{1}}}, nil); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "hello from the script\n" {
		t.Errorf("output %q", buf.String())
	}
}

// TestLoadDir: every script of a directory loads, in name order; one that
// does not is reported and left out; a missing directory holds none.
func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"b.go": counter, "a.go": string(src), "broken.go": "package broken\n\nfunc Summarise(", "notes.txt": "not a script"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	scripts, errs := LoadDir(dir, WithOutput(io.Discard))
	if len(scripts) != 2 || filepath.Base(scripts[0].Path()) != "a.go" || filepath.Base(scripts[1].Path()) != "b.go" {
		t.Fatalf("loaded %d scripts %v, want a.go and b.go in order", len(scripts), scripts)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "broken.go") {
		t.Errorf("errors %v, want one naming broken.go", errs)
	}
	if s, e := LoadDir(filepath.Join(dir, "missing")); len(s) != 0 || len(e) != 0 {
		t.Errorf("missing directory: %v, %v", s, e)
	}
}
