// Package script runs summaries written as Go scripts: a researcher scripts
// a custom UA-RAO summary without recompiling uaxai. Scripts are
// interpreted by yaegi (github.com/traefik/yaegi) in a sandbox that offers
// only an allow-list of packages.
//
// # The script contract
//
// A script is one Go file. The recipe names it with
//
//	[[summary]]
//	script = "scripts/trimmed_mean.go"   # relative to the recipe's directory
//	trim = 0.2                            # every other key is the script's config
//
// and the file looks like this (recipes/scripts/trimmed_mean.go is a
// complete example):
//
//	//go:build ignore                     // keeps the go tool from building it
//
//	package trimmed                       // any package name but main
//
//	import ("math"; "sort")               // only the allow-listed packages
//
//	const ID = "summary.trimmed_mean"     // optional; default "summary.script.<file base name>";
//	                                      // the "summary." prefix is added if missing
//	const Version = "0.1.0"               // optional; default "0.0.0"
//	const Output = "map"                  // optional; "map" (default), "set" or "band"
//
//	// Check validates the recipe table (optional; without it the script
//	// accepts no config keys). Report bad keys as sdk.Config does:
//	// `unknown key "x" (accepted: trim)`, `key "trim": ...`, so the host can
//	// give the recipe line.
//	func Check(cfg map[string]interface{}) error
//
//	// Output "map" or "set": Summarise gets a batch of inputs, draws[i][s][n]
//	// for input i, draw s, coordinate n, and returns one []float64 of length
//	// N_i per input. A set returns 0 (out) or 1 (in) for each coordinate.
//	func Summarise(draws [][][]float64, cfg map[string]interface{}) ([][]float64, error)
//
//	// Output "band": SummariseBand returns the lower and the upper map of
//	// every input, lower[i][n] <= upper[i][n].
//	func SummariseBand(draws [][][]float64, cfg map[string]interface{}) (lower, upper [][]float64, err error)
//
// (map[string]any is the same type as map[string]interface{}.) A package
// doc comment, if any, becomes the summary's description.
//
// The host calls Summarise (or SummariseBand) once per batch of inputs,
// never per input or per draw: yaegi runs tight loops about 100 times
// slower than compiled Go, so a script should do its per-coordinate work in
// plain loops over the batch and leave sorting to sort.Float64s (which runs
// compiled). The script gets its own copy of the draws and of the config,
// and may modify them. The host checks every result: one result per input,
// length N_i, finite values, 0/1 for a set, lower <= upper for a band; an
// error names the script, the input index and what was expected.
//
// Imports allowed: errors, fmt, math, sort, strconv, strings, and
// github.com/uaxai/uaxai/sdk (its Config type with the accessors Only,
// Float, Int, String, Bool, IntRange, and the OutputKind constants, e.g.
// sdk.Config(cfg).Float("trim", 0.1)). Any other import (os, os/exec, net,
// unsafe, syscall, io/ioutil, reflect, runtime, ...) makes Load fail with
// an error naming the script, the line, the package and the accepted list.
// go statements are refused as well: a panic in a goroutine could not be
// recovered. fmt.Print* output goes to the host's stderr (WithOutput).
//
// Things that differ from compiled Go, for script authors:
//   - Loop variables have pre-Go-1.22 semantics in yaegi: a closure that
//     captures a for-loop variable sees its last value. Copy it first
//     (v := v) if a closure keeps it.
//   - Generics from the standard library (slices, maps) are not offered.
//   - With named results, a return that permutes them is wrong in yaegi:
//     in func f() (lo, hi []float64), "return hi, lo" returns hi twice.
//     Return fresh variables, or assign the named results and return.
//   - A switch on an interface{} value with constant cases
//     (switch cfg["mode"] { case "a": ... }) panics in yaegi: type-assert
//     first (mode, _ := cfg["mode"].(string)).
//   - A panic in the script (index out of range, nil map) is recovered and
//     returned as an error naming the script, the function, the panic value
//     and the line where the panicking function's body starts (yaegi does
//     not report the line of the panicking statement itself).
//   - Global variables persist between calls of one interpreter; with
//     WithInstances(n > 1) each of the n interpreters has its own.
//
// Cancelling the context of Summarise stops the script, also inside a call:
// the interpreter that ran it is then discarded and a fresh one loaded for
// the next call.
package script

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"

	"github.com/uaxai/uaxai/sdk"
)

// sdkPath is the import path of the sdk package that scripts may import.
const sdkPath = "github.com/uaxai/uaxai/sdk"

// allowed are the packages a script may import.
var allowed = []string{"errors", "fmt", "math", "sort", "strconv", "strings", sdkPath}

