package pyinterp

import (
	"os/exec"
	"syscall"
)

// ownGroup starts a probe in a process group of its own (so that
// killGroup reaches an interpreter that a shell script started as its
// child), and makes the kernel kill the probe when this process dies.
func ownGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true // the group's ID is the probe's pid
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// killGroup sends SIGKILL to every process of the started cmd's group.
// exec.Cmd calls it (as Cancel) before it reaps the leader, so the
// group's ID is still the leader's.
func killGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
