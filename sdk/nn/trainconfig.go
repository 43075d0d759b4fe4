package nn

// TrainConfig is the training protocol of the paper (tb:hyper): Adam with
// weight decay added to the gradient, a step decay of the learning rate and
// the checkpoint with the lowest validation loss.
type TrainConfig struct {
	Epochs      int     `toml:"epochs" json:"epochs"`
	Batch       int     `toml:"batch" json:"batch"`
	LR          float64 `toml:"lr" json:"lr"`
	WeightDecay float64 `toml:"weight_decay" json:"weight_decay"`
	StepEvery   int     `toml:"step_every" json:"step_every"` // epochs between learning-rate decays
	StepGamma   float64 `toml:"step_gamma" json:"step_gamma"` // decay factor
	Beta1       float64 `toml:"beta1" json:"beta1"`
	Beta2       float64 `toml:"beta2" json:"beta2"`
	Eps         float64 `toml:"eps" json:"eps"`
}

// PaperTrainConfig is tb:hyper: 100 epochs, batch 64, Adam (0.9, 0.999,
// eps 1e-8), lr 1e-2 halved every 10 epochs, weight decay 1e-4.
func PaperTrainConfig() TrainConfig {
	return TrainConfig{Epochs: 100, Batch: 64, LR: 1e-2, WeightDecay: 1e-4, StepEvery: 10, StepGamma: 0.5, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
}
