package sdk

// SetServiceBounds makes the bounds a service model splits its requests
// by smaller than the host's, for the tests of the splitting, and returns
// a function that restores them.
func SetServiceBounds(values, inputs, starts, perturbations, pairs int) (restore func()) {
	old := serviceBounds
	serviceBounds = requestBounds{values: values, inputs: inputs, starts: starts, perturbations: perturbations, pairs: pairs}
	return func() { serviceBounds = old }
}
