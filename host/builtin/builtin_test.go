package builtin

import (
	"testing"

	"github.com/uaxai/uaxai/sdk"
)

// TestRecordingDefaults: the defaults on a recording are those the
// built-in explainer declares (occlusion's fundamental baseline), none
// for an explainer that declares none, an unknown ID or a plugin of
// another kind.
func TestRecordingDefaults(t *testing.T) {
	got := RecordingDefaults("explainer.occlusion", sdk.Config{}, 64)
	if len(got) != 2 || got["baseline"] != "fundamental" || got["period"] != 64.0 {
		t.Errorf("occlusion: %v, want baseline fundamental and period 64", got)
	}
	if got := RecordingDefaults("explainer.occlusion", sdk.Config{"baseline": 0.0}, 64); got != nil {
		t.Errorf("occlusion with a baseline: %v, want none", got)
	}
	for _, id := range []string{"explainer.gradcam", "explainer.lime", "explainer.nope", "posterior.mcdropout", "occlusion"} {
		if got := RecordingDefaults(id, sdk.Config{}, 64); got != nil {
			t.Errorf("%s: %v, want none", id, got)
		}
	}
}
