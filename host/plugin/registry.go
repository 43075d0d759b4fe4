package plugin

import (
	"fmt"
	"slices"
	"strings"

	"github.com/uaxai/uaxai/sdk"
)

// Builtin is a plugin compiled into the uaxai binary.
type Builtin struct {
	ID      string
	Kind    sdk.Kind
	Version string
	// New returns a fresh plugin value: an sdk.Posterior, sdk.Explainer
	// or sdk.Summary according to Kind.
	New func() sdk.Plugin
}

// Registry maps built-in plugin IDs to their constructors. It is a value,
// not a global: the command line fills one, tests build their own. Fill
// it before use; it is not safe for concurrent Add.
type Registry struct {
	m map[string]Builtin
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{m: map[string]Builtin{}} }

// Add registers the built-in that newPlugin makes. It makes one value to
// read its kind, ID and version with sdk.Describe; the ID must not be
// registered yet.
func (r *Registry) Add(newPlugin func() sdk.Plugin) error {
	if newPlugin == nil {
		return fmt.Errorf("registering a built-in: nil constructor")
	}
	kind, info, err := sdk.Describe(newPlugin())
	if err != nil {
		return fmt.Errorf("registering a built-in: %w", err)
	}
	if _, dup := r.m[info.ID]; dup {
		return fmt.Errorf("registering built-in %q: already registered", info.ID)
	}
	r.m[info.ID] = Builtin{ID: info.ID, Kind: kind, Version: info.Version, New: newPlugin}
	return nil
}

// Lookup returns the built-in called id, or an error that lists the
// registered IDs.
func (r *Registry) Lookup(id string) (Builtin, error) {
	b, ok := r.m[id]
	if !ok {
		return Builtin{}, fmt.Errorf("no built-in plugin %q (built-ins: %s)", id, listIDs(r.IDs()))
	}
	return b, nil
}

// IDs returns the registered IDs, sorted.
func (r *Registry) IDs() []string {
	ids := make([]string, 0, len(r.m))
	for id := range r.m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func listIDs(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}
