package proctest

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestListSeesAChild: a child started here is listed with this process
// as its parent, its own process group (Setpgid), its arguments, and as
// live; after it is reaped it is gone.
func TestListSeesAChild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	cmd := exec.Command("sleep", "3600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	pid := cmd.Process.Pid
	defer cmd.Process.Kill()
	var found *Proc
	for _, p := range List() {
		if p.Pid == pid {
			found = &p
		}
	}
	if found == nil {
		t.Fatalf("List lacks the child %d", pid)
	}
	if found.PPid != os.Getpid() || found.PGrp != pid || !strings.HasPrefix(found.Cmdline, "sleep 3600") || !found.Live() {
		t.Errorf("child listed as %+v; want ppid %d, pgrp %d, cmdline sleep 3600, live", *found, os.Getpid(), pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	for _, p := range List() {
		if p.Pid == pid {
			t.Errorf("reaped child %d still listed: %+v", pid, p)
		}
	}
	if (Proc{State: "Z"}).Live() || (Proc{State: "X"}).Live() || !(Proc{State: "S"}).Live() {
		t.Error("Live: zombies and dead processes must not count, sleeping ones must")
	}
}