// Allowed returns the import paths a script may use.
func Allowed() []string { return append([]string(nil), allowed...) }

// symbols returns the interpreter's packages: a filtered copy of yaegi's
// stdlib.Symbols holding only the allow-list, and a hand-written map of the
// sdk symbols.
func symbols() interp.Exports {
	ex := interp.Exports{}
	for _, p := range allowed {
		if p == sdkPath {
			continue
		}
		key := p + "/" + filepath.Base(p)
		syms, ok := stdlib.Symbols[key]
		if !ok {
			panic("script: yaegi has no symbols for " + p)
		}
		ex[key] = syms
	}
	// The wrappers fmt needs for Stringer and Formatter arguments.
	ex["."] = stdlib.Symbols["."]
	ex[sdkPath+"/sdk"] = map[string]reflect.Value{
		"Config":     reflect.ValueOf((*sdk.Config)(nil)),
		"OutputKind": reflect.ValueOf((*sdk.OutputKind)(nil)),
		"OutputMap":  reflect.ValueOf(sdk.OutputMap),
		"OutputSet":  reflect.ValueOf(sdk.OutputSet),
		"OutputBand": reflect.ValueOf(sdk.OutputBand),
	}
	return ex
}

// The package through which a call's arguments and results cross between
// the host and the interpreter. Scripts cannot import it (it is not on the
// allow-list).
const (
	hostPath  = "uaxai.internal/hostcall"
	hostAlias = "uaxaihostcall_"
)

// hostIO is one interpreter's exchange area.
type hostIO struct {
	draws        [][][]float64
	cfg          map[string]interface{}
	out, lo, hi  [][]float64
	err          error
	checkErr     error
	checkCalled  bool
	resultCalled bool
}

func (h *hostIO) exports() interp.Exports {
	return interp.Exports{hostPath + "/hostcall": {
		"Draws":  reflect.ValueOf(func() [][][]float64 { return h.draws }),
		"Cfg":    reflect.ValueOf(func() map[string]interface{} { return h.cfg }),
		"Check":  reflect.ValueOf(func(err error) { h.checkErr, h.checkCalled = err, true }),
		"Result": reflect.ValueOf(func(out [][]float64, err error) { h.out, h.err, h.resultCalled = out, err, true }),
		"Band": reflect.ValueOf(func(lo, hi [][]float64, err error) {
			h.lo, h.hi, h.err, h.resultCalled = lo, hi, err, true
		}),
	}}
}

// The Go types the script's functions must have.
var (
	typeCheck     = reflect.TypeOf(func(map[string]interface{}) error { return nil })
	typeSummarise = reflect.TypeOf(func([][][]float64, map[string]interface{}) ([][]float64, error) { return nil, nil })
	typeBand      = reflect.TypeOf(func([][][]float64, map[string]interface{}) ([][]float64, [][]float64, error) {
		return nil, nil, nil
	})
)

const (
	sigCheck     = "func Check(cfg map[string]interface{}) error"
	sigSummarise = "func Summarise(draws [][][]float64, cfg map[string]interface{}) ([][]float64, error)"
	sigBand      = "func SummariseBand(draws [][][]float64, cfg map[string]interface{}) (lower, upper [][]float64, err error)"
)

// Option configures Load.
type Option func(*options)

type options struct {
	output    io.Writer
	instances int
	timeout   time.Duration
	ctx       context.Context
}

// WithOutput sends what the script prints (fmt.Print*, println) to w. The
// default is os.Stderr: results go to files and stdout, logs to stderr.
func WithOutput(w io.Writer) Option { return func(o *options) { o.output = w } }

// WithInstances lets up to n interpreters run the script at once, one
// call each (default 1: concurrent calls queue). Each has its own globals.
func WithInstances(n int) Option {
	if n < 1 {
		panic("script: WithInstances needs n >= 1")
	}
	return func(o *options) { o.instances = n }
}

// WithTimeout bounds loading the script (package initialisation included)
// and each call of Check (default one minute). Summarise is bounded by its
// context only.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithContext cancels loading (default context.Background()).
func WithContext(ctx context.Context) Option { return func(o *options) { o.ctx = ctx } }

// Script is a loaded summary script; it implements sdk.Summary and is safe
// for concurrent use.
type Script struct {
	path   string // as given to Load, for messages
	source []byte
	digest string
	pkg    string // package name
	info   sdk.SummaryInfo
	fn     string // the result function: "Summarise" or "SummariseBand"
	check  bool   // the script defines Check
	opts   options

	idle  chan *instance // interpreters not in use
	slots chan struct{}  // one token per live interpreter
}

