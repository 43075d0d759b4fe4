package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/data/npy"
	"github.com/uaxai/uaxai/host/plugin"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/record"
	"github.com/uaxai/uaxai/host/script"
	"github.com/uaxai/uaxai/plugins/posterior/files"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
	"github.com/uaxai/uaxai/sdk/onnx"
)

// An entry point is one reader of a kind of file the host reads: name is
// the file's name (its extension picks the format), bound the most bytes
// the reader accepts of it, setup writes what the file needs beside it
// (a COMTRADE .cfg beside its .dat), and read reads through the entry
// point, given the directory and the file's path.
type entryPoint struct {
	kind  string
	name  string
	bound int64
	setup func(t *testing.T, dir string)
	read  func(dir, path string) error
}

// comtradeCfg is a one-channel ASCII COMTRADE 1999 configuration.
const comtradeCfg = "S,R,1999\n1,1A,0D\n1,V,A,,V,1,0,0,-1,1,1,1,P\n50\n1\n4000,2\n01/01/2020,00:00:00\n01/01/2020,00:00:00\nASCII\n1\n"

func entryPoints() []entryPoint {
	recordRead := func(_, path string) error { _, err := record.Read(path, record.Options{}); return err }
	return []entryPoint{
		{kind: "graph spec", name: "net.toml", bound: graph.MaxSpecBytes,
			read: func(_, p string) error { _, err := graph.ReadSpecFile(p); return err }},
		{kind: "ONNX model", name: "net.onnx", bound: onnx.MaxFileBytes,
			read: func(_, p string) error { _, err := onnx.Read(p); return err }},
		{kind: "safetensors weights", name: "w.safetensors", bound: safetensors.MaxFileBytes,
			read: func(_, p string) error { _, err := nn.LoadParams(p, nn.PaperArch()); return err }},
		{kind: "posterior.files weights", name: "w.safetensors", bound: safetensors.MaxFileBytes,
			read: func(_, p string) error { _, _, err := files.Read(p, nn.PaperArch()); return err }},
		{kind: "posterior.files ONNX", name: "w.onnx", bound: onnx.MaxFileBytes,
			read: func(_, p string) error { _, _, err := files.Read(p, nn.PaperArch()); return err }},
		{kind: "CSV dataset", name: data.WaveformsFile, bound: data.MaxCSVBytes,
			read: func(d, _ string) error { _, err := data.ReadDir(d, data.ReadOptions{}); return err }},
		{kind: ".npy dataset", name: data.WaveformsNPY, bound: npy.MaxFileBytes,
			read: func(d, _ string) error { _, err := data.ReadDir(d, data.ReadOptions{}); return err }},
		{kind: "safetensors dataset", name: data.SafetensorsFile, bound: safetensors.MaxFileBytes,
			read: func(d, _ string) error { _, err := data.ReadDir(d, data.ReadOptions{}); return err }},
		{kind: "classes.txt", name: data.ClassesFile, bound: data.MaxClassesBytes,
			read: func(_, p string) error { _, err := data.ReadClasses(p); return err }},
		{kind: "CSV inputs", name: "in.csv", bound: data.MaxCSVBytes,
			read: func(_, p string) error { _, err := readInputs(p, 0, recipe.SizeBounds{}); return err }},
		{kind: ".npy inputs", name: "in.npy", bound: npy.MaxFileBytes,
			read: func(_, p string) error { _, err := readInputs(p, 0, recipe.SizeBounds{}); return err }},
		{kind: "COMTRADE cfg", name: "rec.cfg", bound: record.MaxFileBytes, read: recordRead},
		{kind: "COMTRADE dat", name: "rec.dat", bound: record.MaxFileBytes,
			setup: func(t *testing.T, dir string) { write(t, filepath.Join(dir, "rec.cfg"), comtradeCfg) },
			read:  func(d, _ string) error { return recordRead(d, filepath.Join(d, "rec.cfg")) }},
		{kind: "WAV recording", name: "rec.wav", bound: record.MaxFileBytes, read: recordRead},
		{kind: "CSV recording", name: "rec.csv", bound: record.MaxFileBytes, read: recordRead},
		{kind: "recipe", name: "r.toml", bound: recipe.MaxRecipeSize,
			read: func(_, p string) error { _, err := recipe.Load(p); return err }},
		{kind: "summary script", name: "s.go", bound: script.MaxSourceBytes,
			read: func(_, p string) error { return script.Inspect(p) }},
		{kind: "plugin manifest", name: plugin.ManifestName, bound: plugin.MaxManifestBytes,
			read: func(d, _ string) error { _, err := plugin.ReadManifest(d); return err }},
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestInputFilesRefused: for every entry point, the file given as
// /dev/zero (a link to it, so that its name keeps the extension), a FIFO
// with no writer, or a directory is refused at once with an error naming
// the file and saying "accepted: a regular file"; a sparse file one byte
// over the reader's bound (it costs no disk) is refused by its size, with
// the bound in the error, rather than read (read, it would be a file of
// zeros, refused for its contents, or would hold gigabytes). A hang is
// caught by a minute's guard, which is not a measure of speed.
func TestInputFilesRefused(t *testing.T) {
	for _, ep := range entryPoints() {
		for _, how := range []string{"/dev/zero", "FIFO", "directory", "over the bound"} {
			t.Run(ep.kind+"/"+how, func(t *testing.T) {
				t.Parallel() // a reader that blocks holds up only itself
				dir := t.TempDir()
				if ep.setup != nil {
					ep.setup(t, dir)
				}
				p := filepath.Join(dir, ep.name)
				want := []string{p, "accepted: a regular file"}
				switch how {
				case "/dev/zero":
					if err := os.Symlink("/dev/zero", p); err != nil {
						t.Fatal(err)
					}
					want = append(want, "it is a device")
				case "FIFO":
					if err := syscall.Mkfifo(p, 0o644); err != nil {
						t.Skipf("mkfifo: %v", err)
					}
					want = append(want, "it is a FIFO")
				case "directory":
					if err := os.Mkdir(p, 0o755); err != nil {
						t.Fatal(err)
					}
					want = append(want, "it is a directory")
				case "over the bound":
					f, err := os.Create(p)
					if err != nil {
						t.Fatal(err)
					}
					err = f.Truncate(ep.bound + 1)
					f.Close()
					if err != nil {
						t.Skipf("a sparse file of %d bytes: %v", ep.bound+1, err)
					}
					want = []string{p, fmt.Sprintf("%d bytes, more than the %d accepted", ep.bound+1, ep.bound)}
				}
				err := within(t, func() error { return ep.read(dir, p) })
				if err == nil {
					t.Fatalf("%s as %s: no error", ep.name, how)
				}
				for _, w := range want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s as %s: %v\nwant it to say %q", ep.name, how, err, w)
					}
				}
			})
		}
	}
}

// within runs read and returns its error, failing the test if it has not
// returned within a minute (a reader blocked on a FIFO for ever).
func within(t *testing.T, read func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- read() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("still blocked after a minute")
		return errors.New("unreachable")
	}
}
