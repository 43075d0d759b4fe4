package sdk

import (
	"context"
	"io"
	"os"
	"testing"
)

// TestWarn: a warning goes to the function the context carries, and
// without one to standard error, prefixed "warning: ".
func TestWarn(t *testing.T) {
	var got []string
	Warn(WithWarn(context.Background(), func(m string) { got = append(got, m) }), "layer x is ambiguous")
	if len(got) != 1 || got[0] != "layer x is ambiguous" {
		t.Errorf("through the context: %q", got)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = w
	Warn(context.Background(), "no function")
	os.Stderr = old
	w.Close()
	b, _ := io.ReadAll(r)
	if string(b) != "warning: no function\n" {
		t.Errorf("on stderr: %q", b)
	}
}
