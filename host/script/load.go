package script

import (
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
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/traefik/yaegi/interp"

	"github.com/uaxai/uaxai/internal/atomicfile"
	"github.com/uaxai/uaxai/sdk"
)

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
// and each call of Check (default one minute); d <= 0 leaves them
// unbounded (a script process, whose host bounds every call). Summarise
// is bounded by its context only.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithContext cancels loading (default context.Background()).
func WithContext(ctx context.Context) Option { return func(o *options) { o.ctx = ctx } }

// MaxSourceBytes bounds a script's source file (a summary script is a
// page of Go).
const MaxSourceBytes = 16 << 20

// ReadSource reads the source of the script at path: a regular file of at
// most MaxSourceBytes bytes (a FIFO, a device such as /dev/zero, a
// directory or a larger file is refused before it is read). The error
// names the script.
func ReadSource(path string) ([]byte, error) {
	src, err := atomicfile.ReadRegular(path, atomicfile.Limit{Bytes: MaxSourceBytes, What: "a summary script"})
	if err != nil {
		return nil, fmt.Errorf("script %s: %w", path, err)
	}
	return src, nil
}

// Load reads, checks and loads a summary script. Errors name the script and,
// for syntax, type and import errors, the line.
func Load(path string, opts ...Option) (*Script, error) {
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
	src, err := ReadSource(path)
	if err != nil {
		return nil, err
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

var posRE = regexp.MustCompile(`^(?:[^\s:]*:)?(\d+):(\d+): (.*)$`)

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
	id, err := str("ID", "summary.script-"+sanitise(base))
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
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || !(b[0] >= 'a' && b[0] <= 'z' || b[0] >= '0' && b[0] <= '9') {
		b = append([]byte("x"), b...)
	}
	return string(b)
}

// LoadDir loads every summary script (*.go) of dir, in name order. A
// script that does not load is left out, and its error returned among
// errs; a missing dir holds no scripts.
func LoadDir(dir string, opts ...Option) (scripts []*Script, errs []error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, []error{fmt.Errorf("scripts in %s: %w", dir, err)}
	}
	for _, f := range files {
		s, err := Load(f, opts...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		scripts = append(scripts, s)
	}
	return scripts, errs
}
