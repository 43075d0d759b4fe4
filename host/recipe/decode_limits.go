package recipe

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/uaxai/uaxai/host/limits"
)

// Byte sizes.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
)

// MinScriptMemory is the least script_memory accepted: what a script's
// process (a Go runtime and the interpreter) needs to start.
const MinScriptMemory = 256 * MiB

// MinPluginMemory is the least plugin_memory accepted (limits.MinPluginMemory).
const MinPluginMemory = limits.MinPluginMemory

// AutoMemory is the value of plugin_memory that asks for its default,
// limits.AutoPluginMemory (half of what the host may use), which the
// canonical form writes for a PluginMemory of zero.
const AutoMemory = "auto"

// limits decodes [limits] into l (the defaults, limits.Default, where a
// key is absent).
func (d *decoder) limits(v any, l *limits.Limits) error {
	path := []string{"limits"}
	tbl, err := d.asTable(v, path)
	if err != nil {
		return err
	}
	var fields []field
	for _, dur := range l.Durations() {
		fields = append(fields, field{dur.Key, d.setDuration(dur.Value)})
	}
	fields = append(fields, field{"script_memory", d.setSize(&l.ScriptMemory, MinScriptMemory, "a script's process")})
	setPlugin := d.setSize(&l.PluginMemory, MinPluginMemory, "a plugin process")
	fields = append(fields, field{"plugin_memory", func(v any, p []string) error {
		if s, ok := v.(string); ok {
			if strings.TrimSpace(s) == AutoMemory {
				l.PluginMemory = 0
				return nil
			}
			if _, err := ParseSize(s); err != nil {
				return d.keyErr(p, "%v, or %q for the default, half the memory the host may use", err, AutoMemory)
			}
		}
		return setPlugin(v, p)
	}})
	return d.table(tbl, path, fields)
}

const durationHelp = `a duration such as "90s", "10m" or "6h" (units h, m, s, ms), > 0`

func (d *decoder) setDuration(dst *time.Duration) func(any, []string) error {
	return func(v any, p []string) error {
		s, ok := v.(string)
		if !ok {
			return d.keyErr(p, "want %s, got %s", durationHelp, describe(v))
		}
		dur, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return d.keyErr(p, "%q is not a duration (accepted: %s)", s, durationHelp)
		}
		if dur <= 0 {
			return d.keyErr(p, "%q is not positive (accepted: %s)", s, durationHelp)
		}
		*dst = dur
		return nil
	}
}

const sizeHelp = `a size such as "512MiB" or "2GiB" (units B, KiB, MiB, GiB, TiB, or KB, MB, GB, TB in powers of 1000), or an integer number of bytes`

var sizeRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)$`)

var sizeUnits = map[string]float64{
	"": 1, "B": 1,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
	"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
}

// ParseSize reads a size in bytes: "512MiB", "2GiB", "1.5GB", "1048576".
func ParseSize(s string) (int64, error) {
	m := sizeRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("%q is not a size (accepted: %s)", s, sizeHelp)
	}
	unit, ok := sizeUnits[m[2]]
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit %q (accepted: %s)", s, m[2], sizeHelp)
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil || f*unit >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is out of range", s)
	}
	return int64(f * unit), nil
}

// FormatSize writes a size in the largest binary unit that divides it.
func FormatSize(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// setSize reads a size of at least least bytes, what needs it.
func (d *decoder) setSize(dst *int64, least int64, what string) func(any, []string) error {
	return func(v any, p []string) error {
		var n int64
		switch x := v.(type) {
		case int64:
			n = x
		case string:
			var err error
			if n, err = ParseSize(x); err != nil {
				return d.keyErr(p, "%v", err)
			}
		default:
			return d.keyErr(p, "want %s, got %s", sizeHelp, describe(v))
		}
		if n < least {
			return d.keyErr(p, "%s is less than %s, the least %s needs (accepted: %s or more)", FormatSize(n), FormatSize(least), what, FormatSize(least))
		}
		*dst = n
		return nil
	}
}
