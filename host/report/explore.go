package report

import "fmt"

// Explored is one explained record under one (posterior, explainer) pair,
// as report.html shows it: its input and mask, the S draws' maps and
// their coordinatewise summaries, and the prediction with each draw's
// probability of it. host/analysis keeps a bounded selection of them
// (analysis.ExplorePerClass, analysis.ExploreWindows); every slice holds
// C x T values, channel-major, except DrawProbs (S values).
type Explored struct {
	Posterior, Explainer string // labels
	// Replicate is the posterior's replicate in a run with [replicates]
	// (Replicated; engine.Step.Replicate): each replicate is a pair of
	// its own, shown as "label (replicate r)".
	Replicate    int
	Replicated   bool
	Split        int
	SplitName    string
	Record       int
	Label, Pred  int     // true class (-1: unlabelled), predicted class
	Prob         float64 // predictive mean probability of Pred
	DrawProbs    []float64
	Channels     int
	ChannelNames []string
	Wave         []float32
	Mask         []bool // nil: unlabelled
	// Members are the draws' maps (|R| when the run scores |R|), at most
	// analysis.ExploreDraws of them; the summaries below are of all S.
	Members [][]float32
	// Mean, Q05, Q95 (the order statistics r_(ceil(0.05 S)) and
	// r_(ceil(0.95 S))), Variance and CV (kappa 1e-8) of the S maps.
	Mean, Q05, Q95, Variance, CV []float32
	Draws                        int // S
	// OOD, for a recording's window outside what the model was trained
	// on (host/ood), says how; the panel shows it as a badge.
	OOD string
}

// PosteriorName is the posterior as the page names it: its label, with
// its replicate in a replicated run (engine.Step.Name).
func (e *Explored) PosteriorName() string {
	if !e.Replicated {
		return e.Posterior
	}
	return fmt.Sprintf("%s (replicate %d)", e.Posterior, e.Replicate)
}

// Window is a recording's window under one posterior, for the report's
// timeline (the runner's windows.csv row).
type Window struct {
	Posterior   string  `json:"posterior"`
	Window      int     `json:"window"`
	Start       float64 `json:"start_s"`
	Length      float64 `json:"length_s"`
	Class       string  `json:"class"`
	Probability float64 `json:"probability"`
	MutualInfo  float64 `json:"mutual_information"`
	Agreement   float64 `json:"agreement"`
	// OOD: the window is outside what the model was trained on (host/ood),
	// OODReason says how
	OOD       bool   `json:"ood,omitempty"`
	OODReason string `json:"ood_reason,omitempty"`
}
