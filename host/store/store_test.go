package store

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

func TestRoundTrip(t *testing.T) {
	c := Cache{Dir: t.TempDir()}
	a := sdk.Artifact{Arch: nn.PaperArch(), Tensors: map[string][]float32{"member.1": {1, 2}, "member.0": {3, -4.5}}, Meta: map[string]string{"members": "2"}}
	key, err := Key("x", 1, sdk.Config{"members": int64(2)})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.Get(key); ok || err != nil {
		t.Fatalf("empty cache: ok=%v err=%v", ok, err)
	}
	if err := c.Put(key, a); err != nil {
		t.Fatal(err)
	}
	got, ok, err := c.Get(key)
	if err != nil || !ok {
		t.Fatalf("ok=%v err=%v", ok, err)
	}
	if !reflect.DeepEqual(got, a) {
		t.Errorf("got %+v, want %+v", got, a)
	}
	// Keys depend on every part and on their order.
	k2, _ := Key("x", 1, sdk.Config{"members": int64(3)})
	k3, _ := Key(1, "x", sdk.Config{"members": int64(2)})
	if k2 == key || k3 == key {
		t.Error("different parts give the same key")
	}
}

func TestCorruptEntryIsAnError(t *testing.T) {
	c := Cache{Dir: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(c.Dir, "posteriors"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.path("k"), []byte("not safetensors"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, ok, err := c.Get("k")
	if ok || err == nil || !strings.Contains(err.Error(), "k.safetensors") {
		t.Errorf("corrupt entry: ok=%v err=%v; want an error naming the file", ok, err)
	}
}
