package sdk

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk/nn"
)

func TestParseID(t *testing.T) {
	for _, c := range []struct {
		id   string
		kind Kind
		name string
		want string // the error's reason, "" if accepted
	}{
		{"explainer.occlusion", KindExplainer, "occlusion", ""},
		{"summary.trimmed-mean", KindSummary, "trimmed-mean", ""},
		{"posterior.mc_dropout2", KindPosterior, "mc_dropout2", ""},
		{"summary.9lives", KindSummary, "9lives", ""},
		{"summary.za09", KindSummary, "za09", ""}, // the ends of both ranges
		{"summary.0", KindSummary, "0", ""},
		{"summary.x`", "", "", "may only hold lower-case letters"}, // '`' is 'a'-1
		{"summary.x{", "", "", "may only hold lower-case letters"}, // '{' is 'z'+1
		{"summary.x/", "", "", "may only hold lower-case letters"}, // '/' is '0'-1
		{"summary.x:", "", "", "may only hold lower-case letters"}, // ':' is '9'+1
		{"occlusion", "", "", "is not of the form kind.name"},
		{"explainers.occlusion", "", "", `unknown kind "explainers"`},
		{"explainer.", "", "", "empty name"},
		{"explainer.Occlusion", "", "", "may only hold lower-case letters"},
		{"explainer.a.b", "", "", "may only hold lower-case letters"},
		{"explainer.-x", "", "", "starting with a letter or digit"},
	} {
		k, n, err := ParseID(c.id)
		if k != c.kind || n != c.name {
			t.Errorf("ParseID(%q) = %q, %q, %v; want %q, %q", c.id, k, n, err, c.kind, c.name)
		}
		switch {
		case c.want == "" && err != nil:
			t.Errorf("ParseID(%q): %v", c.id, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.id)):
			t.Errorf("ParseID(%q): error %v, want one naming the ID and %q", c.id, err, c.want)
		}
	}
}

// One stub of each kind, and a Plugin of none, each with a given Info.
type (
	stubPosterior struct{ info Info }
	stubExplainer struct{ info Info }
	stubSummary   struct{ info Info }
	stubNone      struct{ info Info }
)

func (s stubPosterior) Info() Info            { return s.info }
func (stubPosterior) Check(Config, int) error { return nil }
func (stubPosterior) Fit(context.Context, FitRequest) (Artifact, error) {
	return Artifact{}, nil
}
func (stubPosterior) Sample(context.Context, Artifact, SampleRequest) ([]nn.Params, error) {
	return nil, nil
}

func (s stubExplainer) Info() Info       { return s.info }
func (stubExplainer) Check(Config) error { return nil }
func (stubExplainer) Explain(context.Context, nn.Model, ExplainRequest) ([][]float64, error) {
	return nil, nil
}

// stubBoth is an explainer and a summary at once.
type stubBoth struct{ stubExplainer }

func (stubBoth) Summarise(context.Context, [][][]float64, Config) ([]Result, error) {
	return nil, nil
}

func (s stubSummary) Info() Info       { return s.info }
func (stubSummary) Check(Config) error { return nil }
func (stubSummary) Summarise(context.Context, [][][]float64, Config) ([]Result, error) {
	return nil, nil
}

func (s stubNone) Info() Info { return s.info }

