package plugin

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/uaxai/uaxai/host/script"
	"github.com/uaxai/uaxai/sdk"
)

// Serve is `uaxai plugin serve ARGS`, the process the Manager starts for
// a plugin: args are a built-in's ID ("explainer.occlusion", or
// "explainer/occlusion") to serve it with ServeBuiltin, or
// "--script PATH [--memory BYTES] [--instances N]" to serve a summary
// script with ServeScript. Usage errors are written to stderr as well as
// returned. It returns only on an error; it prints nothing to stdout.
func Serve(reg *Registry, args []string, stderr io.Writer) error {
	if len(args) == 1 && !strings.HasPrefix(args[0], "-") {
		return ServeBuiltin(reg, strings.Replace(args[0], "/", ".", 1))
	}
	fs := flag.NewFlagSet("plugin serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("script", "", "the summary script to serve")
	memory := fs.Int64("memory", 0, "memory limit of this process in bytes (0: none)")
	instances := fs.Int("instances", 1, "interpreters running the script")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *path == "" || fs.NArg() > 0 {
		return fmt.Errorf("usage: uaxai plugin serve ID | --script PATH [--memory BYTES] [--instances N]")
	}
	ServeScript(*path, *memory, *instances)
	return nil
}

// ServeBuiltin serves the built-in id of reg as a plugin process: it is
// what `uaxai plugin serve <id>` runs in the child the Manager starts. It
// returns an error for an unknown ID or a built-in that is not a plugin of
// its registered kind; otherwise it serves until the host closes it (and
// exits the process itself on a serving error, as sdk.Serve does). The
// command must print nothing to stdout, which belongs to the protocol.
func ServeBuiltin(reg *Registry, id string) error {
	b, err := reg.Lookup(id)
	if err != nil {
		return err
	}
	sdk.Serve(b.New())
	return nil
}

// ScriptMaxStack is the bound of the goroutine stacks of a script
// process whose memory is limited to memory bytes (Go's default is 1 GB):
// an eighth of it, between 16 MiB and 256 MiB, so that a script that
// recurses without end dies of a stack overflow within a second or so,
// before its memory runs out (a stack that grows is copied: the old and
// the new one are both live for a moment).
func ScriptMaxStack(memory int64) int {
	return int(min(max(memory/8, 16<<20), 256<<20))
}

// ServeScript serves the summary script at path as a plugin process: it
// is what `uaxai plugin serve --script PATH --memory N --instances K`
// runs in the child that Manager.Script starts. Before the interpreter
// starts, it limits the process's memory to memory bytes (on Linux
// RLIMIT_DATA, which counts what the Go runtime maps for its heap and
// stacks; the runtime's soft limit is set to 7/8 of it, so that the
// collector works hard before the hard limit is met) and its goroutine
// stacks to ScriptMaxStack(memory). A script that exceeds either ends this
// process with a Go fatal error, which the host reports by the script's
// name and path. The script runs in instances interpreters, with no time
// limit of its own: the host bounds every call.
//
// A script that does not load is reported on stderr as one line,
// scriptErrorPrefix and the quoted error, and the process exits with
// status 3; otherwise ServeScript serves until the host closes it. (A
// build with the race detector sets no memory limit: ThreadSanitizer maps
// more than any sensible limit.)
func ServeScript(path string, memory int64, instances int) {
	if memory > 0 && !raceEnabled {
		debug.SetMemoryLimit(softMemoryLimit(memory))
		if err := limitMemory(memory); err != nil {
			fmt.Fprintf(os.Stderr, "%s%s\n", scriptErrorPrefix, strconv.Quote(fmt.Sprintf("script %s: limiting its memory to %d bytes: %v", path, memory, err)))
			os.Exit(3)
		}
	}
	debug.SetMaxStack(ScriptMaxStack(memory))
	// What the script prints goes to os.Stderr as it is when it prints:
	// once serving, go-plugin carries that to the host, which shows it.
	s, err := script.Load(path, script.WithInstances(max(instances, 1)), script.WithTimeout(0), script.WithOutput(stderrNow{}))
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s%s\n", scriptErrorPrefix, strconv.Quote(err.Error()))
		os.Exit(3)
	}
	sdk.Serve(s)
}

// softMemoryLimit is the Go runtime's soft memory limit of a script
// process whose hard limit is memory bytes: 7/8 of it, so that the
// collector works hard before the hard limit is met, and some room is
// left for what the runtime maps besides the heap.
func softMemoryLimit(memory int64) int64 { return memory / 8 * 7 }

// stderrNow writes to os.Stderr as it is at the time of the write.
type stderrNow struct{}

func (stderrNow) Write(b []byte) (int, error) { return os.Stderr.Write(b) }
