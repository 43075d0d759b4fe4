package occlusion

import (
	"maps"
	"testing"

	"github.com/uaxai/uaxai/sdk"
)

// TestRecordingDefaults: on a recording a table without baseline takes
// the fundamental baseline, with the period when it is known (at least 2
// samples a cycle) and the table does not set it; a table that sets
// baseline takes nothing; every default is a value Check accepts with the
// table.
func TestRecordingDefaults(t *testing.T) {
	for _, c := range []struct {
		cfg    sdk.Config
		period float64
		want   sdk.Config
	}{
		{sdk.Config{}, 64, sdk.Config{"baseline": Fundamental, "period": 64.0}},
		{nil, 60, sdk.Config{"baseline": Fundamental, "period": 60.0}},
		{sdk.Config{"window": int64(30)}, 0, sdk.Config{"baseline": Fundamental}},
		{sdk.Config{}, 1.5, sdk.Config{"baseline": Fundamental}},
		{sdk.Config{"period": 80.0}, 64, sdk.Config{"baseline": Fundamental}},
		{sdk.Config{"baseline": 0.0}, 64, nil},
		{sdk.Config{"baseline": "mean"}, 64, nil},
	} {
		got := New().RecordingDefaults(c.cfg, c.period)
		if !maps.Equal(got, c.want) {
			t.Errorf("%v, period %v: %v, want %v", c.cfg, c.period, got, c.want)
		}
		all := maps.Clone(c.cfg)
		if all == nil {
			all = sdk.Config{}
		}
		maps.Copy(all, got)
		if err := New().Check(all); err != nil {
			t.Errorf("%v with its defaults %v: Check refuses it: %v", c.cfg, got, err)
		}
	}
}
