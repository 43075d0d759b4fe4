//go:build heavy

package runner

// heavyTests: built with -tags heavy (.ci/run does), the tests that
// reproduce a whole quick recipe run too.
const heavyTests = true
