package recipe

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// threeModel is a [data] source = "files" and an inline model taking C
// channels of 640 samples.
func threeModel(c int) string {
	return fmt.Sprintf("[data]\nsource = \"files\"\ntrain = \"train\"\ntest = [\"test\"]\n[model]\narch = \"m\"\nin_channels = %d\nin_len = 640\n[[model.layers]]\nkind = \"globalmaxpool\"\n[[model.layers]]\nkind = \"dense\"\nname = \"fc\"\nout = %d\n", c, NumClasses)
}

// TestRecordingChannels: [recording] channels = [...] and phases = [...]
// are read in order, round-trip through the canonical recipe, give the
// windows' channel count, and must match the model's in_channels; two
// ways of choosing, empty or repeated names are errors naming the key.
func TestRecordingChannels(t *testing.T) {
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
	three := filepath.Join(dir, "three.cfg")
	for _, c := range []struct {
		keys string
		want Recording
		n    int
		key  string
	}{
		{`phases = ["A", "B", "C"]`, Recording{File: three, Phases: []string{"A", "B", "C"}}, 3, "phases"},
		{`channels = ["VC", "1"]`, Recording{File: three, Channels: []string{"VC", "1"}}, 2, "channels"},
	} {
		src := minimal + threeModel(c.n) + "[recording]\nfile = \"three.cfg\"\n" + c.keys + "\n"
		r, err := Parse("r.toml", []byte(src), dir)
		if err != nil {
			t.Fatalf("%s: %v", c.keys, err)
		}
		if !reflect.DeepEqual(*r.Recording, c.want) || r.Recording.NumChannels() != c.n || r.Recording.ChoiceKey() != c.key {
			t.Errorf("%s: %+v (%d channels by %s), want %+v", c.keys, *r.Recording, r.Recording.NumChannels(), r.Recording.ChoiceKey(), c.want)
		}
		if canon := checkCanonical(t, r, dir); !strings.Contains(string(canon), c.keys) {
			t.Errorf("%s: canonical recipe:\n%s", c.keys, canon)
		}
		// A model of another channel count is refused, naming the key.
		bad := minimal + threeModel(1) + "[recording]\nfile = \"three.cfg\"\n" + c.keys + "\n"
		_, err = Parse("r.toml", []byte(bad), dir)
		for _, w := range []string{fmt.Sprintf("line %d:", strings.Count(bad, "\n")), fmt.Sprintf("[recording] %s makes windows of %d channel(s), but the model takes 1 ([model] in_channels", c.key, c.n)} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s with in_channels 1: %v; want %q", c.keys, err, w)
			}
		}
	}
	// One channel (channel or none) and a three-channel model.
	_, err := Parse("r.toml", []byte(minimal+threeModel(3)+"[recording]\nfile = \"a.wav\"\n"), dir)
	if err == nil || !strings.Contains(err.Error(), "[recording] channel makes windows of 1 channel(s), but the model takes 3") {
		t.Errorf("one channel, in_channels 3: %v", err)
	}
	for _, c := range []struct{ src, want string }{
		{"channel = \"VA\"\nphases = [\"A\"]", `[recording] has both "channel" and "phases"`},
		{"channels = [\"VA\"]\nphases = [\"A\"]", `[recording] has both "channels" and "phases"`},
		{"channels = []", `key "channels" in [recording]: an empty list (accepted: one or more`},
		{"phases = [\"A\", \"\"]", `element 1 of key "phases" in [recording]: an empty name`},
		{"phases = [\"A\", \"B\", \"A\"]", `element 2 of key "phases" in [recording]: "A" is also element 0 (accepted: each once)`},
		{"channels = \"VA\"", `key "channels" in [recording]: want an array of strings`},
	} {
		_, err := Parse("r.toml", []byte(minimal+"\n[recording]\nfile = \"a.cfg\"\n"+c.src+"\n"), "")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.src, err, c.want)
		}
	}
}
