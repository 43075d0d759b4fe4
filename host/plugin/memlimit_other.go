//go:build !linux

package plugin

import (
	"errors"
	"syscall"
)

// cgroup is not made outside Linux.
type cgroup struct{ dir string }

func newCgroup(int64) (*cgroup, error)        { return nil, errors.New("no cgroups outside Linux") }
func (c *cgroup) attach(*syscall.SysProcAttr) {}
func (c *cgroup) started()                    {}
func (c *cgroup) oomKilled() bool             { return false }
func (c *cgroup) remove()                     {}
func detach(*syscall.SysProcAttr)             {}

// limitData does nothing outside Linux.
func limitData(int, int64) error { return nil }

// memLimitsApply: outside Linux the host does not bound a plugin's memory.
const memLimitsApply = false
