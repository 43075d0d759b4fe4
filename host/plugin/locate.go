package plugin

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/uaxai/uaxai/sdk"
)

// Locate says what would serve plugin id, without starting anything: a
// built-in (compiled into uaxai; source "built-in"), or the first
// executable or plugin directory of that ID in the plugin directories
// (source its path). It reads the directories and the plugin.toml
// manifests as data and runs none of them. Its errors are those of
// starting the plugin before anything is run: an ID that is not one, a
// bad manifest, an unknown plugin (naming the known ones and the
// directories searched).
func (m *Manager) Locate(id string) (builtin bool, source string, err error) {
	kind, _, err := sdk.ParseID(id)
	if err != nil {
		return false, "", fmt.Errorf("%w (known plugins: %s)", err, listIDs(m.knownIDs()))
	}
	if _, err := m.reg.Lookup(id); err == nil {
		return true, "built-in", nil
	}
	bins, scanErr := m.binaries()
	if b := bins[id]; len(b) > 0 {
		return false, b[0].source, nil
	}
	return false, "", m.notFound(id, kind, bins, scanErr)
}

// notFound is the error for a plugin id of kind that is neither a
// built-in nor among bins (the scan of the plugin directories, whose
// error is scanErr): its bad manifest if it has one, else an unknown
// plugin, with the known IDs and the directories searched.
func (m *Manager) notFound(id string, kind sdk.Kind, bins map[string][]binary, scanErr error) error {
	for _, me := range manifestErrors(scanErr) {
		if me.id == id {
			return fmt.Errorf("plugin %q: %w", id, me)
		}
	}
	ids := m.reg.IDs()
	for bid := range bins {
		ids = append(ids, bid)
	}
	slices.Sort(ids)
	err := fmt.Errorf("unknown plugin %q (known: %s; plugin binaries named %s%s-%s are searched in: %s)",
		id, listIDs(slices.Compact(ids)), BinaryPrefix, kind, strings.TrimPrefix(id, string(kind)+"."), listIDs(m.dirs()))
	if scanErr != nil {
		err = errors.Join(err, scanErr)
	}
	return err
}
