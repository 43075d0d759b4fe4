//go:build mutation

package metric

// quickGolden: under -tags mutation (scripts/mutation --tags mutation, a
// test run a mutant) the Quantus golden tests replay the FCN's and the
// three-phase ResNet1D's cases, not the one-channel ResNet1D's (the
// slowest), and ask at least 40% of the full run's comparisons.
const quickGolden = true
