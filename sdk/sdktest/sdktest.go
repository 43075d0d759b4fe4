package sdktest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/internal/proto"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
)

// UnknownKey is the config key the kit adds to a case's config to check
// that Check rejects unknown keys.
const UnknownKey = "sdktest_unknown_key"

// timeout bounds each conformance run.
const timeout = 5 * time.Minute

// harness carries what every check needs.
type harness struct {
	t   testing.TB
	id  string
	ctx context.Context
}

// newHarness starts the checks of one plugin: a harness whose context ends
// after the package's timeout (call the returned cancel when done), and
// sdk.Describe's checks of its Info against kind.
func newHarness(t testing.TB, p sdk.Plugin, kind sdk.Kind) (*harness, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	h := &harness{t: t, id: p.Info().ID, ctx: ctx}
	if k, _, err := sdk.Describe(p); err != nil {
		h.errorf("Info: %v", err)
	} else if k != kind {
		h.errorf("Info: a %s checked as a %s", k, kind)
	}
	return h, cancel
}

func (h *harness) errorf(format string, args ...any) {
	h.t.Helper()
	h.t.Errorf("sdktest: %s: %s", h.id, fmt.Sprintf(format, args...))
}

func (h *harness) fatalf(format string, args ...any) {
	h.t.Helper()
	h.t.Fatalf("sdktest: %s: %s", h.id, fmt.Sprintf(format, args...))
}

// checkConfig checks that check accepts cfg and rejects cfg plus an
// unknown key, naming it.
func (h *harness) checkConfig(where string, check func(sdk.Config) error, cfg sdk.Config) {
	h.t.Helper()
	if err := check(cfg); err != nil {
		h.errorf("%s: Check rejects the case's config %v: %v", where, cfg, err)
	}
	bad := sdk.Config{}
	maps.Copy(bad, cfg)
	bad[UnknownKey] = true
	err := check(bad)
	switch {
	case err == nil:
		h.errorf("%s: Check accepts the unknown key %q (unknown keys must be errors; see sdk.Config.Only)", where, UnknownKey)
	case !strings.Contains(err.Error(), UnknownKey):
		h.errorf("%s: Check rejects the unknown key %q with an error that does not name it: %v", where, UnknownKey, err)
	}
}

// serve serves impl inside the test process over go-plugin's gRPC
// transport, with the configuration sdk.Serve uses, and returns the
// client that package driver dispenses and a function that stops both.
func (h *harness) serve(impl sdk.Plugin, kind sdk.Kind) (any, func()) {
	return h.serveWith(impl, kind, driver.PluginSet())
}

// serveWith is serve with the host's plugin set set.
func (h *harness) serveWith(impl sdk.Plugin, kind sdk.Kind, set goplugin.PluginSet) (any, func()) {
	h.t.Helper()
	log := hclog.New(&hclog.LoggerOptions{Name: "sdktest", Level: hclog.Warn, Output: os.Stderr})
	rpc, stop, err := proto.InProcess(impl, set, driver.DialOptions(), log)
	if err != nil {
		h.fatalf("serving over gRPC: %v", err)
	}
	v, err := rpc.Dispense(string(kind))
	if err != nil {
		stop()
		h.fatalf("dispensing the plugin over gRPC: %v", err)
	}
	return v, stop
}

// defaultSeeds derives n seeds, one per input or draw.
func defaultSeeds(n int, salt string) []uint64 {
	s := make([]uint64, n)
	for i := range s {
		s[i] = rng.Key(2026, "sdktest", salt, i, 0)
	}
	return s
}

// otherSeeds returns seeds that all differ from s.
func otherSeeds(s []uint64) []uint64 {
	o := make([]uint64, len(s))
	for i, v := range s {
		o[i] = rng.Key(v, "sdktest-other", "", i, 0)
		if o[i] == v {
			o[i]++
		}
	}
	return o
}

// diff64 describes the first difference between two float64 slices, bit
// for bit ("" if they are identical).
func diff64(a, b []float64) string {
	if len(a) != len(b) {
		return fmt.Sprintf("lengths %d and %d", len(a), len(b))
	}
	for j := range a {
		if math.Float64bits(a[j]) != math.Float64bits(b[j]) {
			return fmt.Sprintf("index %d: %v (bits %#016x) vs %v (bits %#016x)", j, a[j], math.Float64bits(a[j]), b[j], math.Float64bits(b[j]))
		}
	}
	return ""
}

