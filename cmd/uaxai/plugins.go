package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/uaxai/uaxai/host/builtin"
	"github.com/uaxai/uaxai/host/plugin"
	"github.com/uaxai/uaxai/host/script"
	"github.com/uaxai/uaxai/sdk"
)

func newManager(flagDir string, stderr io.Writer) (*plugin.Manager, error) {
	reg, err := builtin.Registry()
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("locate the uaxai executable to serve built-in plugins: %w", err)
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "uaxai", Output: stderr, Level: hclog.Warn})
	return plugin.NewManager(reg, plugin.Options{Exe: exe, Dirs: plugin.DefaultDirs(flagDir), Logger: logger}), nil
}

func cmdPlugins(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("plugins", stderr)
	plugins := fs.String("plugins", "", "directory of third-party plugin binaries")
	scripts := fs.String("scripts", filepath.Join("recipes", "scripts"), "directory of script summaries (*.go) to list")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	m, err := newManager(*plugins, stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	list, listErr := m.List(ctx) // the binaries that failed are in listErr, and listed
	list = append(list, listScripts(*scripts, stderr)...)
	var b strings.Builder
	fmt.Fprintf(&b, "%-28s %-10s %-8s %s\n", "ID", "KIND", "VERSION", "SOURCE")
	for _, e := range list {
		version, source := e.Version, e.Source
		if e.Problem != "" {
			version, source = "-", source+": "+e.Problem
		}
		fmt.Fprintf(&b, "%-28s %-10s %-8s %s\n", e.ID, e.Kind, version, source)
	}
	if _, err := io.WriteString(stdout, b.String()); err != nil {
		return err
	}
	if listErr != nil {
		return fmt.Errorf("plugins: %w", listErr)
	}
	return nil
}

// listScripts lists the script summaries of dir; a script that does not
// load is reported on stderr and left out.
func listScripts(dir string, stderr io.Writer) []plugin.Entry {
	scripts, errs := script.LoadDir(dir)
	for _, err := range errs {
		fmt.Fprintln(stderr, "uaxai: plugins:", err)
	}
	out := make([]plugin.Entry, len(scripts))
	for i, s := range scripts {
		info := s.Info()
		out[i] = plugin.Entry{ID: info.ID, Kind: sdk.KindSummary, Version: info.Version, Source: "script " + s.Path()}
	}
	return out
}

// cmdPluginServe serves a built-in; id is "explainer.occlusion" (the ID)
// or "explainer/occlusion" (DESIGN.md's spelling).
func cmdPluginServe(id string) error {
	reg, err := builtin.Registry()
	if err != nil {
		return err
	}
	return plugin.ServeBuiltin(reg, strings.Replace(id, "/", ".", 1))
}
