package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/uaxai/uaxai/host/torchserver"
	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/pythontest"
)

// This file holds what the package's tests share, made once for the
// whole test binary and ended by TestMain: the built command, and one
// PyTorch model server a network of testdata/golden/archs. Each is made
// on first use, so that a run of one test makes only what it uses; a
// test that shares one does not close it.
//
// The tests that run the binary for long (a recipe, a PyTorch model, a
// build) are parallel (t.Parallel, -parallel's GOMAXPROCS at a time):
// most of their time is waiting for child processes, which then overlap.
// None of them changes the process's state (environment, directory,
// signals to itself).

func TestMain(m *testing.M) {
	code := m.Run()
	closeTorchServers()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// built is the command, built by the first buildUaxai.
var built struct {
	once     sync.Once
	dir, exe string
	err      error
}

// buildUaxai returns the command built once per test binary (go build
// links it in seconds on an idle machine, in tens of seconds on a loaded
// one: a build a test would put most of the package's time in linking).
// The executable is shared: a test must not change it.
func buildUaxai(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "uaxai-test-"); built.err != nil {
			return
		}
		built.exe = filepath.Join(built.dir, "uaxai")
		if out, err := exec.Command("go", "build", "-o", built.exe, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.exe
}

// torchServers are the shared model servers, by network (torchNets'
// name).
var torchServers struct {
	mu  sync.Mutex
	all map[string]*sharedServer
}

// sharedServer is one network's server, started once.
type sharedServer struct {
	once sync.Once
	srv  *torchserver.Server
	err  error
}

// torchServer returns the model server of network n (the Python kit's
// server over archs.py's class with n's model.safetensors, on n.cin x
// 640 inputs), started by its first caller and shared by every later one
// until TestMain closes it: a server's start (torch's import) is most of
// the time of a test on it, seconds on an idle machine and tens of
// seconds on a loaded one. It skips t without the Python kit or torch.
func torchServer(t *testing.T, n torchNet) *torchserver.Server {
	t.Helper()
	pythontest.Need(t, "torch")
	s, err := startTorchServer(golden.Dir(t, "archs"), n)
	if err != nil {
		t.Fatalf("the shared model server of %s: %v", n.name, err)
	}
	return s
}

// startTorchServers starts the shared servers of nets that are not
// running, all at once (a start is mostly waiting for torch's import,
// which they then share the machine for), and waits for them; their
// errors are torchServer's.
func startTorchServers(t *testing.T, nets []torchNet) {
	t.Helper()
	pythontest.Need(t, "torch")
	root := golden.Dir(t, "archs")
	var wg sync.WaitGroup
	for _, n := range nets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			startTorchServer(root, n)
		}()
	}
	wg.Wait()
}

// startTorchServer is torchServer's server of n, archs.py and the
// networks' folders being under root.
func startTorchServer(root string, n torchNet) (*torchserver.Server, error) {
	torchServers.mu.Lock()
	if torchServers.all == nil {
		torchServers.all = map[string]*sharedServer{}
	}
	sh := torchServers.all[n.name]
	if sh == nil {
		sh = &sharedServer{}
		torchServers.all[n.name] = sh
	}
	torchServers.mu.Unlock()
	sh.once.Do(func() {
		args, err := parseModelArgs(n.args)
		if err != nil {
			sh.err = fmt.Errorf("--model-args %q: %w", n.args, err)
			return
		}
		model := torchserver.Model{Module: filepath.Join(root, "archs.py") + ":" + n.class, Args: args}
		weights := []string{filepath.Join(root, n.name, "model.safetensors")}
		sh.srv, sh.err = torchserver.Start(context.Background(), model, weights, n.cin, 640)
	})
	return sh.srv, sh.err
}

// closeTorchServers ends the shared model servers, all at once (each
// takes up to its grace period); a server that does not end cleanly is
// reported on stderr (TestMain has no test to fail).
func closeTorchServers() {
	torchServers.mu.Lock()
	defer torchServers.mu.Unlock()
	var wg sync.WaitGroup
	for name, sh := range torchServers.all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sh.once.Do(func() {}) // a start still under way ends first
			if sh.srv == nil {
				return
			}
			if err := sh.srv.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "closing the shared model server of %s: %v\n", name, err)
			}
		}()
	}
	wg.Wait()
	torchServers.all = nil
}
