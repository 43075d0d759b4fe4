package runner

import "testing"

// skipUnlessHeavy skips a test that reproduces a whole quick recipe
// unless the tests were built with -tags heavy (heavyTests).
func skipUnlessHeavy(t *testing.T) {
	t.Helper()
	if !heavyTests {
		t.Skip("reproduces a whole quick recipe (about a minute on two idle cores): go test -tags heavy ./host/runner runs it, as .ci/run does")
	}
}
