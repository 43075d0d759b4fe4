package limits

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// HostMemory is the memory this process may use, in bytes: the least of
// the machine's physical memory (sysinfo) and the memory limits of the
// cgroups it runs in (cgroup v2 memory.max of its cgroup and each
// ancestor; cgroup v1 memory.limit_in_bytes of its memory cgroup), as far
// as it can read them; 0 if none can be read.
func HostMemory() int64 {
	var n int64
	least := func(v int64) {
		if v > 0 && (n == 0 || v < n) {
			n = v
		}
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		least(int64(si.Totalram) * int64(si.Unit))
	}
	v2, v1 := cgroupPaths()
	if v2 != "" {
		if root := mountOf("cgroup2", ""); root != "" {
			for dir := filepath.Join(root, v2); strings.HasPrefix(dir, root); dir = filepath.Dir(dir) {
				least(readBytes(filepath.Join(dir, "memory.max")))
				if dir == root {
					break
				}
			}
		}
	}
	if v1 != "" {
		if root := mountOf("cgroup", "memory"); root != "" {
			// In a container the host's path may not be visible: its
			// memory cgroup is then the mount's root.
			least(readBytes(filepath.Join(root, v1, "memory.limit_in_bytes")))
			least(readBytes(filepath.Join(root, "memory.limit_in_bytes")))
		}
	}
	return n
}

// cgroupPaths are this process's cgroup v2 path and cgroup v1 memory
// path, from /proc/self/cgroup ("" for one it has not).
func cgroupPaths() (v2, v1mem string) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		id, rest, _ := strings.Cut(sc.Text(), ":")
		ctl, path, ok := strings.Cut(rest, ":")
		switch {
		case !ok:
		case id == "0" && ctl == "":
			v2 = path
		case slices.Contains(strings.Split(ctl, ","), "memory"):
			v1mem = path
		}
	}
	return v2, v1mem
}

// mountOf is the mount point of the first file system of type fstype
// (with option opt, if set) in /proc/self/mountinfo, or "".
func mountOf(fstype, opt string) string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 3 || qf[0] != fstype {
			continue
		}
		if opt != "" && !slices.Contains(strings.Split(qf[2], ","), opt) {
			continue
		}
		return pf[4]
	}
	return ""
}

// readBytes reads a cgroup file holding a number of bytes; "max", a
// missing file or anything else is 0 (no limit).
func readBytes(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v <= 0 {
		return 0
	}
	return v
}

// CgroupV2 is this process's cgroup v2 directory, and its mount point, or
// "" when it has none visible. host/plugin makes a plugin's cgroup under
// it.
func CgroupV2() (dir, root string) {
	v2, _ := cgroupPaths()
	if v2 == "" {
		return "", ""
	}
	root = mountOf("cgroup2", "")
	if root == "" {
		return "", ""
	}
	return filepath.Join(root, v2), root
}
