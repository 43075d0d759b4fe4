package bench

import (
	"strings"
	"testing"
)

// TestPluginsByID: the cases' plugins come from the registry of built-ins
// by ID, of the kind asked; a wrong kind or an unknown ID is an error that
// names the ID (and the built-ins).
func TestPluginsByID(t *testing.T) {
	for _, id := range []string{occlusionID, gradcamID, limeID} {
		mk, err := explainer(id)
		if err != nil {
			t.Fatal(err)
		}
		if got := mk().Info().ID; got != id {
			t.Errorf("explainer(%q) made %q", id, got)
		}
	}
	p, err := posterior(mcdropoutID)
	if err != nil || p.Info().ID != mcdropoutID {
		t.Fatalf("posterior(%q) = %v, %v", mcdropoutID, p, err)
	}
	if _, err := explainer(mcdropoutID); err == nil || !strings.Contains(err.Error(), "built-in posterior.mcdropout is of kind posterior, not an explainer") {
		t.Errorf("explainer of a posterior: %v", err)
	}
	if _, err := posterior(limeID); err == nil || !strings.Contains(err.Error(), "built-in explainer.lime is of kind explainer, not a posterior") {
		t.Errorf("posterior of an explainer: %v", err)
	}
	if _, err := explainers(occlusionID, "explainer.nope"); err == nil || !strings.Contains(err.Error(), `"explainer.nope"`) || !strings.Contains(err.Error(), occlusionID) {
		t.Errorf("unknown ID: %v", err)
	}
}
