//go:build !linux

package plugin

import "os/exec"

// configureCmd does nothing outside Linux: there, the host's Close and
// signal handling are the only way plugins are stopped.
func configureCmd(cmd *exec.Cmd) {}
