package limits

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestOrDefault: zero and negative fields take the defaults, set fields
// stay, and the defaults are in proportion. (Their values are checked
// against host/recipe's REFERENCE.md there.)
func TestOrDefault(t *testing.T) {
	d := Default()
	if got := (Limits{}).OrDefault(); got != d {
		t.Errorf("zero limits: %+v, want the defaults %+v", got, d)
	}
	if got := (Limits{Check: 5 * time.Second, Fit: -1}).OrDefault(); got.Check != 5*time.Second || got.Fit != d.Fit || got.ScriptMemory != d.ScriptMemory {
		t.Errorf("one limit set: %+v", got)
	}
	if got := (Limits{ScriptMemory: 1 << 28}).OrDefault(); got.ScriptMemory != 1<<28 || got.Handshake != d.Handshake {
		t.Errorf("script memory set: %+v", got)
	}
	if got := d.OrDefault(); got != d {
		t.Errorf("defaults changed by OrDefault: %+v", got)
	}
	if !(d.Fit > d.ExplainBatch && d.ExplainBatch > d.Check && d.Handshake > 0 && d.ScriptMemory > 0 && d.ModelCall > d.Check && d.ModelCall <= d.ExplainBatch) {
		t.Errorf("defaults out of proportion: %+v", d)
	}
	// Every duration field has exactly one key: setting each through
	// Durations sets the whole struct but ScriptMemory.
	var l Limits
	keys := map[string]bool{}
	for i, f := range l.Durations() {
		*f.Value = time.Duration(i + 1)
		keys[f.Key] = true
	}
	want := Limits{Handshake: 1, Check: 2, Fit: 3, Sample: 4, Load: 5, ExplainBatch: 6, SummariseBatch: 7, ModelCall: 8}
	if l != want || len(keys) != 8 {
		t.Errorf("Durations set %+v (keys %v), want %+v", l, keys, want)
	}
}

// TestPluginMemory: plugin_memory left zero stays zero through OrDefault
// (a recipe's canonical form does not depend on the machine) and means
// AutoPluginMemory: half of what the host may use, never less than
// MinPluginMemory, and on Linux no more than half the physical memory
// /proc/meminfo reports; a value set is used as it is.
func TestPluginMemory(t *testing.T) {
	if got := (Limits{}).OrDefault().PluginMemory; got != 0 {
		t.Errorf("OrDefault set plugin_memory to %d; it stays 0 (auto)", got)
	}
	if got := (Limits{PluginMemory: 3 << 30}).PluginMemoryBytes(); got != 3<<30 {
		t.Errorf("plugin_memory 3GiB gives %d", got)
	}
	auto := Limits{}.PluginMemoryBytes()
	host := HostMemory()
	if auto != AutoPluginMemory() || auto < MinPluginMemory || host > 0 && auto != max(host/2, MinPluginMemory) {
		t.Errorf("auto plugin_memory %d, host memory %d, least %d", auto, host, MinPluginMemory)
	}
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Skip("no /proc/meminfo:", err)
	}
	var kb int64
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	if kb <= 0 || host <= 0 || host > kb<<10 {
		t.Errorf("host memory %d bytes; /proc/meminfo's MemTotal %d kB", host, kb)
	}
}

// TestSettings: --limit's key=duration sets the one field its key names
// (every duration key, through Durations), later settings over earlier
// ones; anything else is refused with the keys accepted.
func TestSettings(t *testing.T) {
	d := Default()
	for i, f := range d.Durations() {
		want := Default()
		*want.Durations()[i].Value = time.Duration(i+1) * time.Second
		s, err := ParseSetting(" " + f.Key + " = " + strconv.Itoa(i+1) + "s")
		if err != nil {
			t.Fatalf("%s: %v", f.Key, err)
		}
		got := Default()
		if err := got.Apply([]Setting{s}); err != nil || got != want {
			t.Errorf("--limit %s=%ds: %+v, %v; want %+v", f.Key, i+1, got, err, want)
		}
	}
	a, _ := ParseSetting("model_call=1s")
	b, _ := ParseSetting("model_call=2m")
	l := Default()
	if err := l.Apply([]Setting{a, b}); err != nil || l.ModelCall != 2*time.Minute {
		t.Errorf("two settings of model_call: %v, %v; want the later, 2m", l.ModelCall, err)
	}
	for _, bad := range []string{"model_call", "=1s", "model_cal=1s", "script_memory=1GiB", "model_call=0s", "model_call=-1s", "model_call=soon"} {
		_, err := ParseSetting(bad)
		if err == nil || !strings.Contains(err.Error(), "model_call") {
			t.Errorf("ParseSetting(%q) = %v; want an error that names the keys or the form", bad, err)
		}
	}
	if err := l.Apply([]Setting{{"plugin_memory", time.Second}}); err == nil {
		t.Error("Apply of a key that is no duration key: no error")
	}
	if err := l.Apply([]Setting{{"model_call", 0}}); err == nil {
		t.Error("Apply of a zero duration: no error")
	}
}
