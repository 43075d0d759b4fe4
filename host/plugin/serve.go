package plugin

import (
	"github.com/uaxai/uaxai/sdk"
)

// ServeBuiltin serves the built-in id of reg as a plugin process: it is
// what `uaxai plugin serve <id>` runs in the child the Manager starts. It
// returns an error for an unknown ID or a built-in that is not a plugin of
// its registered kind; otherwise it serves until the host closes it (and
// exits the process itself on a serving error, as sdk.Serve does). The
// command must print nothing to stdout, which belongs to the protocol.
func ServeBuiltin(reg *Registry, id string) error {
	b, err := reg.Lookup(id)
	if err != nil {
		return err
	}
	sdk.Serve(b.New())
	return nil
}
