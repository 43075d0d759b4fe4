// Package torchserver runs the Python kit's model server
// (sdk/python/uaxai_plugin/torchmodel.py, python3 -m
// uaxai_plugin.torchmodel) over a user's torch.nn.Module, one served draw
// a weights file (or, with Model.MCDropoutSeeds, one MC-dropout draw of
// the one file's network a seed), in a process group of its own, for
// `uaxai explain --model` and `uaxai predict --model`.
package torchserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/uaxai/uaxai/internal/procgroup"
	"github.com/uaxai/uaxai/internal/pyinterp"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
)

// Model is a PyTorch model of the user's: a torch.nn.Module class in a
// Python file, built with keyword arguments, one draw a state_dict file.
type Model struct {
	// Module is "path/file.py:Class".
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
	// MCDropoutSeeds, if set, make the draws MC-dropout draws of the one
	// weights file's network, one a seed (uaxai_plugin.mcdropout: every
	// torch.nn.Dropout and the attention dropout of every
	// torch.nn.MultiheadAttention masked by a mask fixed by the seed),
	// instead of one draw a file.
	MCDropoutSeeds []uint64
}

// Server is a running model server over a Model's draws. Its
// process runs in a process group of its own, which Close kills, as
// does the end of the context it was started with; the kernel kills it
// when this process dies.
type Server struct {
	module   string
	weights  []string
	names    []string // the draws' names, for messages
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
// the working directory or one of its parents, else the kit this binary
// embeds, unpacked in the cache directory (UnpackedKit). The error lists
// where it looked.
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
	// a binary without its repository: the kit it embeds, unpacked
	kit, err := UnpackedKit()
	if err == nil {
		return kit, nil
	}
	return "", fmt.Errorf("the Python kit (sdk/python, with %s) is in none of: %s, and the one this binary holds could not be unpacked (%v) (accepted: a writable cache directory, $UAXAI_CACHE, or the kit's sdk/python on PYTHONPATH)",
		pythonKitFile, strings.Join(looked, ", "), err)
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

// what names the server in errors.
const what = "the PyTorch model server (--model)"

// Start starts the kit's model server (python3 -m
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
func Start(ctx context.Context, m Model, weights []string, channels, length int) (*Server, error) {
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
	names := weights
	if seeds := m.MCDropoutSeeds; len(seeds) > 0 {
		if len(weights) != 1 {
			return nil, fmt.Errorf("--model %s: MC dropout of %d weights files; it samples the dropout of one network (accepted: one weights file with MC dropout, or several without it, an ensemble)", m.Module, len(weights))
		}
		names = make([]string, len(seeds))
		for s := range seeds {
			names[s] = fmt.Sprintf("%s, MC-dropout draw %d", weights[0], s)
		}
	}
	kit := m.Kit
	if kit == "" {
		if kit, err = FindPythonKit(); err != nil {
			return nil, fmt.Errorf("--model %s: %w", m.Module, err)
		}
	}
	py, _, err := pyinterp.Choose(ctx, what, pyinterp.Candidates(""))
	if err != nil {
		return nil, fmt.Errorf("--model %s: %w (and PyTorch: Debian's python3-torch)", m.Module, err)
	}
	threads := max(m.Threads, 1)
	cmdArgs := []string{"-m", "uaxai_plugin.torchmodel", "--module", m.Module, "--args", string(argsJSON), "--weights"}
	cmdArgs = append(cmdArgs, weights...)
	cmdArgs = append(cmdArgs, "--in-channels", strconv.Itoa(channels), "--in-len", strconv.Itoa(length),
		"--output", output, "--threads", strconv.Itoa(threads))
	if len(m.MCDropoutSeeds) > 0 {
		// one argument a seed: a list as one argument could pass the
		// kernel's bound on an argument's length (128 KiB)
		cmdArgs = append(cmdArgs, "--mc-dropout-seeds")
		for _, seed := range m.MCDropoutSeeds {
			cmdArgs = append(cmdArgs, strconv.FormatUint(seed, 10))
		}
	}
	// The socket's directory is made here and removed here once the
	// server is reaped: a server killed with its group (Close's grace
	// run out, a signal to this process, a call past its limit) cannot
	// remove it itself.
	sockDir, err := os.MkdirTemp("", "uaxai-torch-") // mode 0700
	if err != nil {
		return nil, fmt.Errorf("--model %s: the model server's socket directory: %w", m.Module, err)
	}
	started := false
	defer func() {
		if !started {
			_ = os.RemoveAll(sockDir)
		}
	}()
	cmdArgs = append(cmdArgs, "--socket", filepath.Join(sockDir, "model.sock"))
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
	started = true // the goroutine that reaps it removes sockDir
	s := &Server{module: m.Module, weights: weights, names: names, c: channels, t: length, cmd: cmd, stdin: stdin,
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
		_ = os.RemoveAll(sockDir)
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
	if err := json.Unmarshal([]byte(line), &hello); err != nil || hello.Address == "" || len(hello.Handles) != len(names) {
		s.Close()
		return nil, fmt.Errorf("--model %s: %s printed %q, want {\"address\": ..., \"handles\": [one a draw, %d]}", m.Module, what, strings.TrimSpace(line), len(names))
	}
	for i, h := range hello.Handles {
		v, err := strconv.ParseUint(h, 10, 64)
		if err != nil || v == 0 {
			s.Close()
			return nil, fmt.Errorf("--model %s: %s gave handle %q for %s, want an integer >= 1", m.Module, what, h, names[i])
		}
		s.draws = append(s.draws, sdk.ModelRef{Address: hello.Address, Handle: v})
	}
	s.stderr.forward(m.Stderr)
	return s, nil
}

// startError is the error of a server that ended before it served: what
// it wrote to its standard error, with what the user should do.
func (s *Server) startError(py string) error {
	msg := s.stderr.String()
	status := "was killed"
	if s.waitErr == nil {
		status = "exited with status 0"
	} else if ee, ok := errors.AsType[*exec.ExitError](s.waitErr); ok && ee.ExitCode() >= 0 {
		status = fmt.Sprintf("exited with status %d", ee.ExitCode())
	}
	head := fmt.Sprintf("--model %s: %s (%s -m uaxai_plugin.torchmodel) %s before serving", s.module, what, py, status)
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

// Draws are the served draws, one a weights file (or one a seed of
// Model.MCDropoutSeeds), in order.
func (s *Server) Draws() []sdk.ModelRef { return s.draws }

// Weights are the weights files, in order.
func (s *Server) Weights() []string { return s.weights }

// Names name the draws, in order: their weights files, or "W,
// MC-dropout draw s".
func (s *Server) Names() []string { return s.names }

// Shape is the channels and samples of the inputs the draws take.
func (s *Server) Shape() (channels, length int) { return s.c, s.t }

// Module is the Model's Module.
func (s *Server) Module() string { return s.module }

func (s *Server) kill() {
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
func (s *Server) Close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	s.stdin.Close()
	select {
	case <-s.exited:
		if s.waitErr != nil {
			if msg := s.stderr.String(); msg != "" {
				return fmt.Errorf("%s %s: %w: %s", what, s.module, s.waitErr, lastLines(msg, 10))
			}
		}
		return nil
	case <-time.After(5 * time.Second):
	}
	s.kill()
	<-s.exited
	return nil
}

// ModelCalls bounds each request to the server's draws by limit; one
// past it kills the server's process group (the server is then of no
// further use: its later requests fail) and fails naming the server.
func (s *Server) ModelCalls(limit sdk.CallLimit) driver.ModelCalls {
	return driver.ModelCalls{Limit: limit, Expired: func(err error) error {
		s.kill()
		select {
		case <-s.exited:
		case <-time.After(5 * time.Second):
		}
		return fmt.Errorf("%s %s (pid %d): %w; killed its process group", what, s.module, s.cmd.Process.Pid, err)
	}}
}
