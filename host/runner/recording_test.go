package runner

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/record"
)

// recordingRecipe is a recipe explaining the shipped three-phase
// recording with the [recording] keys given, and a model of in_channels C
// (an inline network: global max pool and a dense layer).
func recordingRecipe(t *testing.T, keys string, C int) *recipe.Recipe {
	t.Helper()
	dir := t.TempDir()
	for _, sub := range []string{"train", "test"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"waveforms.csv", "labels.csv"} {
			if err := os.WriteFile(filepath.Join(dir, sub, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	file, err := filepath.Abs(filepath.Join("..", "..", "testdata", "recordings", "three-phase.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`name = "rec3"
[data]
source = "files"
train = "train"
test = ["test"]
[model]
arch = "m"
in_channels = %d
in_len = 640
[[model.layers]]
kind = "globalmaxpool"
[[model.layers]]
kind = "dense"
name = "fc"
out = 16
[[posterior]]
use = "ensemble"
[[explainer]]
use = "occlusion"
[[summary]]
use = "mean"
[recording]
file = %q
%s
`, C, file, keys)
	r, err := recipe.Parse("rec3.toml", []byte(src), dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRecordingSplitPhases: [recording] phases = ["C", "A", "B"] makes an
// unlabelled split of Channels 3 whose records are 3 x 640 values,
// channel-major, channel k being the closed form of phase "CAB"[k]
// (record.ThreePhase) divided by sqrt(2) x 230, to the resampling
// filter's ripple away from the sag's edges; and exactly the windows of
// host/record's import of the same channels.
func TestRecordingSplitPhases(t *testing.T) {
	r := recordingRecipe(t, `phases = ["C", "A", "B"]`, 3)
	ts, notes, _, _, err := recordingSplit(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	const T = record.DefaultWindow
	if ts.Channels != 3 || !ts.Unlabelled || ts.Data.Len != 3*T || ts.Data.N != 3 || len(ts.Data.X) != 3*3*T {
		t.Fatalf("split: channels %d, unlabelled %v, %d records of %d values", ts.Channels, ts.Unlabelled, ts.Data.N, ts.Data.Len)
	}
	if want := []string{"VC", "VA", "VB"}; !slices.Equal(ts.ChannelNames, want) {
		t.Errorf("channel names %q, want the cfg's voltage channels in the phases' order %q", ts.ChannelNames, want)
	}
	if len(notes) == 0 || !strings.Contains(notes[0], "3 channels x 640 samples") || !strings.Contains(notes[0], "VC divided by sqrt(2) x 230") {
		t.Errorf("notes %q", notes)
	}
	phase := []int{2, 0, 1}
	worst := 0.0
	for i := range ts.Data.N {
		row := ts.Data.Row(i)
		for k, p := range phase {
			for j := 20; j < T-20; j++ {
				s := i*T + j
				if math.Abs(float64(s)-record.ThreeSagStart*3200) < 20 || math.Abs(float64(s)-record.ThreeSagEnd*3200) < 20 {
					continue
				}
				v, _ := record.ThreePhase(2 * s)
				worst = math.Max(worst, math.Abs(float64(row[k*T+j])-v[p]/(math.Sqrt2*record.SynthNominal)))
			}
		}
	}
	if worst > 2e-3 {
		t.Errorf("max |record - closed form| = %g, want <= 2e-3", worst)
	}
}

// TestRecordingSplitChannels: a model whose in_channels differs from the
// channels of [recording] is refused naming both keys (the recipe decoder
// refuses it first; the runner checks again what it is given); one
// channel makes records of 640 values, the channel's own import.
func TestRecordingSplitChannels(t *testing.T) {
	r := recordingRecipe(t, `channels = ["VA", "VB"]`, 2)
	r.Recording.Channels = []string{"VA"}
	_, _, _, _, err := recordingSplit(context.Background(), r)
	if err == nil || !strings.Contains(err.Error(), "[recording] channels makes windows of 1 channel(s), but the model takes 2 ([model] in_channels") {
		t.Errorf("1 channel, in_channels 2: %v", err)
	}
	r = recordingRecipe(t, `channel = "VB"`, 1)
	ts, _, _, _, err := recordingSplit(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := record.Read(r.Recording.File, record.Options{Channel: "VB"})
	if err != nil {
		t.Fatal(err)
	}
	imp, err := record.Import(context.Background(), rec, record.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kept := imp.Kept()
	if ts.Channels != 1 || ts.Data.Len != 640 || ts.Data.N != len(kept) {
		t.Fatalf("one channel: channels %d, %d records of %d", ts.Channels, ts.Data.N, ts.Data.Len)
	}
	for i, w := range kept {
		for j, v := range w {
			if ts.Data.Row(i)[j] != float32(v) {
				t.Fatalf("record %d value %d = %v, want %v", i, j, ts.Data.Row(i)[j], float32(v))
			}
		}
	}
}

// TestRecordingWarningsKept: what the reader assumed of a recording (here
// a relay's revision year 2001, read by the file's layout) reaches the
// split's warnings and the run's notes, so the console, tables.md,
// results.json and manifest.json carry it.
func TestRecordingWarningsKept(t *testing.T) {
	r := recordingRecipe(t, `phases = ["A", "B", "C"]`, 3)
	src := filepath.Join("..", "..", "testdata", "recordings")
	cfg, err := os.ReadFile(filepath.Join(src, "three-phase.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	dat, err := os.ReadFile(filepath.Join(src, "three-phase.dat"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg = []byte(strings.Replace(string(cfg), "record.ThreePhase,1999", "record.ThreePhase,2001", 1))
	r.Recording.File = filepath.Join(dir, "relay.cfg")
	if err := os.WriteFile(r.Recording.File, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "relay.dat"), dat, 0o644); err != nil {
		t.Fatal(err)
	}
	_, notes, warnings, _, err := recordingSplit(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, w := range warnings {
		if strings.Contains(w, "relay.cfg: line 1:") && strings.Contains(w, `revision year "2001"`) {
			found++
		}
	}
	if found != 1 { // the file's, once for the 3 channels read
		t.Errorf("warnings %q: want the revision warning once", warnings)
	}
	if !slices.ContainsFunc(notes, func(n string) bool { return strings.HasPrefix(n, "recording: ") && strings.Contains(n, "2001") }) {
		t.Errorf("notes %q lack the warning", notes)
	}
}
