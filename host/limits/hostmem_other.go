//go:build !linux

package limits

// HostMemory is 0 outside Linux: the host does not read it there.
func HostMemory() int64 { return 0 }

// CgroupV2 is "" outside Linux.
func CgroupV2() (dir, root string) { return "", "" }
