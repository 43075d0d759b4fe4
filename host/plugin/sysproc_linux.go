package plugin

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

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

// signalOf is the name of the signal that ended the process ("SIGKILL")
// and true, or "" and false if it exited.
func signalOf(st *os.ProcessState) (string, bool) {
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return "", false
	}
	if name := unix.SignalName(ws.Signal()); name != "" {
		return name, true
	}
	return fmt.Sprintf("signal %d", int(ws.Signal())), true
}

// socketPathMax is the longest path a unix socket may have: sun_path's
// 108 bytes, less the NUL that ends it.
const socketPathMax = 107
