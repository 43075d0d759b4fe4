package metric

// Builtin returns a new Registry holding uaxai's metrics. A metric is
// added by one file that returns its Entry and one line here.
func Builtin() *Registry {
	r := &Registry{}
	for _, e := range []Entry{
		// faithfulness
		RegionPerturbation(),
		PixelFlipping(),
		Selectivity(),
		FaithfulnessCorrelation(),
		FaithfulnessEstimate(),
		MonotonicityCorrelation(),
		Monotonicity(),
		Infidelity(),
		SensitivityN(),
		ROAD(),
		// randomisation
		RandomLogit(),
		MPRT(),
		// robustness
		MaxSensitivity(),
		AvgSensitivity(),
		LocalLipschitzEstimate(),
		// complexity
		Sparseness(),
		ComplexityEntropy(),
		EffectiveComplexity(),
		// localisation
		RelevanceMassAccuracy(),
		RelevanceRankAccuracy(),
		TopKIntersection(),
		PointingGame(),
		AUC(),
		AttributionLocalisation(),
		// axiomatic
		Completeness(),
	} {
		if err := r.Add(e); err != nil {
			panic(err) // a built-in with a bad Info: a programmer's error
		}
	}
	return r
}
