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

// TestViewServe: uaxai view --serve serves the run directory: the URL it
// prints gives report.html's bytes, and the command ends with its
// context (Ctrl-C).
func TestViewServe(t *testing.T) {
	dir := t.TempDir()
	page := []byte("<!DOCTYPE html><title>r</title>")
	if err := os.WriteFile(filepath.Join(dir, "report.html"), page, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- cmdView(ctx, []string{"--serve", dir}, pw, io.Discard); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	i := strings.Index(line, "http://127.0.0.1:")
	if i < 0 {
		t.Fatalf("no URL in %q", line)
	}
	url := strings.Fields(line[i:])[0]
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(got, page) {
		t.Errorf("%s gave %q, want report.html's bytes", url, got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
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
