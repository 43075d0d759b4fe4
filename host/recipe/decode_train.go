package recipe

import (
	"strconv"

	"github.com/uaxai/uaxai/sdk/nn"
)

func (d *decoder) checkTrain(t nn.TrainConfig) error {
	p := func(k string) []string { return []string{"train", k} }
	switch {
	case t.Epochs < 1:
		return d.keyErr(p("epochs"), "%d must be >= 1", t.Epochs)
	case t.Batch < 1:
		return d.keyErr(p("batch"), "%d must be >= 1", t.Batch)
	case t.Batch > MaxBatch:
		return d.above(p("batch"), int64(t.Batch), MaxBatch, "records of one training step (accepted: 1.."+strconv.Itoa(MaxBatch)+")")
	case !(t.LR > 0):
		return d.keyErr(p("lr"), "%v must be > 0", t.LR)
	case !(t.WeightDecay >= 0):
		return d.keyErr(p("weight_decay"), "%v must be >= 0", t.WeightDecay)
	case t.StepEvery < 1:
		return d.keyErr(p("step_every"), "%d must be >= 1 (for no decay set step_gamma = 1)", t.StepEvery)
	case !(t.StepGamma > 0 && t.StepGamma <= 1):
		return d.keyErr(p("step_gamma"), "%v is outside (0, 1]", t.StepGamma)
	case !(t.Beta1 >= 0 && t.Beta1 < 1):
		return d.keyErr(p("beta1"), "%v is outside [0, 1)", t.Beta1)
	case !(t.Beta2 >= 0 && t.Beta2 < 1):
		return d.keyErr(p("beta2"), "%v is outside [0, 1)", t.Beta2)
	case !(t.Eps > 0):
		return d.keyErr(p("eps"), "%v must be > 0", t.Eps)
	}
	return nil
}
