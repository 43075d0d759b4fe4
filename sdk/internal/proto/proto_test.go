package proto_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/internal/proto"
)

// meanSummary is a tiny map summary: the mean of each input's draws. It
// records the config it was last called with.
type meanSummary struct {
	mu  sync.Mutex
	cfg sdk.Config
}

func (*meanSummary) Info() sdk.Info {
	return sdk.Info{ID: "summary.t", Version: "1", Output: sdk.OutputMap}
}

func (*meanSummary) Check(sdk.Config) error { return nil }

func (m *meanSummary) Summarise(_ context.Context, draws [][][]float64, cfg sdk.Config) ([]sdk.Result, error) {
	m.mu.Lock()
	m.cfg = cfg
	m.mu.Unlock()
	out := make([]sdk.Result, len(draws))
	for i, d := range draws {
		mean := make([]float64, len(d[0]))
		for _, s := range d {
			for j, v := range s {
				mean[j] += v
			}
		}
		for j := range mean {
			mean[j] /= float64(len(d))
		}
		out[i] = sdk.Result{Map: mean}
	}
	return out, nil
}

// notAPlugin has no Info method.
type notAPlugin struct{}

// noKind has an Info method but implements no plugin kind.
type noKind struct{}

func (noKind) Info() sdk.Info {
	return sdk.Info{ID: "summary.nokind", Version: "1", Output: sdk.OutputMap}
}

// syncBuffer is a log sink safe for the server's and the client's
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func quietLog(t *testing.T) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Error, Output: &syncBuffer{}})
}

func TestHandshake(t *testing.T) {
	h := proto.Handshake()
	if h.ProtocolVersion != proto.Version {
		t.Errorf("ProtocolVersion %d, want proto.Version %d", h.ProtocolVersion, proto.Version)
	}
	// The cookie and version are a contract with plugins built apart from
	// the host: they must not change by accident.
	if proto.Version != 2 {
		t.Errorf("proto.Version is %d; the uaxai.v1 wire protocol is version 2", proto.Version)
	}
	if h.MagicCookieKey != "UAXAI_PLUGIN" {
		t.Errorf("MagicCookieKey %q, want %q", h.MagicCookieKey, "UAXAI_PLUGIN")
	}
	if h.MagicCookieValue != "uaxai-plugin-7f3c9a51e2d84b06" {
		t.Errorf("MagicCookieValue %q, want %q", h.MagicCookieValue, "uaxai-plugin-7f3c9a51e2d84b06")
	}
	if h.MagicCookieKey != proto.MagicCookieKey || h.MagicCookieValue != proto.MagicCookieValue {
		t.Errorf("cookie %s=%s, want the package's %s=%s", h.MagicCookieKey, h.MagicCookieValue, proto.MagicCookieKey, proto.MagicCookieValue)
	}
	if h != driver.Handshake() {
		t.Errorf("proto.Handshake %+v differs from driver.Handshake %+v", h, driver.Handshake())
	}
	if proto.Handshake() != h {
		t.Error("Handshake is not the same on every call")
	}
	if proto.MaxMessageSize != 1<<30 {
		t.Errorf("MaxMessageSize %d, want 1 GiB", proto.MaxMessageSize)
	}
}

