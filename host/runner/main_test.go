package runner

import (
	"fmt"
	"os"
	"testing"

	"github.com/uaxai/uaxai/host/builtin"
	"github.com/uaxai/uaxai/host/plugin"
)

// TestMain serves a plugin when a Manager re-executes the test binary as
// `<test binary> plugin serve ...` (the go-plugin magic cookie is then
// set): the runner's tests run built-ins in process but scripts, as
// always, in processes of their own.
func TestMain(m *testing.M) {
	if os.Getenv("UAXAI_PLUGIN") != "" && len(os.Args) > 3 && os.Args[1] == "plugin" && os.Args[2] == "serve" {
		reg, err := builtin.Registry()
		if err == nil {
			err = plugin.Serve(reg, os.Args[3:], os.Stderr)
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
