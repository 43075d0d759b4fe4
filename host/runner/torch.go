package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/uaxai/uaxai/host/limits"
	"github.com/uaxai/uaxai/internal/procgroup"
	"github.com/uaxai/uaxai/internal/pyinterp"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
)

// This file starts the Python kit's model server over a user's PyTorch
// module (sdk/python/uaxai_plugin/torchmodel.py run as a program), for
// `uaxai explain --model` and `uaxai predict --model`: one served draw a
// weights file, to which every explainer's model calls go.

// TorchModel is a PyTorch model of the user's: a torch.nn.Module class in
// a Python file, built with keyword arguments, one draw a state_dict
// file.
type TorchModel struct {
	// Module is "path/file.py:Class"; or a native graph network
	// (IsGraphModel: "file.onnx", "spec.toml"), computed in the host
	// with no Python, the other fields unused.
	Module string
	// Args are the class's keyword arguments (--model-args), values as
	// ParseSetting gives them (string, bool, int64, float64, arrays and
	// tables of them).
	Args map[string]any
	// Output is what the module's forward returns: "probs" (the
	// softmax; "" is "probs") or "logits".
	Output string
	// Threads is torch's intra-op threads in the server (0: 1).
	Threads int
	// Kit is the directory that holds the kit's uaxai_plugin package
	// ("": FindPythonKit).
	Kit string
	// Stderr, if set, receives what the server writes to its standard
	// error once it serves (Python's warnings); what it writes before is
	// quoted in the error of a server that does not start.
	Stderr io.Writer
}

// TorchServer is a running model server over a TorchModel's draws. Its
// process runs in a process group of its own, which Close kills, as
// does the end of the context it was started with; the kernel kills it
// when this process dies.
type TorchServer struct {
	module   string
	weights  []string
	c, t     int
	draws    []sdk.ModelRef
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stderr   *stderrTail
	exited   chan struct{} // closed once the process is reaped
	waitErr  error
	stopOnce sync.Once
	stop     chan struct{}
}

// pythonKitFile is the file by which FindPythonKit recognises the kit's
// directory.
var pythonKitFile = filepath.Join("uaxai_plugin", "torchmodel.py")