var _ sdk.Summary = (*Script)(nil)

// instance is one interpreter holding the script.
type instance struct {
	in        *interp.Interpreter
	io        *hostIO
	stderr    *bytes.Buffer
	summarise *interp.Program
	check     *interp.Program
}

// Load reads, checks and loads a summary script. Errors name the script and,
// for syntax, type and import errors, the line.
func Load(path string, opts ...Option) (sdk.Summary, error) {
	s, err := load(path, opts...)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func load(path string, opts ...Option) (*Script, error) {
	o := options{output: os.Stderr, instances: 1, timeout: time.Minute, ctx: context.Background()}
	for _, opt := range opts {
		opt(&o)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("script %s: %w", path, err)
	}
	sum := sha256.Sum256(src)
	s := &Script{path: path, source: src, digest: hex.EncodeToString(sum[:]), opts: o}
	decls, err := s.inspect()
	if err != nil {
		return nil, err
	}
	s.idle = make(chan *instance, o.instances)
	s.slots = make(chan struct{}, o.instances)

	s.slots <- struct{}{}
	in, err := s.newInstance(o.ctx)
	if err != nil {
		return nil, err
	}
	if err := s.readInfo(in, decls); err != nil {
		return nil, err
	}
	if err := in.compile(s); err != nil {
		return nil, s.compileErr(err)
	}
	s.idle <- in
	return s, nil
}

// ---- static checks ----

// decls are the top-level names of the script: "func", "const", "var" or
// "type" by name.
type decls map[string]string

// inspect parses the script with go/parser: syntax errors, imports outside
// the allow-list, go statements, and the top-level declarations.
func (s *Script) inspect() (decls, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, s.path, s.source, parser.ParseComments)
	if err != nil {
		var list scanner.ErrorList
		if errors.As(err, &list) && len(list) > 0 {
			e := list[0]
			more := ""
			if len(list) > 1 {
				more = fmt.Sprintf(" (and %d more)", len(list)-1)
			}
			return nil, &Error{Script: s.path, Line: e.Pos.Line, Col: e.Pos.Column, Msg: "syntax error: " + e.Msg + more}
		}
		return nil, fmt.Errorf("script %s: %w", s.path, err)
	}
	s.pkg = f.Name.Name
	if s.pkg == "main" {
		pos := fset.Position(f.Name.Pos())
		return nil, &Error{Script: s.path, Line: pos.Line, Col: pos.Column,
			Msg: "package main is not accepted: a summary script is a library (name the package after the summary, e.g. package trimmed)"}
	}
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if !ok[p] {
			pos := fset.Position(imp.Pos())
			return nil, &Error{Script: s.path, Line: pos.Line, Col: pos.Column,
				Msg: fmt.Sprintf("import %q is not allowed in a summary script (accepted: %s)", p, strings.Join(allowed, ", "))}
		}
	}
	var goErr error
	ast.Inspect(f, func(n ast.Node) bool {
		if g, isGo := n.(*ast.GoStmt); isGo && goErr == nil {
			pos := fset.Position(g.Pos())
			goErr = &Error{Script: s.path, Line: pos.Line, Col: pos.Column,
				Msg: "go statements are not allowed in a summary script (a panic in a goroutine cannot be recovered)"}
		}
		return goErr == nil
	})
	if goErr != nil {
		return nil, goErr
	}
	d := decls{}
	for _, decl := range f.Decls {
		switch x := decl.(type) {
		case *ast.FuncDecl:
			if x.Recv == nil {
				d[x.Name.Name] = "func"
			}
		case *ast.GenDecl:
			for _, spec := range x.Specs {
				switch sp := spec.(type) {
				case *ast.ValueSpec:
					for _, n := range sp.Names {
						d[n.Name] = strings.ToLower(x.Tok.String())
					}
				case *ast.TypeSpec:
					d[sp.Name.Name] = "type"
				}
			}
		}
	}
	if f.Doc != nil {
		s.info.Summary = firstSentence(f.Doc.Text())
	}
	return d, nil
}

func firstSentence(doc string) string {
	doc = strings.Join(strings.Fields(doc), " ")
	if i := strings.Index(doc, ". "); i >= 0 {
		doc = doc[:i+1]
	}
	return doc
}

