package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/uaxai/uaxai/host/serve"
)

// cmdView is uaxai view [--serve] RUN_DIR: RUN_DIR/report.html in the
// default browser (xdg-open), or, with --serve or when no browser opens
// it, the run directory served on 127.0.0.1 at a free port until the
// context ends (Ctrl-C).
func cmdView(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("view", stdout, stderr)
	serve := fs.Bool("serve", false, "serve the run directory on 127.0.0.1 (a free port) instead of opening the file")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("view: want one run directory (uaxai view [--serve] RUN_DIR), got %d arguments", len(pos))
	}
	dir := pos[0]
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("view: %s is not a directory: want a run directory (runs/<recipe>-<time>/, as uaxai run prints)", dir)
	}
	page := filepath.Join(dir, "report.html")
	if _, err := os.Stat(page); err != nil {
		return fmt.Errorf("view: %s has no report.html: want a run directory of a finished run (uaxai merge %s writes it for a sharded one)", dir, dir)
	}
	if !*serve {
		abs, err := filepath.Abs(page)
		if err != nil {
			return err
		}
		if out, err := exec.CommandContext(ctx, "xdg-open", abs).CombinedOutput(); err == nil {
			fmt.Fprintln(stdout, "opened", abs)
			return nil
		} else {
			fmt.Fprintf(stderr, "view: xdg-open %s: %v %s; serving the run directory instead\n", abs, err, out)
		}
	}
	return serveDir(ctx, dir, stdout)
}

// serveDir serves dir on 127.0.0.1 at a free port (host/serve: the
// regular files inside dir, to requests for that address only), printing
// the report's URL, until ctx ends.
func serveDir(ctx context.Context, dir string, stdout io.Writer) error {
	err := serve.Serve(ctx, dir, func(url string) {
		fmt.Fprintf(stdout, "serving %s at %s (Ctrl-C to stop)\n", dir, url)
	})
	if err != nil {
		return fmt.Errorf("view: %w", err)
	}
	return nil
}
