//go:build !linux

package procgroup

import "os/exec"

// Own does nothing outside Linux: the child gets no process group of its
// own.
func Own(cmd *exec.Cmd) {}

// Kill kills the child process (outside Linux, not its children).
func Kill(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