// FindPythonKit returns the directory holding the Python kit's
// uaxai_plugin package (the repository's sdk/python): the first entry of
// $PYTHONPATH that holds uaxai_plugin/torchmodel.py, else sdk/python in
// the directory of the uaxai executable or one of its parents, else in
// the working directory or one of its parents. The error lists where it
// looked.
func FindPythonKit() (string, error) {
	var looked []string
	has := func(dir string) bool {
		looked = append(looked, dir)
		_, err := os.Stat(filepath.Join(dir, pythonKitFile))
		return err == nil
	}
	for _, d := range filepath.SplitList(os.Getenv("PYTHONPATH")) {
		if d != "" && has(d) {
			return filepath.Abs(d)
		}
	}
	var roots []string
	if exe, err := os.Executable(); err == nil {
		roots = append(roots, filepath.Dir(exe))
	}
	if wd, err := os.Getwd(); err == nil {
		roots = append(roots, wd)
	}
	for _, r := range roots {
		for d := r; ; d = filepath.Dir(d) {
			if k := filepath.Join(d, "sdk", "python"); has(k) {
				return k, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", fmt.Errorf("the Python kit (the uaxai repository's sdk/python, with %s) is in none of: %s (accepted: run uaxai from the repository or build it there, or put its sdk/python on PYTHONPATH)",
		pythonKitFile, strings.Join(looked, ", "))
}

// stderrTail keeps the last stderrKeep bytes a process writes to its
// standard error, and copies them to fwd once forwarding starts.
type stderrTail struct {
	mu   sync.Mutex
	buf  []byte
	fwd  io.Writer
	done chan struct{} // closed when the pipe ends
}

const stderrKeep = 16 << 10

func (s *stderrTail) copyFrom(r io.Reader) {
	defer close(s.done)
	b := make([]byte, 4096)
	for {
		n, err := r.Read(b)
		if n > 0 {
			s.mu.Lock()
			s.buf = append(s.buf, b[:n]...)
			if len(s.buf) > stderrKeep {
				s.buf = append(s.buf[:0], s.buf[len(s.buf)-stderrKeep:]...)
			}
			if s.fwd != nil {
				_, _ = s.fwd.Write(b[:n])
			}
			s.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

func (s *stderrTail) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.TrimSpace(string(s.buf))
}

// forward copies what comes from now on to w (nil: nothing).
func (s *stderrTail) forward(w io.Writer) {
	s.mu.Lock()
	s.fwd = w
	s.mu.Unlock()
}

// torchServerWhat names the server in errors.
const torchServerWhat = "the PyTorch model server (--model)"

// StartTorchServer starts the kit's model server (python3 -m
// uaxai_plugin.torchmodel) over m, one draw a file of weights (a
// state_dict: .safetensors, or a .pt file torch.load reads), each draw
// taking inputs of channels x length samples; it returns once the server
// serves. The interpreter is the first of pyinterp.Candidates that
// imports the kit's modules. ctx bounds the server's life: its end kills
// the server, as Close does.
//
// Errors say what failed: no interpreter (what to install, where to name
// one), the interpreter lacks PyTorch, the module does not import (the
// server's traceback), the class needs arguments (--model-args), a
// weights file does not fit the module (PyTorch's list of the keys and
// shapes that differ).
func StartTorchServer(ctx context.Context, m TorchModel, weights []string, channels, length int) (*TorchServer, error) {
	switch {
	case m.Module == "":
		return nil, errors.New("--model: no module (accepted: path/file.py:Class)")
	case len(weights) == 0:
		return nil, fmt.Errorf("--model %s: no weights file (accepted: one or more state_dict files, .safetensors or .pt, each one draw)", m.Module)
	case channels < 1 || length < 1:
		return nil, fmt.Errorf("--model %s: inputs of %d channel(s) x %d samples (want both >= 1)", m.Module, channels, length)
	}
	i := strings.LastIndex(m.Module, ":")
	if i <= 0 || i == len(m.Module)-1 {
		return nil, fmt.Errorf("--model %q: want path/file.py:Class (the file that defines the torch.nn.Module, a colon, the class's name)", m.Module)
	}
	if _, err := os.Stat(m.Module[:i]); err != nil {
		return nil, fmt.Errorf("--model %s: %w (accepted: path/file.py:Class)", m.Module, err)
	}
	output := m.Output
	switch output {
	case "":
		output = "probs"
	case "probs", "logits":
	default:
		return nil, fmt.Errorf("--model-output %q: want probs (the module's forward returns the softmax) or logits", m.Output)
	}
	args := m.Args
	if args == nil {
		args = map[string]any{}
	}
	argsJSON, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("--model-args: %w (accepted: numbers, strings, booleans, arrays and tables of them)", err)
	}
	for _, w := range weights {
		if _, err := os.Stat(w); err != nil {
			return nil, fmt.Errorf("--weights: %w", err)
		}
	}
	kit := m.Kit
	if kit == "" {
		if kit, err = FindPythonKit(); err != nil {
			return nil, fmt.Errorf("--model %s: %w", m.Module, err)
		}
	}
	py, _, err := pyinterp.Choose(ctx, torchServerWhat, pyinterp.Candidates(""))
	if err != nil {
		return nil, fmt.Errorf("--model %s: %w (and PyTorch: Debian's python3-torch)", m.Module, err)
	}
	threads := max(m.Threads, 1)
	cmdArgs := []string{"-m", "uaxai_plugin.torchmodel", "--module", m.Module, "--args", string(argsJSON), "--weights"}
	cmdArgs = append(cmdArgs, weights...)
	cmdArgs = append(cmdArgs, "--in-channels", strconv.Itoa(channels), "--in-len", strconv.Itoa(length),
		"--output", output, "--threads", strconv.Itoa(threads))
	cmd := exec.Command(py, cmdArgs...)
	pp := kit
	if old := os.Getenv("PYTHONPATH"); old != "" {
		pp += string(filepath.ListSeparator) + old
	}
	cmd.Env = append(os.Environ(), "PYTHONPATH="+pp)
	procgroup.Own(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("--model %s: starting %s: %w", m.Module, py, err)
	}
	s := &TorchServer{module: m.Module, weights: weights, c: channels, t: length, cmd: cmd, stdin: stdin,
		stderr: &stderrTail{done: make(chan struct{})}, exited: make(chan struct{}), stop: make(chan struct{})}
	go s.stderr.copyFrom(errPipe)
	lines := make(chan string, 1)
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		// Wait closes the pipes: it waits for their readers, which end
		// when the process (and whatever inherited them) closes them.
		<-s.stderr.done
		<-outDone
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	go func() {
		select {
		case <-ctx.Done():
			s.kill()
		case <-s.stop:
		case <-s.exited:
		}
	}()
	var line string
	select {
	case line = <-lines:
	case <-ctx.Done():
		s.Close()
		return nil, fmt.Errorf("--model %s: %w", m.Module, context.Cause(ctx))
	}
	if line == "" {
		s.kill()
		<-s.exited
		return nil, s.startError(py)
	}
	var hello struct {
		Address string   `json:"address"`
		Handles []string `json:"handles"`
	}
	if err := json.Unmarshal([]byte(line), &hello); err != nil || hello.Address == "" || len(hello.Handles) != len(weights) {
		s.Close()
		return nil, fmt.Errorf("--model %s: %s printed %q, want {\"address\": ..., \"handles\": [one a weights file, %d]}", m.Module, torchServerWhat, strings.TrimSpace(line), len(weights))
	}
	for i, h := range hello.Handles {
		v, err := strconv.ParseUint(h, 10, 64)
		if err != nil || v == 0 {
			s.Close()
			return nil, fmt.Errorf("--model %s: %s gave handle %q for %s, want an integer >= 1", m.Module, torchServerWhat, h, weights[i])
		}
		s.draws = append(s.draws, sdk.ModelRef{Address: hello.Address, Handle: v})
	}
	s.stderr.forward(m.Stderr)
	return s, nil
}

// startError is the error of a server that ended before it served: what
// it wrote to its standard error, with what the user should do.
func (s *TorchServer) startError(py string) error {
	msg := s.stderr.String()
	status := "was killed"
	if s.waitErr == nil {
		status = "exited with status 0"
	} else if ee, ok := errors.AsType[*exec.ExitError](s.waitErr); ok && ee.ExitCode() >= 0 {
		status = fmt.Sprintf("exited with status %d", ee.ExitCode())
	}
	head := fmt.Sprintf("--model %s: %s (%s -m uaxai_plugin.torchmodel) %s before serving", s.module, torchServerWhat, py, status)
	const prefix = "uaxai_plugin.torchmodel: "
	switch {
	case strings.Contains(msg, "needs PyTorch"):
		return fmt.Errorf("%s: %s lacks PyTorch (torch): install it (Debian: apt-get install python3-torch) or name an interpreter that has numpy, grpcio, protobuf and torch in $%s:\n%s", head, py, pyinterp.Env, lastLines(msg, 3))
	case strings.Contains(msg, "No module named 'uaxai_plugin'"):
		return fmt.Errorf("%s: the Python kit is not importable with %s (accepted: the repository's sdk/python on PYTHONPATH):\n%s", head, s.cmd.Env[len(s.cmd.Env)-1], lastLines(msg, 3))
	case strings.Contains(msg, prefix) && !strings.Contains(msg, "Traceback (most recent call last)"):
		why := msg[strings.LastIndex(msg, prefix)+len(prefix):]
		hint := ""
		switch {
		case strings.Contains(why, "loading state_dict"):
			hint = " (the weights file does not fit the module as --model-args builds it: PyTorch's list above names the keys and shapes that differ)"
		case strings.Contains(why, "required positional argument") || strings.Contains(why, "unexpected keyword argument"):
			hint = " (give the class's constructor arguments with --model-args key=value,...)"
		case strings.Contains(why, "output=\"logits\""):
			hint = " (the module returns logits: add --model-output logits)"
		}
		return fmt.Errorf("%s: %s%s", head, why, hint)
	case msg == "":
		return fmt.Errorf("%s, and wrote nothing to its standard error", head)
	}
	return fmt.Errorf("%s; it wrote:\n%s", head, lastLines(msg, 40))
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	ls := strings.Split(s, "\n")
	if len(ls) > n {
		ls = append([]string{"..."}, ls[len(ls)-n:]...)
	}
	return strings.Join(ls, "\n")
}

// Draws are the served draws, one a weights file, in order.
func (s *TorchServer) Draws() []sdk.ModelRef { return s.draws }

// Weights are the files of the draws, in order.
func (s *TorchServer) Weights() []string { return s.weights }

// Shape is the channels and samples of the inputs the draws take.
func (s *TorchServer) Shape() (channels, length int) { return s.c, s.t }

// Module is the TorchModel's Module.
func (s *TorchServer) Module() string { return s.module }

func (s *TorchServer) kill() {
	select {
	case <-s.exited:
	default:
		// The leader is not reaped before s.exited closes, so the
		// group's ID is still its pid.
		procgroup.Kill(s.cmd)
	}
}

// Close ends the server: its standard input closes, which ends it; past
// a grace period its process group is killed. It waits for the process
// and returns nil unless it failed on its own.
func (s *TorchServer) Close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	s.stdin.Close()
	select {
	case <-s.exited:
		if s.waitErr != nil {
			if msg := s.stderr.String(); msg != "" {
				return fmt.Errorf("%s %s: %w: %s", torchServerWhat, s.module, s.waitErr, lastLines(msg, 10))
			}
		}
		return nil
	case <-time.After(5 * time.Second):
	}
	s.kill()
	<-s.exited
	return nil
}

// servedShape opens each served draw and checks that it takes inputs of
// n values and that all have the classes of draw 0, which it returns.
// names are the draws' weights files, for messages; calls bounds each
// Describe.
func servedShape(ctx context.Context, refs []sdk.ModelRef, names []string, n int, calls driver.ModelCalls) (classes int, err error) {
	for s, r := range refs {
		m, err := driver.OpenDraw(ctx, sdk.Draw{Served: &r}, calls)
		if err != nil {
			return 0, fmt.Errorf("draw %d (%s): %w", s, names[s], err)
		}
		dn, dk := m.InputLen(), m.Classes()
		m.Close()
		switch {
		case dn != n:
			return 0, fmt.Errorf("draw %d (%s): the served model takes inputs of %d values, and the input's waveforms have %d", s, names[s], dn, n)
		case s == 0:
			classes = dk
		case dk != classes:
			return 0, fmt.Errorf("draw %d (%s): %d classes, and draw 0 has %d (want one shape for all draws)", s, names[s], dk, classes)
		}
	}
	return classes, nil
}

// servedBatch is the inputs of one Probs request of servedProbs: a
// forward pass's batch, which the network bounds count (forwardBatch).
const servedBatch = forwardBatch

// servedProbs writes into dst (nIn x classes) the mean over the served
// draws of the class probabilities of the inputs x (nIn x n),
// (1/S) sum_s p(c | x_i, theta_s), accumulated in float64. calls bounds
// each request (a batch of servedBatch inputs).
func servedProbs(ctx context.Context, dst []float64, refs []sdk.ModelRef, names []string, x []float32, n, classes int, calls driver.ModelCalls) error {
	nIn := len(x) / n
	clear(dst)
	pr := make([]float32, servedBatch*classes)
	for s, r := range refs {
		m, err := driver.OpenDraw(ctx, sdk.Draw{Served: &r}, calls)
		if err != nil {
			return fmt.Errorf("draw %d (%s): %w", s, names[s], err)
		}
		err = m.Call(ctx, func(model nn.Model) error {
			for b0 := 0; b0 < nIn; b0 += servedBatch {
				b := min(servedBatch, nIn-b0)
				if err := model.Probs(ctx, pr[:b*classes], x[b0*n:(b0+b)*n]); err != nil {
					return err
				}
				for j, v := range pr[:b*classes] {
					if math.IsNaN(float64(v)) {
						return fmt.Errorf("input %d: a probability is NaN", b0+j/classes)
					}
					dst[b0*classes+j] += float64(v)
				}
			}
			return nil
		})
		m.Close()
		if err != nil {
			return fmt.Errorf("draw %d (%s): %w", s, names[s], err)
		}
	}
	for i := range dst {
		dst[i] /= float64(len(refs))
	}
	return nil
}

// serveDraws returns the served draws of an Explain or a Predict and
// their weights files: served's, a server the caller started (weights,
// if any, must be its files), else those of a server started here over
// model and weights on the shape of in, which the caller closes
// (started): the Python kit's server of a PyTorch module, or, for a
// native graph network (IsGraphModel: .onnx, .toml), a model service of
// this process (serveGraph).
//
// calls bounds each request to the draws' service by lim's model_call;
// past it a PyTorch model's server is killed (TorchServer.ModelCalls).
func serveDraws(ctx context.Context, model *TorchModel, served *TorchServer, weights []string, in inputs, lim limits.Limits) (refs []sdk.ModelRef, names []string, started io.Closer, calls driver.ModelCalls, err error) {
	limit := modelCallLimit(lim)
	if served == nil && IsGraphModel(model.Module) {
		refs, names, started, err = serveGraph(model.Module, weights, in)
		return refs, names, started, driver.ModelCalls{Limit: limit}, err
	}
	if served == nil {
		ts, err := StartTorchServer(ctx, *model, weights, in.c, in.t)
		if err != nil {
			return nil, nil, nil, calls, err
		}
		return ts.Draws(), ts.Weights(), ts, ts.ModelCalls(limit), nil
	}
	if c, t := served.Shape(); c != in.c || t != in.t {
		return nil, nil, nil, calls, fmt.Errorf("the model server of %s takes inputs of %d channel(s) x %d samples, and the input's waveforms have %d x %d", served.Module(), c, t, in.c, in.t)
	}
	if len(weights) > 0 && strings.Join(weights, "\x00") != strings.Join(served.Weights(), "\x00") {
		return nil, nil, nil, calls, fmt.Errorf("weights %s: the model server of %s serves %s (want its files, or none)", strings.Join(weights, ","), served.Module(), strings.Join(served.Weights(), ","))
	}
	return served.Draws(), served.Weights(), nil, served.ModelCalls(limit), nil
}

// modelCallLimit is limits.model_call of l (its default if unset).
func modelCallLimit(l limits.Limits) sdk.CallLimit {
	return sdk.CallLimit{Timeout: l.OrDefault().ModelCall, Key: "limits.model_call"}
}

// ModelCalls bounds each request to the server's draws by limit; one
// past it kills the server's process group (the server is then of no
// further use: its later requests fail) and fails naming the server.
func (s *TorchServer) ModelCalls(limit sdk.CallLimit) driver.ModelCalls {
	return driver.ModelCalls{Limit: limit, Expired: func(err error) error {
		s.kill()
		select {
		case <-s.exited:
		case <-time.After(5 * time.Second):
		}
		return fmt.Errorf("%s %s (pid %d): %w; killed its process group", torchServerWhat, s.module, s.cmd.Process.Pid, err)
	}}
}