func TestDescribe(t *testing.T) {
	accepted := []struct {
		p    Plugin
		kind Kind
	}{
		{stubPosterior{Info{ID: "posterior.ensemble", Version: "1.0.0", Summary: "deep ensemble", Finite: true}}, KindPosterior},
		{stubPosterior{Info{ID: "posterior.laplace", Version: "0.1"}}, KindPosterior},
		{stubPosterior{Info{ID: "posterior.laplace", Version: "1", Base: "posterior.deterministic", BaseKeys: []string{"seed"}}}, KindPosterior},
		{stubPosterior{Info{ID: "posterior.files", Version: "1", Finite: true, Files: []string{"weights", "files"}}}, KindPosterior},
		{stubPosterior{Info{ID: "posterior.mcdropout", Version: "1", Replicates: true}}, KindPosterior},
		{stubExplainer{Info{ID: "explainer.gradinput", Version: "2", Needs: NeedsInputGrad | NeedsProbs, Stochastic: true}}, KindExplainer},
		{stubExplainer{Info{ID: "explainer.occlusion", Version: "1"}}, KindExplainer},
		{stubSummary{Info{ID: "summary.mean", Version: "1", Output: OutputMap}}, KindSummary},
		{stubSummary{Info{ID: "summary.variance", Version: "1", Output: OutputMap, MinDraws: 2}}, KindSummary},
		{stubSummary{Info{ID: "summary.topk", Version: "1", Output: OutputSet}}, KindSummary},
		{stubSummary{Info{ID: "summary.quantile", Version: "1", Output: OutputBand, MinDraws: 0}}, KindSummary},
	}
	for _, c := range accepted {
		kind, info, err := Describe(c.p)
		if err != nil {
			t.Errorf("Describe(%+v): %v", c.p, err)
			continue
		}
		if kind != c.kind || !reflect.DeepEqual(info, c.p.Info()) {
			t.Errorf("Describe(%+v) = %s, %+v; want %s and the plugin's Info", c.p, kind, info, c.kind)
		}
	}

	rejected := []struct {
		name string
		p    Plugin
		want []string // substrings of the error
	}{
		{"not a plugin kind", stubNone{Info{ID: "explainer.none", Version: "1"}},
			[]string{"sdk.stubNone is not a plugin", "implements none of sdk.Posterior, sdk.Explainer, sdk.Summary"}},
		{"two kinds", stubBoth{stubExplainer{Info{ID: "explainer.both", Version: "1"}}},
			[]string{"implements 2 plugin kinds [explainer summary]"}},
		{"ID of another kind", stubExplainer{Info{ID: "summary.oops", Version: "1"}},
			[]string{`is a plugin of kind explainer but its ID "summary.oops" is namespaced summary; use explainer.<name>`}},
		{"ID of another kind (posterior)", stubPosterior{Info{ID: "explainer.oops", Version: "1"}},
			[]string{`is a plugin of kind posterior but its ID "explainer.oops" is namespaced explainer`}},
		{"malformed ID", stubSummary{Info{ID: "mean", Version: "1", Output: OutputMap}},
			[]string{`plugin ID "mean" is not of the form kind.name`}},
		{"empty Version", stubExplainer{Info{ID: "explainer.occlusion"}},
			[]string{"explainer.occlusion: ", "Info.Version is empty"}},
		{"explainer sets Output", stubExplainer{Info{ID: "explainer.occlusion", Version: "1", Output: OutputMap}},
			[]string{"explainer.occlusion: ", "explainer sets Info.Output, which only another kind"}},
		{"explainer sets Finite and MinDraws", stubExplainer{Info{ID: "explainer.occlusion", Version: "1", Finite: true, MinDraws: 2}},
			[]string{"explainer sets Info.Finite, Info.MinDraws, which only another kind"}},
		{"posterior sets Needs", stubPosterior{Info{ID: "posterior.ensemble", Version: "1", Needs: NeedsLayer}},
			[]string{"posterior.ensemble: ", "posterior sets Info.Needs, which only another kind"}},
		{"posterior sets Stochastic", stubPosterior{Info{ID: "posterior.ensemble", Version: "1", Stochastic: true}},
			[]string{"posterior sets Info.Stochastic,"}},
		{"explainer sets Base, BaseKeys, Files", stubExplainer{Info{ID: "explainer.occlusion", Version: "1", Base: "posterior.x", BaseKeys: []string{"a"}, Files: []string{"f"}}},
			[]string{"explainer sets Info.Base, Info.BaseKeys, Info.Files, which only another kind"}},
		{"summary sets Replicates", stubSummary{Info{ID: "summary.mean", Version: "1", Output: OutputMap, Replicates: true}},
			[]string{"summary sets Info.Replicates, which only another kind"}},
		{"Base of another kind", stubPosterior{Info{ID: "posterior.laplace", Version: "1", Base: "explainer.occlusion"}},
			[]string{"posterior.laplace: ", `Info.Base is "explainer.occlusion", a plugin of kind explainer`}},
		{"Base malformed", stubPosterior{Info{ID: "posterior.laplace", Version: "1", Base: "deterministic"}},
			[]string{"posterior.laplace: Info.Base: ", "not of the form kind.name"}},
		{"Base itself", stubPosterior{Info{ID: "posterior.laplace", Version: "1", Base: "posterior.laplace"}},
			[]string{"Info.Base names the posterior itself"}},
		{"BaseKeys without Base", stubPosterior{Info{ID: "posterior.laplace", Version: "1", BaseKeys: []string{"seed"}}},
			[]string{"Info.BaseKeys is set without Info.Base"}},
		{"repeated BaseKeys", stubPosterior{Info{ID: "posterior.laplace", Version: "1", Base: "posterior.d", BaseKeys: []string{"seed", "seed"}}},
			[]string{`Info.BaseKeys has an empty or repeated key "seed"`}},
		{"empty Files key", stubPosterior{Info{ID: "posterior.files", Version: "1", Files: []string{""}}},
			[]string{`Info.Files has an empty or repeated key ""`}},
		{"summary sets Needs", stubSummary{Info{ID: "summary.mean", Version: "1", Output: OutputMap, Needs: NeedsProbs}},
			[]string{"summary sets Info.Needs,"}},
		{"summary without Output", stubSummary{Info{ID: "summary.mean", Version: "1"}},
			[]string{"summary.mean: ", `Info.Output is "" (accepted: map, set, band)`}},
		{"summary of an unknown Output", stubSummary{Info{ID: "summary.mean", Version: "1", Output: "blob"}},
			[]string{`Info.Output is "blob" (accepted: map, set, band)`}},
		{"negative MinDraws", stubSummary{Info{ID: "summary.variance", Version: "1", Output: OutputMap, MinDraws: -1}},
			[]string{"summary.variance: ", "Info.MinDraws is -1 (want >= 0)"}},
	}
	for _, c := range rejected {
		kind, info, err := Describe(c.p)
		if err == nil {
			t.Errorf("%s: accepted as %s, %+v", c.name, kind, info)
			continue
		}
		if kind != "" || !reflect.DeepEqual(info, Info{}) {
			t.Errorf("%s: rejected but returned %q, %+v", c.name, kind, info)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q, want %q", c.name, err, w)
			}
		}
	}
}
