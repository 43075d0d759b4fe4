//go:build unix

package driver

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// removeStale removes the socket directories under tmp that model
// services of this user left when their host process was killed (a
// SIGKILL runs no Close): uaxai-models-PID-* whose PID names no process.
// A directory of a live process, or of another user (whose process this
// one may not signal), stays.
func removeStale(tmp string) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, "uaxai-models-*-*"))
	for _, d := range dirs {
		rest := strings.TrimPrefix(filepath.Base(d), "uaxai-models-")
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}
