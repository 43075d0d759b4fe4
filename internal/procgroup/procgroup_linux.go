package procgroup

import (
	"os/exec"
	"syscall"
)

// Own makes cmd start in a process group of its own, whose ID is its
// pid, and makes the kernel kill it when this process dies, even by
// SIGKILL, which no handler can catch. (Pdeathsig fires when the OS
// thread that started the child exits; the Go runtime does not end its
// threads except those of goroutines that exit while locked to one.)
// Pdeathsig reaches the child only, not its children.
func Own(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// Kill sends SIGKILL to every process of the started cmd's group. The
// caller makes sure the leader has not been reaped (exec.Cmd calls its
// Cancel before it reaps), so that the group's ID is still the leader's.
func Kill(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
