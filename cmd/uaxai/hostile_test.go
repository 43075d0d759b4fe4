package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostilePlugins builds the plugin that misbehaves on purpose
// (host/plugin/internal/testplugin/hostile) into a plugin directory as
// each of names, with the directory where it records its pids.
func hostilePlugins(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(t.TempDir(), "hostile")
	if b, err := exec.Command("go", "build", "-o", bin, "../../host/plugin/internal/testplugin/hostile").CombinedOutput(); err != nil {
		t.Fatalf("build the hostile plugin: %v\n%s", err, b)
	}
	if err := os.Mkdir(filepath.Join(dir, "pids"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.Symlink(bin, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// survivors lists the live processes that a hostile plugin of dir
// recorded, or that are in the process group of one.
func survivors(dir string) []string {
	var pids []string
	ents, _ := os.ReadDir(filepath.Join(dir, "pids"))
	for _, e := range ents {
		pids = append(pids, e.Name())
	}
	var out []string
	procs, _ := os.ReadDir("/proc")
	for _, e := range procs {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])) // state ppid pgrp ...
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		for _, p := range pids {
			if e.Name() == p || f[2] == p {
				out = append(out, e.Name())
			}
		}
	}
	return out
}

func noSurvivors(t *testing.T, dir string) {
	t.Helper()
	var left []string
	for range 1200 { // up to a minute: a loaded machine reaps the killed slowly
		if left = survivors(dir); len(left) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("processes left behind: %v", left)
	for _, p := range left {
		pid, _ := strconv.Atoi(p)
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// TestFirstSignalEndsARun: SIGINT to uaxai (to it alone: plugins are in
// process groups of their own, which a terminal's Ctrl-C does not reach)
// while a plugin is in its handshake, its grandchild holding its stdout,
// ends the run at once, with the plugin named and exit status 130, and
// kills the plugin and its grandchild.
func TestFirstSignalEndsARun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs binaries")
	}
	t.Parallel() // a slow run of the binary: see shared_test.go
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	exe := buildUaxai(t)
	plugdir := hostilePlugins(t, "uaxai-explainer-spawn_start")
	dir := t.TempDir()
	rec := writeRecipe(t, dir, 2, "spawn_start", "")
	cmd := exec.Command(exe, "run", rec, "--plugins", plugdir, "--out", filepath.Join(dir, "out"), "--no-cache")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// One count decides (a second could see the check's plugin process
	// gone between the check and the run, as a loaded machine showed).
	// The run generates data and fits before it starts the plugin: up to
	// minutes on a loaded machine.
	n := 0
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(25 * time.Millisecond) {
		if n = len(survivors(plugdir)); n >= 2 {
			break
		}
	}
	if n < 2 {
		cmd.Process.Kill()
		t.Fatalf("the plugin and its grandchild did not start (%d processes):\n%s", n, stderr.String())
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("uaxai did not end within 5 minutes of SIGINT:\n%s", stderr.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Errorf("exit %v, want status 130", err)
	}
	// The signal, not the handshake limit, ended it: at once.
	if !strings.Contains(stderr.String(), "explainer.spawn_start") || !strings.Contains(stderr.String(), "interrupted") || strings.Contains(stderr.String(), "no handshake within") {
		t.Errorf("stderr does not name the plugin stopped by the signal:\n%s", stderr.String())
	}
	noSurvivors(t, plugdir)
}

// TestPluginsWithAnOrphaningPlugin: `uaxai plugins` lists a plugin
// binary that starts a background child holding its stdout and exits,
// as failed to start, at once (it used to hang for the handshake's
// minute, then for ever in Kill), and leaves no process behind.
func TestPluginsWithAnOrphaningPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs binaries")
	}
	t.Parallel() // a slow run of the binary: see shared_test.go
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	exe := buildUaxai(t)
	plugdir := hostilePlugins(t, "uaxai-explainer-orphan_start")
	cmd := exec.Command(exe, "plugins", "--plugins", plugdir, "--scripts", t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("uaxai plugins did not end within 5 minutes:\n%s", stderr.String())
	}
	// At once: the plugin's exit, not the handshake limit, ended its start.
	if !strings.Contains(stdout.String(), filepath.Join(plugdir, "uaxai-explainer-orphan_start")+": failed to start") ||
		!strings.Contains(stderr.String(), `starting plugin "explainer.orphan_start"`) || strings.Contains(stderr.String(), "no handshake within") {
		t.Errorf("the orphaning plugin is not reported:\n%s\n%s", stdout.String(), stderr.String())
	}
	noSurvivors(t, plugdir)
}
