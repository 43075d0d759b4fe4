//go:build !linux

package pyinterp

import "os/exec"

// ownGroup does nothing outside Linux: a probe gets no process group of
// its own.
func ownGroup(cmd *exec.Cmd) {}

// killGroup kills the probe process (outside Linux, not its children).
func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