func TestServeConfig(t *testing.T) {
	if proto.ServeConfig == nil {
		t.Fatal("importing sdk did not set proto.ServeConfig")
	}
	cfg, err := proto.ServeConfig(notAPlugin{})
	if err == nil {
		t.Fatalf("ServeConfig(notAPlugin{}) = %+v, want an error", cfg)
	}
	if cfg != nil {
		t.Errorf("ServeConfig returned a config with its error: %+v", cfg)
	}
	for _, w := range []string{"notAPlugin", "is not a plugin", "Info()"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	cfg, err = proto.ServeConfig(noKind{})
	if err == nil || cfg != nil || !strings.Contains(err.Error(), "noKind") {
		t.Errorf("ServeConfig(noKind{}) = %v, %v; want an error naming the type", cfg, err)
	}
	if _, err := proto.ServeConfig(nil); err == nil {
		t.Error("ServeConfig(nil) did not fail")
	}

	cfg, err = proto.ServeConfig(&meanSummary{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HandshakeConfig != proto.Handshake() {
		t.Errorf("handshake %+v, want %+v", cfg.HandshakeConfig, proto.Handshake())
	}
	if len(cfg.Plugins) != 1 || cfg.Plugins["summary"] == nil {
		t.Errorf("plugins %v, want only \"summary\"", cfg.Plugins)
	}
	if cfg.GRPCServer == nil {
		t.Error("no gRPC server: the plugin would be served over net/rpc")
	}
	if cfg.Test != nil {
		t.Error("ServeConfig sets test mode")
	}
}

func TestInProcessServesSummary(t *testing.T) {
	var logs syncBuffer
	log := hclog.New(&hclog.LoggerOptions{Name: "inprocess", Level: hclog.Debug, Output: &logs})
	impl := &meanSummary{}
	rpc, stop, err := proto.InProcess(impl, driver.PluginSet(), driver.DialOptions(), log)
	if err != nil {
		t.Fatal(err)
	}
	if rpc == nil || stop == nil {
		t.Fatalf("InProcess returned %v, %v without an error", rpc, stop != nil)
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	if err := rpc.Ping(); err != nil {
		t.Fatalf("ping: %v", err)
	}
	v, err := rpc.Dispense("summary")
	if err != nil {
		t.Fatal(err)
	}
	s, ok := v.(sdk.Summary)
	if !ok {
		t.Fatalf("dispensed %T, want an sdk.Summary", v)
	}
	if info := s.Info(); !reflect.DeepEqual(info, impl.Info()) {
		t.Errorf("Info over gRPC %+v, want %+v", info, impl.Info())
	}

	draws := [][][]float64{
		{{1, 2, 3}, {3, 4, 5}},
		{{-1, 0.5}, {1, 0.25}, {3, math.Copysign(0, -1)}, {5, 1.25}},
	}
	want := [][]float64{{2, 3, 4}, {2, 0.5}}
	res, err := s.Summarise(context.Background(), draws, sdk.Config{"k": "v", "n": 3.0})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(want) {
		t.Fatalf("%d results, want %d", len(res), len(want))
	}
	for i := range want {
		if len(res[i].Map) != len(want[i]) {
			t.Errorf("result %d: map %v, want %v", i, res[i].Map, want[i])
			continue
		}
		for j := range want[i] {
			if res[i].Map[j] != want[i][j] {
				t.Errorf("result %d: map %v, want %v", i, res[i].Map, want[i])
				break
			}
		}
		if res[i].Set != nil || res[i].Lower != nil || res[i].Upper != nil {
			t.Errorf("result %d has fields of another output kind: %+v", i, res[i])
		}
	}
	impl.mu.Lock()
	cfg := impl.cfg
	impl.mu.Unlock()
	if len(cfg) != 2 || cfg["k"] != "v" || cfg["n"] != 3.0 {
		t.Errorf("the plugin saw config %v, want map[k:v n:3]", cfg)
	}

	// Messages above gRPC's default 4 MB limit cross both ways.
	const n = 300_000 // 2 draws x 300k float64 = 4.8 MB out, 2.4 MB back
	big := [][][]float64{{make([]float64, n), make([]float64, n)}}
	for j := range n {
		big[0][0][j] = float64(j)
		big[0][1][j] = float64(j) + 2
	}
	res, err = s.Summarise(context.Background(), big, nil)
	if err != nil {
		t.Fatalf("a %d-value batch: %v", 2*n, err)
	}
	if len(res) != 1 || len(res[0].Map) != n || res[0].Map[0] != 1 || res[0].Map[n-1] != float64(n) {
		t.Errorf("large batch: %d results", len(res))
	}

	// The server logs to the logger InProcess was given.
	if !strings.Contains(logs.String(), "plugin address") {
		t.Errorf("the server did not log to the given logger; it logged:\n%s", logs.String())
	}

	// stop stops client and server, promptly: the server stops when the
	// client asks it to, not after a fallback timeout.
	start := time.Now()
	stop()
	stopped = true
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stop took %v", d)
	}
	if err := rpc.Ping(); err == nil {
		t.Error("ping succeeds after stop")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.Summarise(ctx, draws, nil); err == nil {
		t.Error("Summarise succeeds after stop")
	} else if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Summarise after stop hung until its deadline: %v", err)
	}
}

func TestInProcessTwoServers(t *testing.T) {
	// Two servers at once are independent: stopping one leaves the other.
	rpc1, stop1, err := proto.InProcess(&meanSummary{}, driver.PluginSet(), driver.DialOptions(), quietLog(t))
	if err != nil {
		t.Fatal(err)
	}
	rpc2, stop2, err := proto.InProcess(&meanSummary{}, driver.PluginSet(), driver.DialOptions(), quietLog(t))
	if err != nil {
		stop1()
		t.Fatal(err)
	}
	defer stop2()
	stop1()
	if err := rpc1.Ping(); err == nil {
		t.Error("the stopped server answers")
	}
	v, err := rpc2.Dispense("summary")
	if err != nil {
		t.Fatalf("the other server: %v", err)
	}
	res, err := v.(sdk.Summary).Summarise(context.Background(), [][][]float64{{{4}, {6}}}, nil)
	if err != nil || len(res) != 1 || len(res[0].Map) != 1 || res[0].Map[0] != 5 {
		t.Errorf("the other server answers %v, %v; want one map [5]", res, err)
	}
}

func TestInProcessRefusesNonPlugin(t *testing.T) {
	for _, p := range []any{notAPlugin{}, noKind{}, nil, 42} {
		before := runtime.NumGoroutine()
		var logs syncBuffer
		log := hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: &logs})
		rpc, stop, err := proto.InProcess(p, driver.PluginSet(), driver.DialOptions(), log)
		if err == nil {
			if stop != nil {
				stop()
			}
			t.Errorf("InProcess(%T) did not fail", p)
			continue
		}
		if rpc != nil || stop != nil {
			t.Errorf("InProcess(%T) returned a client or a stop function with its error", p)
		}
		want, _ := proto.ServeConfig(p)
		if _, cerr := proto.ServeConfig(p); err.Error() != cerr.Error() || want != nil {
			t.Errorf("InProcess(%T) error %q, want ServeConfig's %q", p, err, cerr)
		}
		// Nothing was started: no server goroutines, no logs.
		time.Sleep(50 * time.Millisecond)
		if after := runtime.NumGoroutine(); after > before {
			t.Errorf("InProcess(%T) left %d goroutines running", p, after-before)
		}
		if logs.String() != "" {
			t.Errorf("InProcess(%T) logged:\n%s", p, logs.String())
		}
	}
}