// Error is an error in a script, at a line when Line > 0.
type Error struct {
	Script    string
	Line, Col int
	Msg       string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("script %s: line %d, column %d: %s", e.Script, e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("script %s: %s", e.Script, e.Msg)
}

// ---- loading ----

var (
	posRE   = regexp.MustCompile(`^(?:[^\s:]*:)?(\d+):(\d+): (.*)$`)
	panicRE = regexp.MustCompile(`^(?:[^\s:]*:)?(\d+):(\d+): panic: (.*)\(\.\.\.\)$`)
)

// compileErr turns a yaegi error ("name:12:3: undefined: x") into an Error
// with the line.
func (s *Script) compileErr(err error) error {
	var p interp.Panic
	if errors.As(err, &p) {
		return &Error{Script: s.path, Msg: fmt.Sprintf("panic while loading: %v", p.Value)}
	}
	msg := strings.TrimSpace(err.Error())
	first, _, _ := strings.Cut(msg, "\n")
	if m := posRE.FindStringSubmatch(first); m != nil {
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		return &Error{Script: s.path, Line: line, Col: col, Msg: m[3]}
	}
	return &Error{Script: s.path, Msg: msg}
}

// newInstance starts an interpreter and evaluates the script in it. The
// caller holds a slot.
func (s *Script) newInstance(ctx context.Context) (*instance, error) {
	in, err := s.startInstance(ctx)
	if err != nil {
		<-s.slots
		return nil, err
	}
	return in, nil
}

func (s *Script) startInstance(ctx context.Context) (*instance, error) {
	if s.opts.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.opts.timeout)
		defer cancel()
	}
	stderr := new(bytes.Buffer)
	it := interp.New(interp.Options{
		GoPath:       filepath.Join(os.TempDir(), "uaxai-script-empty-gopath"), // no source imports
		BuildTags:    []string{"ignore"},                                       // so "// +build ignore" does not skip the file
		Stdin:        strings.NewReader(""),
		Stdout:       s.opts.output,
		Stderr:       stderr,
		Args:         []string{s.path},
		Unrestricted: false,
	})
	hio := &hostIO{}
	if err := it.Use(symbols()); err != nil {
		return nil, fmt.Errorf("script %s: setting up the interpreter: %w", s.path, err)
	}
	if err := it.Use(hio.exports()); err != nil {
		return nil, fmt.Errorf("script %s: setting up the interpreter: %w", s.path, err)
	}
	// EvalWithContext (unlike EvalPathWithContext) does not race with
	// itself when ctx ends; positions then read "line:col" without a name.
	if _, err := it.EvalWithContext(ctx, string(s.source)); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("script %s: loading stopped: %w (does package initialisation loop?)", s.path, ctx.Err())
		}
		return nil, s.compileErr(err)
	}
	inst := &instance{in: it, io: hio, stderr: stderr}
	if s.fn != "" { // not the first instance: compile the calls now
		if err := inst.compile(s); err != nil {
			return nil, s.compileErr(err)
		}
	}
	return inst, nil
}

// qual qualifies a script symbol for use from the interpreter's main package.
func (s *Script) qual(name string) string { return s.pkg + "." + name }

// readInfo reads ID, Version and Output and checks the functions' types.
func (s *Script) readInfo(in *instance, d decls) error {
	str := func(name, def string) (string, error) {
		kind, ok := d[name]
		if !ok {
			return def, nil
		}
		v, err := in.in.Eval(s.qual(name))
		if err != nil {
			return "", s.compileErr(err)
		}
		if kind == "func" || kind == "type" || !v.IsValid() || v.Kind() != reflect.String {
			return "", &Error{Script: s.path, Msg: fmt.Sprintf("%s must be a string constant", name)}
		}
		return v.String(), nil
	}
	base := strings.TrimSuffix(filepath.Base(s.path), filepath.Ext(s.path))
	id, err := str("ID", "summary.script."+sanitise(base))
	if err != nil {
		return err
	}
	if !strings.HasPrefix(id, "summary.") {
		id = "summary." + id
	}
	if !idRE.MatchString(id) {
		return &Error{Script: s.path, Msg: fmt.Sprintf("ID %q is not a plugin ID (accepted: \"summary.\" followed by lower-case letters, digits, '_', '-' and '.')", id)}
	}
	version, err := str("Version", "0.0.0")
	if err != nil {
		return err
	}
	output, err := str("Output", string(sdk.OutputMap))
	if err != nil {
		return err
	}
	kind := sdk.OutputKind(output)
	switch kind {
	case sdk.OutputMap, sdk.OutputSet:
		s.fn = "Summarise"
	case sdk.OutputBand:
		s.fn = "SummariseBand"
	default:
		return &Error{Script: s.path, Msg: fmt.Sprintf("Output = %q is not accepted (accepted: map, set, band)", output)}
	}
	s.info.ID, s.info.Version, s.info.Output = id, version, kind
	if s.info.Summary == "" {
		s.info.Summary = "summary script " + filepath.Base(s.path)
	}

	fn := func(name string, want reflect.Type, sig string) error {
		kind, ok := d[name]
		if !ok {
			return nil
		}
		v, err := in.in.Eval(s.qual(name))
		if err != nil {
			return s.compileErr(err)
		}
		if kind != "func" || !v.IsValid() || v.Type() != want {
			got := kind
			if v.IsValid() {
				got = v.Type().String()
			}
			return &Error{Script: s.path, Msg: fmt.Sprintf("%s has type %s, want %s", name, got, sig)}
		}
		return nil
	}
	if err := fn("Check", typeCheck, sigCheck); err != nil {
		return err
	}
	s.check = d["Check"] == "func"
	if err := fn("Summarise", typeSummarise, sigSummarise); err != nil {
		return err
	}
	if err := fn("SummariseBand", typeBand, sigBand); err != nil {
		return err
	}
	if d[s.fn] != "func" {
		sig := sigSummarise
		if s.fn == "SummariseBand" {
			sig = sigBand
		}
		return &Error{Script: s.path, Msg: fmt.Sprintf("Output %q needs %s", kind, sig)}
	}
	return nil
}

