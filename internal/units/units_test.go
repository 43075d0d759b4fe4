package units

import (
	"testing"
	"time"
)

func TestFormatDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{6 * time.Hour, "6h"}, {90 * time.Minute, "90m"}, {time.Hour + time.Second, "3601s"},
		{90 * time.Second, "90s"}, {time.Second, "1s"}, {250 * time.Millisecond, "250ms"},
		{time.Millisecond, "1ms"}, {1500 * time.Microsecond, "1.5ms"}, {0, "0s"}, {59 * time.Minute, "59m"},
	} {
		if got := FormatDuration(c.d); got != c.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", c.d, got, c.want)
		}
		if back, err := time.ParseDuration(FormatDuration(c.d)); err != nil || back != c.d {
			t.Errorf("%v: %q parses back as %v, %v", c.d, FormatDuration(c.d), back, err)
		}
	}
}
