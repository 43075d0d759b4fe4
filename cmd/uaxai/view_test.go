package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// startView runs uaxai view --serve dir, returning the URL it prints; the
// command ends (and must end without error) with the test.
func startView(t *testing.T, dir string) string {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- cmdView(ctx, []string{"--serve", dir}, pw, io.Discard); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	i := strings.Index(line, "http://127.0.0.1:")
	if i < 0 {
		t.Fatalf("no URL in %q", line)
	}
	return strings.Fields(line[i:])[0]
}

// TestViewServe: uaxai view --serve serves the run directory: the URL it
// prints gives report.html's bytes, and the command ends with its
// context (Ctrl-C).
func TestViewServe(t *testing.T) {
	dir := t.TempDir()
	page := []byte("<!DOCTYPE html><title>r</title>")
	if err := os.WriteFile(filepath.Join(dir, "report.html"), page, 0o644); err != nil {
		t.Fatal(err)
	}
	url := startView(t, dir)
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(got, page) {
		t.Errorf("%s gave %q, want report.html's bytes", url, got)
	}
}

// TestViewServeHostile: uaxai view --serve is host/serve's server (whose
// tests try every hostile request): a symbolic link in the run directory
// to a file outside it is not followed, and a request for another Host
// (a page that rebound its name to 127.0.0.1) is refused.
func TestViewServeHostile(t *testing.T) {
	base := t.TempDir()
	dir, secret := filepath.Join(base, "run"), filepath.Join(base, "secret.txt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for path, body := range map[string]string{filepath.Join(dir, "report.html"): "<!DOCTYPE html>", secret: "SECRET"} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(secret, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	url := startView(t, dir)
	get := func(path, host string) (int, string) {
		req, err := http.NewRequest("GET", strings.TrimSuffix(url, "report.html")+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("link", ""); code != http.StatusNotFound || strings.Contains(body, "SECRET") {
		t.Errorf("GET /link (a link to a file outside): %d %q, want 404", code, body)
	}
	if code, body := get("report.html", "evil.example"); code != http.StatusForbidden {
		t.Errorf("GET /report.html with Host evil.example: %d %q, want 403", code, body)
	}
}

// TestViewErrors: a missing directory, or one without report.html, is an
// error saying what is wanted.
func TestViewErrors(t *testing.T) {
	empty := t.TempDir()
	for _, c := range []struct{ arg, want string }{
		{filepath.Join(empty, "nope"), "is not a directory: want a run directory"},
		{empty, "has no report.html: want a run directory of a finished run"},
	} {
		err := cmdView(context.Background(), []string{c.arg}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("view %s: %v, want %q", c.arg, err, c.want)
		}
	}
}
