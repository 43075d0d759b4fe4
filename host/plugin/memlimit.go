package plugin

import (
	"debug/buildinfo"
	"fmt"
	"strconv"
)

// memLimit is the memory bound of one plugin process.
type memLimit struct {
	bytes int64  // 0: none
	key   string // the [limits] key that sets it: "plugin_memory", "script_memory"
	// inside: the process sets the bound itself (a script's process does,
	// before its interpreter starts); the host sets nothing.
	inside bool
}

// String is "512MiB, limits.plugin_memory", for messages.
func (l memLimit) String() string { return formatBytes(l.bytes) + ", limits." + l.key }

// formatBytes writes n in the largest binary unit that divides it, as
// [limits] sizes are written.
func formatBytes(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// raceBuilt reports whether path is a Go program built with the race
// detector, whose ThreadSanitizer maps far more memory than the program
// uses (RLIMIT_DATA would stop it at once). Anything else (a Python
// interpreter, a file that is not a Go program) is not.
func raceBuilt(path string) bool {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return true
		}
	}
	return false
}

// memoryHow says how a process's memory was limited, for the log.
func memoryHow(l memLimit, method string) string {
	if l.bytes <= 0 {
		return "none"
	}
	return fmt.Sprintf("%s by %s", formatBytes(l.bytes), method)
}
