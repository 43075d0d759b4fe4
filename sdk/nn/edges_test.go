package nn

import (
	"context"
	"math"
	"strings"
	"testing"
)

// TestTrainNonFiniteValidation: a validation set whose loss is never
// finite leaves no epoch to choose; Train says so instead of returning the
// zero vector as a network. One finite epoch is enough to choose.
func TestTrainNonFiniteValidation(t *testing.T) {
	a := plainArch()
	train := plainData(8, 1, false)
	val := plainData(4, 2, false)
	for i := range val.X {
		val.X[i] = math.MaxFloat32 * float32(1-2*(i%2)) // finite, but the logits overflow
	}
	cfg := plainCfg()
	cfg.Epochs = 2
	_, err := Train(context.Background(), a, train, val, cfg, 1, TrainOptions{})
	if err == nil || !strings.Contains(err.Error(), "validation loss was never finite in 2 epochs") {
		t.Fatalf("non-finite validation: %v", err)
	}
	res, err := Train(context.Background(), a, train, plainData(4, 2, false), cfg, 1, TrainOptions{})
	if err != nil || res.BestEpoch < 1 {
		t.Fatalf("finite validation: best epoch %d, %v", res.BestEpoch, err)
	}
}

// TestBatchNormFirst: a network whose first layer is a batchnorm folds to
// the same function, and its input gradient matches central differences.
func TestBatchNormFirst(t *testing.T) {
	foldedMatches(t, bnFirstArch(), 4, "batchnorm first: folded vs unfolded", 1e-5)
	checkInputGrad(t, bnFirstArch(), 2, 6)
}