// diff32 is diff64 for float32.
func diff32(a, b []float32) string {
	if len(a) != len(b) {
		return fmt.Sprintf("lengths %d and %d", len(a), len(b))
	}
	for j := range a {
		if math.Float32bits(a[j]) != math.Float32bits(b[j]) {
			return fmt.Sprintf("index %d: %v (bits %#08x) vs %v (bits %#08x)", j, a[j], math.Float32bits(a[j]), b[j], math.Float32bits(b[j]))
		}
	}
	return ""
}

// diffMaps describes the first difference between two batches of maps.
func diffMaps(a, b [][]float64) string {
	if len(a) != len(b) {
		return fmt.Sprintf("%d maps vs %d", len(a), len(b))
	}
	for i := range a {
		if d := diff64(a[i], b[i]); d != "" {
			return fmt.Sprintf("input %d: %s", i, d)
		}
	}
	return ""
}

// diffResult describes the first difference between two summary results.
func diffResult(a, b sdk.Result) string {
	if d := diff64(a.Map, b.Map); d != "" {
		return "map: " + d
	}
	if d := diff64(a.Lower, b.Lower); d != "" {
		return "lower: " + d
	}
	if d := diff64(a.Upper, b.Upper); d != "" {
		return "upper: " + d
	}
	if len(a.Set) != len(b.Set) {
		return fmt.Sprintf("set: lengths %d and %d", len(a.Set), len(b.Set))
	}
	for j := range a.Set {
		if a.Set[j] != b.Set[j] {
			return fmt.Sprintf("set: index %d: %v vs %v", j, a.Set[j], b.Set[j])
		}
	}
	return ""
}

func diffResults(a, b []sdk.Result) string {
	if len(a) != len(b) {
		return fmt.Sprintf("%d results vs %d", len(a), len(b))
	}
	for i := range a {
		if d := diffResult(a[i], b[i]); d != "" {
			return fmt.Sprintf("input %d: %s", i, d)
		}
	}
	return ""
}

// archJSON is a's JSON form (the wire's), to print.
func archJSON(a nn.Arch) string {
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Sprintf("unencodable architecture %+v: %v", a, err)
	}
	return string(b)
}

// diffParams describes the first difference between two lists of draws.
func diffParams(a, b []nn.Params) string {
	if len(a) != len(b) {
		return fmt.Sprintf("%d draws vs %d", len(a), len(b))
	}
	for s := range a {
		if !a[s].Arch.Same(b[s].Arch) {
			return fmt.Sprintf("draw %d: architectures differ: %s vs %s", s, archJSON(a[s].Arch), archJSON(b[s].Arch))
		}
		if d := diff32(a[s].Data, b[s].Data); d != "" {
			return fmt.Sprintf("draw %d: parameter %s", s, d)
		}
	}
	return ""
}

// diffArtifact describes the first difference between two artifacts.
func diffArtifact(a, b sdk.Artifact) string {
	if !a.Arch.Same(b.Arch) {
		return fmt.Sprintf("architectures differ: %s vs %s", archJSON(a.Arch), archJSON(b.Arch))
	}
	if len(a.Tensors) != len(b.Tensors) {
		return fmt.Sprintf("%d tensors vs %d", len(a.Tensors), len(b.Tensors))
	}
	for k, v := range a.Tensors {
		w, ok := b.Tensors[k]
		if !ok {
			return fmt.Sprintf("tensor %q missing", k)
		}
		if d := diff32(v, w); d != "" {
			return fmt.Sprintf("tensor %q: %s", k, d)
		}
	}
	if len(a.Meta) != len(b.Meta) {
		return fmt.Sprintf("%d meta entries vs %d", len(a.Meta), len(b.Meta))
	}
	for k, v := range a.Meta {
		if b.Meta[k] != v {
			return fmt.Sprintf("meta %q: %q vs %q", k, v, b.Meta[k])
		}
	}
	return ""
}

// sameInfo reports whether two Infos are equal, an empty list equal to a
// nil one (the wire does not tell them apart).
func sameInfo(a, b sdk.Info) bool {
	norm := func(i sdk.Info) sdk.Info {
		if len(i.BaseKeys) == 0 {
			i.BaseKeys = nil
		}
		if len(i.Files) == 0 {
			i.Files = nil
		}
		return i
	}
	return reflect.DeepEqual(norm(a), norm(b))
}
