package script

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

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
