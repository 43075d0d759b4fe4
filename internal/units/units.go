package units

import (
	"strconv"
	"time"
)

// FormatDuration writes d in its largest whole unit ("6h", "10m", "90s",
// "250ms"), or as time.Duration.String does when no unit divides it.
func FormatDuration(d time.Duration) string {
	for _, u := range []struct {
		name string
		size time.Duration
	}{{"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}} {
		if d >= u.size && d%u.size == 0 {
			return strconv.FormatInt(int64(d/u.size), 10) + u.name
		}
	}
	return d.String()
}
