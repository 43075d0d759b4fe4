package progress

import (
	"bytes"
	"strings"
	"testing"
)

// TestOutOfRangeReports: a plugin's progress may exceed its total or be
// negative; the bar clamps instead of failing.
func TestOutOfRangeReports(t *testing.T) {
	for _, tty := range []bool{true, false} {
		var b bytes.Buffer
		bar := New(&b, tty)
		bar.interval = 0
		bar.Stage("fit", 10)
		bar.Advance(11, "over")
		bar.Advance(-3, "under")
		bar.Stage("next", 0)
		bar.Advance(5, "no total")
		bar.Finish()
		if !strings.Contains(b.String(), "11/10") || !strings.Contains(b.String(), "########################") {
			t.Errorf("tty=%v: %q", tty, b.String())
		}
	}
}
