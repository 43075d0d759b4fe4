//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

var (
	kind, mode, call string
	// The process's own stdout and stderr: after Serve, os.Stdout and
	// os.Stderr are go-plugin's forwarding pipes.
	rawStdout, rawStderr = os.Stdout, os.Stderr
)

func main() {
	name := strings.TrimPrefix(filepath.Base(os.Args[0]), "uaxai-")
	k, rest, _ := strings.Cut(name, "-")
	m, c, _ := strings.Cut(rest, "_")
	kind, mode, call = k, m, c
	record(os.Getpid())
	id := kind + "." + rest
	if call == "start" {
		switch mode {
		case "garbage":
			fmt.Println("hello from a plugin that does not speak go-plugin")
			wait()
		case "silent":
			wait()
		case "orphan":
			grandchild(false)
			os.Exit(0)
		case "escape":
			grandchild(true)
			os.Exit(0)
		}
	}
	act("start")
	switch kind {
	case "posterior":
		sdk.Serve(posterior{id})
	case "explainer":
		sdk.Serve(explainer{id})
	default:
		sdk.Serve(summary{id})
	}
}

// pids is the directory where pids are recorded, or "".
func pids() string {
	dir := filepath.Join(filepath.Dir(os.Args[0]), "pids")
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		return dir
	}
	return ""
}

// record writes pid to the pids directory.
func record(pid int) {
	if dir := pids(); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, strconv.Itoa(pid)), nil, 0o644)
	}
}

// wait never returns.
func wait() {
	for {
		time.Sleep(time.Hour)
	}
}

// grandchild starts sh, which becomes sleep, holding this process's
// stdout and stderr, and records its pid; setsid puts it in a session
// (and process group) of its own.
func grandchild(setsid bool) {
	cmd := exec.Command("/bin/sh", "-c", "exec sleep 300")
	cmd.Stdout, cmd.Stderr = rawStdout, rawStderr
	if setsid {
		cmd.SysProcAttr = &unix.SysProcAttr{Setsid: true}
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(rawStderr, "hostile: starting a grandchild:", err)
		os.Exit(1)
	}
	record(cmd.Process.Pid)
}

// act misbehaves if c is the call named in the file name.
func act(c string) {
	if c != call {
		return
	}
	switch mode {
	case "hang":
		wait()
	case "crash":
		go func() { panic("hostile: crashing in " + c) }()
		wait()
	case "spawn":
		grandchild(false)
		wait()
	case "hog":
		var keep [][]byte
		for range 1024 {
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = 1
			}
			keep = append(keep, b)
		}
		fmt.Fprintln(rawStderr, "hostile: holding", len(keep), "MiB")
		wait()
	case "liar":
		entry, _ := json.Marshal(map[string]string{"@level": "info", "@message": liarText, "@timestamp": time.Now().Format("2006-01-02T15:04:05.000000Z07:00")})
		fmt.Fprintf(rawStderr, "%s\n%s\n", liarText, entry)
		fmt.Fprintf(os.Stderr, "%s\n", liarText)
	case "oom":
		_ = unix.Setrlimit(unix.RLIMIT_DATA, &unix.Rlimit{Cur: 256 << 20, Max: 256 << 20})
		var keep [][]byte
		for {
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = 1
			}
			keep = append(keep, b)
		}
	}
}

// liarText erases the terminal's line, returns to its start, and prints
// a line that looks like the host's.
const liarText = "\x1b[2K\ruaxai: all good\nuaxai: all good"

// version is the plugin's version: liarText in liar mode.
func version() string {
	if mode == "liar" {
		return "0.0.1" + liarText
	}
	return "0.0.1"
}

// lie is the error of a call in liar mode.
func lie(c string) error {
	if c == call && mode == "liar" {
		return fmt.Errorf("hostile: %s", liarText)
	}
	return nil
}

// spoil makes a good answer bad as mode says: v's values NaN or +Inf, or
// (shape) its length one less.
func spoil[T float32 | float64](c string, v []T) []T {
	if c != call || len(v) == 0 {
		return v
	}
	switch mode {
	case "nan":
		v[0] = T(math.NaN())
	case "inf":
		v[0] = T(math.Inf(1))
	case "shape":
		v = v[:len(v)-1]
	}
	return v
}

type posterior struct{ id string }

func (p posterior) Info() sdk.Info { return sdk.Info{ID: p.id, Version: version(), Finite: true} }

func (p posterior) Check(cfg sdk.Config, draws int) error {
	act("check")
	return lie("check")
}

func (p posterior) Fit(ctx context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	act("fit")
	lay, err := nn.NewLayout(req.Arch)
	if err != nil {
		return sdk.Artifact{}, err
	}
	w := make([]float32, lay.Size)
	for i := range w {
		w[i] = float32(i%7-3) * 0.01
	}
	return sdk.Artifact{Arch: req.Arch, Tensors: map[string][]float32{"w": spoil("fit", w)}}, nil
}

func (p posterior) Sample(ctx context.Context, a sdk.Artifact, req sdk.SampleRequest) ([]nn.Params, error) {
	act("sample")
	out := make([]nn.Params, len(req.Seeds))
	for s := range out {
		out[s] = nn.Params{Arch: a.Arch, Data: append([]float32(nil), a.Tensors["w"]...)}
	}
	if len(out) > 0 {
		out[0].Data = spoil("sample", out[0].Data)
	}
	return out, nil
}

type explainer struct{ id string }

func (e explainer) Info() sdk.Info { return sdk.Info{ID: e.id, Version: version()} }

func (e explainer) Check(cfg sdk.Config) error {
	act("check")
	return lie("check")
}

// Explain returns |x|, plus one so that no map is all zeros.
func (e explainer) Explain(ctx context.Context, m nn.Model, req sdk.ExplainRequest) ([][]float64, error) {
	act("explain")
	n := m.InputLen()
	maps := make([][]float64, len(req.Targets))
	for b := range maps {
		maps[b] = make([]float64, n)
		for t := range maps[b] {
			maps[b][t] = math.Abs(float64(req.X[b*n+t])) + 1
		}
	}
	if call == "explain" && mode == "shape" {
		return maps[:len(maps)-1], nil
	}
	if len(maps) > 0 {
		maps[0] = spoil("explain", maps[0])
	}
	return maps, nil
}

type summary struct{ id string }

func (s summary) Info() sdk.Info {
	return sdk.Info{ID: s.id, Version: version(), Output: sdk.OutputMap}
}

func (s summary) Check(cfg sdk.Config) error {
	act("check")
	return lie("check")
}

// Summarise returns the first draw of each input.
func (s summary) Summarise(ctx context.Context, draws [][][]float64, cfg sdk.Config) ([]sdk.Result, error) {
	act("summarise")
	out := make([]sdk.Result, len(draws))
	for i, d := range draws {
		out[i].Map = append([]float64(nil), d[0]...)
	}
	if call == "summarise" && mode == "shape" {
		return out[:len(out)-1], nil
	}
	if len(out) > 0 {
		out[0].Map = spoil("summarise", out[0].Map)
	}
	return out, nil
}
