package plugin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/uaxai/uaxai/host/limits"
)

// cgroup is the cgroup v2 of one plugin process: a child of the host's
// own cgroup, whose memory.max is the plugin's memory limit. The process
// starts in it (clone3's CLONE_INTO_CGROUP, exec.Cmd's UseCgroupFD), so
// that it is bound from its first instruction, and so is everything it
// starts; it is removed once the process is reaped.
type cgroup struct {
	dir string
	fd  int
}

var cgroupSeq atomic.Int64

// newCgroup makes the cgroup of a plugin process limited to limit bytes
// under the host's cgroup, or says why it cannot: no cgroup v2, the
// memory controller not delegated to the host's cgroup (and not enabled
// by writing cgroup.subtree_control), or no permission to make one.
func newCgroup(limit int64) (*cgroup, error) {
	parent, _ := limits.CgroupV2()
	if parent == "" {
		return nil, errors.New("no cgroup v2 hierarchy")
	}
	ctl := filepath.Join(parent, "cgroup.subtree_control")
	have, err := os.ReadFile(ctl)
	if err != nil {
		return nil, fmt.Errorf("cgroup v2 %s: %w", parent, err)
	}
	if !strings.Contains(" "+strings.TrimSpace(string(have))+" ", " memory ") {
		if err := os.WriteFile(ctl, []byte("+memory"), 0); err != nil {
			return nil, fmt.Errorf("cgroup v2 %s: the memory controller is not delegated to it (enabling it: %w)", parent, err)
		}
	}
	dir := filepath.Join(parent, fmt.Sprintf("uaxai-plugin-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup v2: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.max"), []byte(strconv.FormatInt(limit, 10)), 0); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("cgroup v2 %s: setting memory.max: %w", dir, err)
	}
	// No swap beyond the limit, where swap is accounted (else the file is
	// missing, and there is nothing to bound).
	_ = os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0)
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("cgroup v2 %s: %w", dir, err)
	}
	return &cgroup{dir: dir, fd: fd}, nil
}

// attach makes attr start its process in the cgroup.
func (c *cgroup) attach(attr *syscall.SysProcAttr) {
	attr.UseCgroupFD, attr.CgroupFD = true, c.fd
}

// detach makes attr start its process in the host's cgroup.
func detach(attr *syscall.SysProcAttr) { attr.UseCgroupFD, attr.CgroupFD = false, 0 }

// started closes the cgroup's descriptor once the process is in it (or
// failed to start).
func (c *cgroup) started() {
	if c.fd >= 0 {
		_ = unix.Close(c.fd)
		c.fd = -1
	}
}

// oomKilled reports whether the kernel killed a process of the cgroup
// for want of memory (memory.events' oom_kill).
func (c *cgroup) oomKilled() bool {
	b, err := os.ReadFile(filepath.Join(c.dir, "memory.events"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == "oom_kill" {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n > 0
		}
	}
	return false
}

// remove kills what is left in the cgroup (a grandchild that left the
// plugin's process group, too) and removes it, waiting up to a second
// for the kernel to empty it.
func (c *cgroup) remove() {
	c.started()
	_ = os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0)
	for range 100 {
		if err := os.Remove(c.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// limitData sets the RLIMIT_DATA of the started process pid (soft and
// hard, so that it cannot raise it) to n bytes. A process that has
// already exited is no error.
func limitData(pid int, n int64) error {
	lim := unix.Rlimit{Cur: uint64(n), Max: uint64(n)}
	if err := unix.Prlimit(pid, unix.RLIMIT_DATA, &lim, nil); err != nil && !errors.Is(err, unix.ESRCH) {
		return err
	}
	return nil
}

// memLimitsApply: this system can bound a plugin's memory.
const memLimitsApply = true
