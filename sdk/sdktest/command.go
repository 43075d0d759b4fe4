package sdktest

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/uaxai/uaxai/internal/pyinterp"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
)

// ExplainerCommand runs the conformance checks on an explainer plugin
// executable written in any language (a Python script of the kit in
// sdk/python, a Go binary, ...): command is the executable and its
// arguments. The kit starts it as the host does (go-plugin's handshake,
// gRPC only), and serves the model service when its Info asks for it
// (sdk.Info.WantsModel). Without an in-process twin to compare with, it
// checks:
//
//   - Info: valid for an explainer (the host's driver checks it).
//   - Check accepts the case's config and rejects an unknown key, naming it.
//   - Answers have the right shape and finite values.
//   - Determinism: the same request gives the same bytes, whatever the
//     batch split.
//   - Seeds: a stochastic explainer's maps change with the seeds, a
//     deterministic one's do not.
//   - A released draw explains nothing, and the model service serves no
//     draw after its release.
//
// DefaultCase is a case for the paper's network.
//
// A Python script (a #! line that names python, or a name ending in .py)
// runs as `<interpreter> command...`, the interpreter chosen as the host
// chooses it: the first of $UAXAI_PYTHON, the #! line's interpreter,
// python3 on PATH and /usr/bin/python3 that imports numpy, grpc and
// google.protobuf. When none does, the test fails with an error that
// lists every interpreter tried and what it lacks.
func ExplainerCommand(t testing.TB, command []string, c ExplainerCase) {
	t.Helper()
	if len(command) == 0 {
		t.Fatalf("sdktest: ExplainerCommand needs a command")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	h := &harness{t: t, id: command[0], ctx: ctx}
	cmd, err := pluginCmd(ctx, t, command)
	if err != nil {
		t.Fatalf("sdktest: %v", err) // it names command[0]
	}
	svc := driver.NewModelService()
	defer svc.Close()
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  driver.Handshake(),
		Plugins:          driver.PluginSetFor(driver.Options{Models: svc}),
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		GRPCDialOptions:  driver.DialOptions(),
		StartTimeout:     time.Minute,
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "sdktest", Level: hclog.Warn, Output: os.Stderr}),
		SyncStderr:       os.Stderr,
	})
	defer client.Kill()
	rpc, err := client.Client()
	if err != nil {
		h.fatalf("starting the plugin: %v", err)
	}
	v, err := rpc.Dispense(string(sdk.KindExplainer))
	if err != nil {
		h.fatalf("the plugin is not an explainer, or its Info is bad: %v", err)
	}
	e := v.(driver.Explainer)
	info := e.Info()
	h.id = info.ID
	h.checkConfig("remote", e.Check, c.Config)

	seeds, request := prepare(h, c)
	b := len(c.Targets)
	lm, err := e.Load(ctx, sdk.Draw{Params: c.Model})
	if err != nil {
		h.fatalf("Load: %v", err)
	}
	want, err := lm.Explain(ctx, request(0, b, seeds))
	if err != nil {
		h.fatalf("Explain: %v", err)
	}
	checkBehaviour(h, "Explain", lm.Explain, info, request, seeds, want)
	if err := lm.Close(); err != nil {
		h.errorf("releasing the draw: %v", err)
	}
	if _, err := lm.Explain(ctx, request(0, b, seeds)); err == nil {
		h.errorf("Explain under a released draw succeeded")
	}
	if k := svc.Len(); k != 0 {
		h.errorf("%d draws still served after their release", k)
	}
}

// DefaultCase is a conformance case on the paper's network (nn.PaperArch:
// 640 samples, 16 classes) with parameters drawn from seed, four
// waveforms (a 50 Hz sine at 3.2 kHz, a sag, a swell and a harmonic
// distortion) and the targets 0, 1, 2 and 3, under cfg.
func DefaultCase(seed uint64, cfg sdk.Config) (ExplainerCase, error) {
	arch := nn.PaperArch()
	lay, err := nn.NewLayout(arch)
	if err != nil {
		return ExplainerCase{}, err
	}
	p := nn.Params{Arch: arch, Data: make([]float32, lay.Size)}
	nn.Init(lay, p.Data, rand.New(rand.NewPCG(seed, 0x5eed)))
	const T = 640
	x := make([]float32, 4*T)
	for t := range T {
		ph := 2 * math.Pi * float64(t) / 64
		s := math.Sin(ph)
		dip := 1.0
		if t >= 200 && t < 392 {
			dip = 0.5
		}
		x[t] = float32(s)
		x[T+t] = float32(dip * s)
		x[2*T+t] = float32((2 - dip) * s)
		x[3*T+t] = float32(s + 0.2*math.Sin(3*ph) + 0.1*math.Sin(5*ph))
	}
	return ExplainerCase{Model: p, X: x, Targets: []int{0, 1, 2, 3}, Config: cfg}, nil
}

// pluginCmd is the command that starts the plugin command: `<interpreter>
// command...` for a Python script (pyinterp.Script), the interpreter the
// first of pyinterp.Candidates that imports the kit's modules (as the
// host's, without a plugin.toml); command as it is otherwise, or when
// command[0] cannot be found or read (starting it says why).
func pluginCmd(ctx context.Context, t testing.TB, command []string) (*exec.Cmd, error) {
	t.Helper()
	path, err := exec.LookPath(command[0])
	if errors.Is(err, exec.ErrDot) {
		path, err = command[0], nil
	}
	if err != nil {
		return exec.Command(command[0], command[1:]...), nil
	}
	isPy, shebang, err := pyinterp.Script(path)
	if err != nil || !isPy {
		return exec.Command(command[0], command[1:]...), nil
	}
	py, skipped, err := pyinterp.Choose(ctx, command[0], pyinterp.Candidates(shebang))
	if err != nil {
		return nil, err
	}
	if len(skipped) > 0 {
		t.Logf("sdktest: running %s under %s, passing over:\n\t%s", command[0], py, strings.Join(skipped, "\n\t"))
	}
	return exec.Command(py, append([]string{path}, command[1:]...)...), nil
}