var idRE = regexp.MustCompile(`^summary\.[a-z0-9][a-z0-9_.-]*$`)

// sanitise makes a file name usable in an ID.
func sanitise(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || !(b[0] >= 'a' && b[0] <= 'z' || b[0] >= '0' && b[0] <= '9') {
		b = append([]byte("x"), b...)
	}
	return string(b)
}

// compile prepares the programs that call the script with the exchange
// area's arguments.
func (in *instance) compile(s *Script) error {
	if _, err := in.in.Eval(fmt.Sprintf("import %s %q", hostAlias, hostPath)); err != nil {
		return err
	}
	var err error
	call := fmt.Sprintf("%s.Result(%s(%s.Draws(), %s.Cfg()))", hostAlias, s.qual("Summarise"), hostAlias, hostAlias)
	if s.fn == "SummariseBand" {
		call = fmt.Sprintf("%s.Band(%s(%s.Draws(), %s.Cfg()))", hostAlias, s.qual("SummariseBand"), hostAlias, hostAlias)
	}
	if in.summarise, err = in.in.Compile(call); err != nil {
		return err
	}
	if s.check {
		if in.check, err = in.in.Compile(fmt.Sprintf("%s.Check(%s(%s.Cfg()))", hostAlias, s.qual("Check"), hostAlias)); err != nil {
			return err
		}
	}
	return nil
}

// ---- calls ----

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

// Info describes the script: ID, Version and Output from its constants.
func (s *Script) Info() sdk.SummaryInfo { return s.info }

// Path is the script's file as given to Load.
func (s *Script) Path() string { return s.path }

// Digest is the SHA-256 (hex) of the script's source, for manifests and
// caches (the recipe's hash covers only the script's path).
func (s *Script) Digest() string { return s.digest }

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
// s of input i, all draws of an input have the same length N_i >= 1. It
// returns one Result per input.
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
	results := make([]sdk.Result, len(draws))
	switch s.info.Output {
	case sdk.OutputMap, sdk.OutputSet:
		if err := s.checkShape("", out, lens); err != nil {
			return nil, err
		}
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
		if err := s.checkShape("lower ", lo, lens); err != nil {
			return nil, err
		}
		if err := s.checkShape("upper ", hi, lens); err != nil {
			return nil, err
		}
		for i := range lo {
			for n := range lo[i] {
				if lo[i][n] > hi[i][n] {
					return nil, fmt.Errorf("script %s: %s: input %d, coordinate %d: lower %v > upper %v (want lower <= upper)", s.path, s.fn, i, n, lo[i][n], hi[i][n])
				}
			}
			results[i].Lower = append([]float64(nil), lo[i]...)
			results[i].Upper = append([]float64(nil), hi[i]...)
		}
	}
	return results, nil
}

// checkShape checks one []float64 of length lens[i] per input, all finite.
func (s *Script) checkShape(what string, out [][]float64, lens []int) error {
	if len(out) != len(lens) {
		return fmt.Errorf("script %s: %s returned %s%d results for a batch of %d inputs (want one per input)", s.path, s.fn, what, len(out), len(lens))
	}
	for i, m := range out {
		if len(m) != lens[i] {
			return fmt.Errorf("script %s: %s: %sresult for input %d has %d values, want %d (the length of its draws)", s.path, s.fn, what, i, len(m), lens[i])
		}
		for n, v := range m {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("script %s: %s: %sresult for input %d, coordinate %d is %v (want finite values)", s.path, s.fn, what, i, n, v)
			}
		}
	}
	return nil
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
