//go:build !linux

package plugin

import "os/exec"

// configureCmd does nothing outside Linux: there, a plugin gets no
// process group of its own, and the host's Close, deadlines and signal
// handling kill the plugin process only.
func configureCmd(cmd *exec.Cmd) {}

// killGroup kills the plugin process (outside Linux, not its children).
func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

// waitExit returns false at once outside Linux: the caller's Wait reaps
// the plugin, and its group is not killed.
func waitExit(int) bool { return false }

// limitMemory does nothing outside Linux: a script process has the Go
// runtime's soft memory limit only.
func limitMemory(int64) error { return nil }
