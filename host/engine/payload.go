package engine

import (
	"bytes"
	"encoding/gob"

	"github.com/uaxai/uaxai/sdk"
)

// fitPayload is a fit unit's output.
type fitPayload struct {
	Fingerprint string
	ID          UnitID
	Artifact    sdk.Artifact
	Seconds     float64 // the unit's wall time (not part of any result)
}

// explainPayload is an explain unit's output: for records B0..B1-1,
// the predictive mean's class and probabilities (row major), every
// summary's scores and set or band results, and the analysis's results.
type explainPayload struct {
	Fingerprint string
	ID          UnitID
	Preds       []int
	Probs       []float64
	MeanEntropy []float64        // the draws' mean entropy of each record (Prediction)
	Agree       []float64        // the share of draws voting for the predicted class
	Recs        [][]Record       // summary -> record - B0 (a summary not scored: empty)
	Outs        [][]OutputRecord // summary -> the explained records' results
	Analysis    []byte
	Seconds     float64
	// Checked marks a payload of this version, with the posterior's check
	// (selfcheck.go): an older payload is done again. The first explainer's
	// units hold the records' feature scores (nil: no feature check), and
	// the posterior's first unit its check.
	Checked    bool
	FeatureOOD []float64
	Check      *checkPayload
}

// checkPayload is a posterior's check as its first unit keeps it.
type checkPayload struct {
	Feature *FeatureCheck
	Note    string
	HeldOut []float64
}

func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
