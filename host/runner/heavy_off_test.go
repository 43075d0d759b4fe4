//go:build !heavy

package runner

// heavyTests is false in `go test ./...`: the tests that reproduce a
// whole quick recipe (training several networks, 30-50 s each on two
// idle cores, minutes on a loaded machine) run with -tags heavy, which
// .ci/run adds, so that the package stays within minutes on a busy
// machine.
const heavyTests = false
