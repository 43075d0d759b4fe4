package plugin

import (
	"os/exec"
	"syscall"
)

// configureCmd makes the kernel kill a plugin process when the host dies,
// even by SIGKILL, which no handler can catch. (Pdeathsig fires when the
// OS thread that started the child exits; the Go runtime does not end its
// threads except those of goroutines that exit while locked to one, which
// the host never starts plugins from.)
func configureCmd(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
