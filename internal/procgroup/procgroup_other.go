//go:build !linux

// Package procgroup starts a child process in a process group of its own
// and kills the whole group, on Linux; elsewhere it kills the child only.
package procgroup

import "os/exec"

// Own does nothing outside Linux: the child gets no process group of its
// own.
func Own(cmd *exec.Cmd) {}

// Kill kills the child process (outside Linux, not its children).
func Kill(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
