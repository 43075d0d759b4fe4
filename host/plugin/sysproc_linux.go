package plugin

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// configureCmd starts a plugin in a process group of its own (so that
// killGroup reaches everything it starts), and makes the kernel kill the
// plugin itself when the host dies, even by SIGKILL, which no handler can
// catch. (Pdeathsig fires when the OS thread that started the child
// exits; the Go runtime does not end its threads except those of
// goroutines that exit while locked to one, which the host never starts
// plugins from.) Pdeathsig reaches the plugin only, not its children: a
// host killed by SIGKILL leaves a plugin's grandchildren to init.
func configureCmd(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true // the group's ID is the plugin's pid
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// killGroup sends SIGKILL to every process of the started cmd's group.
// The caller makes sure the leader has not been reaped.
func killGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// waitExit returns once process pid has exited, without reaping it: a
// zombie keeps its pid, and with it the ID of its process group, so that
// the group can still be killed safely. It reports whether it waited.
func waitExit(pid int) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err == nil
		}
	}
}

// limitMemory limits the data segment of this process (private writable
// mappings: the Go heap, stacks) to n bytes. RLIMIT_AS would count the
// address space the Go runtime reserves without using (over a GB).
func limitMemory(n int64) error {
	return unix.Setrlimit(unix.RLIMIT_DATA, &unix.Rlimit{Cur: uint64(n), Max: uint64(n)})
}
