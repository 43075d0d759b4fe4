package limits

import (
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
	if !(d.Fit > d.ExplainBatch && d.ExplainBatch > d.Check && d.Handshake > 0 && d.ScriptMemory > 0) {
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
	want := Limits{Handshake: 1, Check: 2, Fit: 3, Sample: 4, Load: 5, ExplainBatch: 6, SummariseBatch: 7}
	if l != want || len(keys) != 7 {
		t.Errorf("Durations set %+v (keys %v), want %+v", l, keys, want)
	}
}
