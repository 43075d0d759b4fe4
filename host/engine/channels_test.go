package engine

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
)

// The per-channel scores of a split of C = 2 channels of T = inLen/2
// samples: record r's mask is samples [1, 3) of channel r mod 2 (record 3's
// is empty), and the phase explainer puts all of record r's relevance on
// channel (r/2) mod 2, signed, so that only |R| scores it.
const chT = inLen / 2

func masked(r int) int   { return r % 2 }
func relevant(r int) int { return (r / 2) % 2 }

// phaseExplainer's map of record r under draw s is -(s+1)(t+1) at
// sample t of channel relevant(r), 0 elsewhere.
type phaseExplainer struct{ echoExplainer }

func (e *phaseExplainer) Explain(_ context.Context, m nn.Model, req sdk.ExplainRequest) ([][]float64, error) {
	s, err := whichDraw(m, e.maxDraws)
	if err != nil {
		return nil, err
	}
	maps := make([][]float64, len(req.Targets))
	for j := range maps {
		r := (int(req.X[j*inLen]) - 1) % 1000
		maps[j] = make([]float64, inLen)
		for t := range chT {
			maps[j][relevant(r)*chT+t] = -float64((s + 1) * (t + 1))
		}
	}
	return maps, nil
}

func channelPlan(n int, names []string) Plan {
	p := testPlan(n, 2, 2, 3)
	for si := range p.Tests {
		p.Tests[si].Channels = 2
		p.Tests[si].ChannelNames = names
		for r := range n {
			clear(p.Tests[si].Masks[r])
			if r != 3 {
				for t := 1; t < 3; t++ {
					p.Tests[si].Masks[r][masked(r)*chT+t] = true
				}
			}
		}
	}
	return p
}

// phaseResolver is the fakes with the phase explainer.
type phaseResolver struct {
	*fakes
	ex *phaseExplainer
}

func (f *phaseResolver) Explainer(context.Context, string) (driver.Explainer, error) {
	return driver.LocalExplainer(f.ex)
}

func TestPerChannelRecords(t *testing.T) {
	const n = 8
	p := channelPlan(n, []string{"A", "B"})
	f := newFakes(2)
	pf := &phaseResolver{fakes: f, ex: &phaseExplainer{echoExplainer{id: "explainer.echo", maxDraws: 2}}}
	res, _, err := Run(context.Background(), p, pf, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	row := res.Rows[0]
	hits := 0
	for _, rec := range row.Records {
		if rec.Index == 3 {
			if rec.Channels != nil {
				t.Errorf("record %d/3 (empty mask): channels %+v, want nil", rec.Split, rec.Channels)
			}
			continue
		}
		ch := rec.Channels
		if ch == nil || len(ch.Channel) != 2 {
			t.Fatalf("record %d/%d: channels %+v, want 2 per-channel scores", rec.Split, rec.Index, ch)
		}
		m, rel := masked(rec.Index), relevant(rec.Index)
		hit := m == rel
		if hit {
			hits++
		}
		wantPL := 0.0
		if hit {
			wantPL = 1
		}
		if ch.Why != eval.Scored || ch.PL != wantPL || ch.Top != rel || ch.Hit != hit || ch.Chance != 0.5 {
			t.Errorf("record %d/%d (mask on %d, relevance on %d): %+v", rec.Split, rec.Index, m, rel, *ch)
		}
		// The masked channel: |R| = (t+1) times a constant against samples
		// 1 and 2, RMA = (2+3)/(1+2+3+4); its top 2 are samples 3 and 2,
		// IoU = 1/3. Unless the relevance is elsewhere: zero mass.
		want := eval.ChannelScore{Why: eval.ZeroMass}
		if hit {
			want = eval.ChannelScore{RMA: 0.5, IoU: 1.0 / 3}
		}
		if got := ch.Channel[m]; got != want {
			t.Errorf("record %d/%d: masked channel %d: %+v, want %+v", rec.Split, rec.Index, m, got, want)
		}
		if got := ch.Channel[1-m]; got.Why != eval.EmptyMask {
			t.Errorf("record %d/%d: unmasked channel %d: %+v, want an empty mask", rec.Split, rec.Index, 1-m, got)
		}
	}
	// Every split has the same records: per split the top-channel accuracy
	// and PL are hits/(n-1) of a split, sd 0.
	a := row.Channels
	if a == nil {
		t.Fatal("row without its channel aggregate")
	}
	c1, _ := a.Class(1)
	frac := float64(hits/2) / float64(n-1)
	if c1.PL.Mean != frac || c1.TopAcc.Mean != frac || c1.Chance.Mean != 0.5 || c1.PL.N != 2 || c1.Scored != 2*(n-1) {
		t.Errorf("class 1: PL %+v top %+v chance %+v scored %d; want PL = top = %v over 2 splits, chance 0.5", c1.PL, c1.TopAcc, c1.Chance, c1.Scored, frac)
	}
	if !slices.Equal(a.Names, []string{"A", "B"}) {
		t.Errorf("names %v, want A B", a.Names)
	}
	if g, ok := a.Group("all"); !ok || g.PL != c1.PL {
		t.Errorf("group all %+v, want class 1's PL %+v", g.PL, c1.PL)
	}

	// Without Abs the signed map is refused, naming the record.
	p.Abs = false
	_, _, err = Run(context.Background(), p, pf, nil, nil)
	// (any record of the split: the workers meet them in any order)
	if err == nil || !regexp.MustCompile(`split test-0 record [0-9]+: map value`).MatchString(err.Error()) || !strings.Contains(err.Error(), "evaluate.abs") {
		t.Errorf("signed map without abs: %v", err)
	}
}

// TestOneChannelNoChannelView: a one-channel split gives records and rows
// without the channel view, and results.json rows without "channels".
func TestOneChannelNoChannelView(t *testing.T) {
	res := runPlan(t, testPlan(6, 2, 2, 3), newFakes(2), nil)
	for _, rec := range res.Rows[0].Records {
		if rec.Channels != nil {
			t.Fatalf("record %d/%d: channels %+v with C = 1", rec.Split, rec.Index, rec.Channels)
		}
	}
	b, err := json.Marshal(res.Rows[0])
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows[0].Channels != nil || strings.Contains(string(b), `"channels"`) {
		t.Errorf("C = 1: row channels %+v, JSON %s", res.Rows[0].Channels, b)
	}
	// The default names of C channels.
	if got := (TestSplit{Channels: 3}).ChannelLabels(); !slices.Equal(got, []string{"ch0", "ch1", "ch2"}) {
		t.Errorf("default names %v", got)
	}
}

func TestChannelPlanErrors(t *testing.T) {
	pf := &phaseResolver{fakes: newFakes(2), ex: &phaseExplainer{echoExplainer{id: "explainer.echo", maxDraws: 2}}}
	for _, tc := range []struct {
		name, want string
		edit       func(p *Plan)
	}{
		{"names", "test split test-1 has channels [X Y], split test-0 has [A B]", func(p *Plan) {
			p.Tests[1].ChannelNames = []string{"X", "Y"}
			p.Tests[0].ChannelNames = []string{"A", "B"}
		}},
		{"count", "3 channel names", func(p *Plan) {
			p.Tests[0].ChannelNames = []string{"A", "B", "C"}
			p.Tests[1].ChannelNames = p.Tests[0].ChannelNames
		}},
		{"length", "inputs of 8 values are not 3 channels", func(p *Plan) { p.Tests[0].Channels, p.Tests[1].Channels = 3, 3 }},
	} {
		p := channelPlan(6, nil)
		tc.edit(&p)
		_, _, err := Run(context.Background(), p, pf, nil, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}
