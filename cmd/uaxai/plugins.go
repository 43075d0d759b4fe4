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
	return plugin.NewManager(reg, plugin.Options{Exe: exe, Dirs: plugin.DefaultDirs(flagDir), Logger: logger, ScriptOutput: stderr}), nil
}

// withManager starts a plugin manager (see newManager), runs f with it
// and a context that the first SIGINT or SIGTERM cancels (killing every
// plugin process), and closes the manager.
func withManager(ctx context.Context, pluginDir string, stderr io.Writer, f func(ctx context.Context, m *plugin.Manager) error) error {
	m, err := newManager(pluginDir, stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	ctx, stop := m.KillOnSignal(ctx)
	defer stop()
	return f(ctx, m)
}

func cmdPlugins(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("plugins", stdout, stderr)
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
	ctx, stop := m.KillOnSignal(ctx)
	defer stop()
	list, listErr := m.List(ctx) // the binaries that failed are in listErr, and listed
	list = append(list, listScripts(ctx, m, *scripts, stderr)...)
	var b strings.Builder
	fmt.Fprintf(&b, "%-28s %-10s %-8s %-8s %s\n", "ID", "KIND", "VERSION", "LANGUAGE", "SOURCE")
	for _, e := range list {
		version, lang, source := e.Version, e.Language, e.Source
		if e.Problem != "" {
			version, source = "-", source+": "+e.Problem
		}
		if lang == "" {
			lang = "-"
		}
		fmt.Fprintf(&b, "%-28s %-10s %-8s %-8s %s\n", e.ID, e.Kind, version, lang, source)
	}
	if _, err := io.WriteString(stdout, b.String()); err != nil {
		return err
	}
	if listErr != nil {
		return fmt.Errorf("plugins: %w", listErr)
	}
	return nil
}

// listScripts lists the script summaries (*.go) of dir, each loaded in a
// process of its own as a run would; a script that does not load is
// reported on stderr and left out.
func listScripts(ctx context.Context, m *plugin.Manager, dir string, stderr io.Writer) []plugin.Entry {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	var out []plugin.Entry
	for _, f := range files {
		info, err := m.ProbeScript(ctx, f)
		if err != nil {
			fmt.Fprintln(stderr, "uaxai: plugins:", err)
			continue
		}
		out = append(out, plugin.Entry{ID: info.ID, Kind: sdk.KindSummary, Version: info.Version, Source: "script " + f, Language: plugin.LangGo})
	}
	return out
}

// cmdPluginServe serves a built-in (args: its ID) or a summary script
// (args: --script PATH ...) to the host that started this process.
func cmdPluginServe(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 1 && isHelp(args[0]) {
		_, err := parse(flags("plugin serve", stdout, stderr), args)
		return err
	}
	if len(args) == 0 {
		return flags("plugin serve", stdout, stderr).usageError("want a built-in's ID or --script PATH")
	}
	reg, err := builtin.Registry()
	if err != nil {
		return err
	}
	return plugin.Serve(reg, args, stderr)
}
