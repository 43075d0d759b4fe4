package recipe

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/uaxai/uaxai/host/limits"
	"github.com/uaxai/uaxai/internal/units"
)

// TestLimits: [limits] is optional and every key has a default; given keys
// are read as durations and sizes, round-trip through the canonical form,
// and change no hash; bad values are errors that name the key, its line
// and what is accepted.
func TestLimits(t *testing.T) {
	r, err := Parse("mini.toml", []byte(minimal), "")
	if err != nil {
		t.Fatal(err)
	}
	d := limits.Default()
	if r.Limits != d {
		t.Errorf("limits without [limits]: %+v, want the defaults %+v", r.Limits, d)
	}
	if d.ScriptMemory < MinScriptMemory {
		t.Errorf("default script_memory %s is less than the least accepted", FormatSize(d.ScriptMemory))
	}
	text := minimal + `
[limits]
handshake = "5s"
check = "1m30s"
fit = "12h"
sample = "90s"
load = "250ms"
explain_batch = "2m"
summarise_batch = "45s"
model_call = "20s"
script_memory = "512MiB"
plugin_memory = "1GiB"
`
	r2, err := Parse("limits.toml", []byte(text), "")
	if err != nil {
		t.Fatal(err)
	}
	want := limits.Limits{Handshake: 5 * time.Second, Check: 90 * time.Second, Fit: 12 * time.Hour, Sample: 90 * time.Second,
		Load: 250 * time.Millisecond, ExplainBatch: 2 * time.Minute, SummariseBatch: 45 * time.Second, ModelCall: 20 * time.Second, ScriptMemory: 512 * MiB, PluginMemory: GiB}
	if r2.Limits != want {
		t.Errorf("limits\n got %+v\nwant %+v", r2.Limits, want)
	}
	c := string(checkCanonical(t, r2, ""))
	for _, w := range []string{"[limits]", `check = "90s"`, `load = "250ms"`, `fit = "12h"`, `model_call = "20s"`, `script_memory = "512MiB"`, `plugin_memory = "1GiB"`} {
		if !strings.Contains(c, w) {
			t.Errorf("canonical form lacks %s:\n%s", w, c)
		}
	}
	// The default plugin_memory, which depends on the machine, is "auto"
	// in the canonical form, and reads back as the default.
	c0 := string(checkCanonical(t, r, ""))
	if !strings.Contains(c0, `plugin_memory = "auto"`) {
		t.Errorf("canonical form of the default limits lacks plugin_memory = \"auto\":\n%s", c0)
	}
	if ra, err := Parse("auto.toml", []byte(minimal+"\n[limits]\nplugin_memory = \"auto\"\n"), ""); err != nil || ra.Limits != d {
		t.Errorf(`plugin_memory = "auto": %v, %+v`, err, ra)
	}
	if r.Hash() != r2.Hash() || r.Hash(FitParts...) != r2.Hash(FitParts...) {
		t.Error("[limits] changes a hash; limits never change a result")
	}
	if n, err := ParseSize("1.5GB"); err != nil || n != 1_500_000_000 {
		t.Errorf("ParseSize(1.5GB) = %d, %v", n, err)
	}
	if n, err := ParseSize("3 MiB"); err != nil || n != 3*MiB {
		t.Errorf("ParseSize(3 MiB) = %d, %v", n, err)
	}
	if s := FormatSize(3*GiB + 1); s != "3221225473B" {
		t.Errorf("FormatSize of an odd size: %s", s)
	}
	if s := units.FormatDuration(1500 * time.Microsecond); s != "1.5ms" {
		t.Errorf("FormatDuration(1.5ms) = %s", s)
	}

	for _, c := range []struct {
		key, value string
		fragments  []string
	}{
		{"fit", `5`, []string{`key "fit" in [limits]`, `want a duration such as "90s"`, "got integer 5"}},
		{"fit", `"6 hours"`, []string{`key "fit" in [limits]`, `"6 hours" is not a duration`, "units h, m, s, ms"}},
		{"explain_batch", `"0s"`, []string{`key "explain_batch" in [limits]`, "is not positive"}},
		{"check", `"-1m"`, []string{`key "check" in [limits]`, "is not positive"}},
		{"script_memory", `"2 gigs"`, []string{`key "script_memory" in [limits]`, `unknown unit "gigs"`, "KiB, MiB, GiB"}},
		{"script_memory", `"lots"`, []string{`key "script_memory" in [limits]`, `"lots" is not a size`}},
		{"script_memory", `"1MiB"`, []string{`key "script_memory" in [limits]`, "1MiB is less than 256MiB", "256MiB or more"}},
		{"script_memory", `true`, []string{`key "script_memory" in [limits]`, "got boolean true"}},
		{"plugin_memory", `"lots"`, []string{`key "plugin_memory" in [limits]`, `"lots" is not a size`, `or "auto" for the default`}},
		{"plugin_memory", `"255MiB"`, []string{`key "plugin_memory" in [limits]`, "255MiB is less than 256MiB, the least a plugin process needs", "256MiB or more"}},
		{"plugin_memory", `false`, []string{`key "plugin_memory" in [limits]`, "got boolean false"}},
		{"timeout", `"1m"`, []string{`unknown key "timeout" in [limits]`, "accepted: check, explain_batch, fit, handshake, load, model_call, plugin_memory, sample, script_memory, summarise_batch"}},
	} {
		text := minimal + "\n[limits]\n" + c.key + " = " + c.value + "\n"
		_, err := Parse("bad.toml", []byte(text), "")
		wantErr(t, err, lineOf(t, text, c.key+" = "), c.fragments...)
	}
	_, err = Parse("bad.toml", []byte("limits = 3\n"+minimal), "")
	if err == nil || !strings.Contains(err.Error(), `key "limits"`) {
		t.Errorf("limits = 3: %v", err)
	}
	if n, err := ParseSize("99999999TiB"); err == nil {
		t.Errorf("ParseSize of an overflowing size = %d", n)
	}
	if n, err := ParseSize("8388608TiB"); err == nil { // 2^63: one past the largest int64
		t.Errorf("ParseSize(2^63 bytes) = %d", n)
	}
	// Boundaries: a whole unit is written in that unit; the least memory
	// is accepted.
	if s := units.FormatDuration(time.Hour); s != "1h" {
		t.Errorf("FormatDuration(1h) = %s", s)
	}
	if s := FormatSize(GiB); s != "1GiB" {
		t.Errorf("FormatSize(1GiB) = %s", s)
	}
	r3, err := Parse("least.toml", []byte(minimal+"\n[limits]\nscript_memory = \"256MiB\"\n"), "")
	if err != nil || r3.Limits.ScriptMemory != MinScriptMemory {
		t.Errorf("script_memory = the least accepted: %v", err)
	}
	r4, err := Parse("least.toml", []byte(minimal+"\n[limits]\nplugin_memory = \"256MiB\"\n"), "")
	if err != nil || r4.Limits.PluginMemory != MinPluginMemory {
		t.Errorf("plugin_memory = the least accepted: %v", err)
	}
}

// TestLimitsReference: REFERENCE.md's [limits] table has one row a key of
// the table, and its default column is limits.Default written as the
// canonical form writes it: a default changed in host/limits and not in
// the reference (or the other way round) fails here.
func TestLimitsReference(t *testing.T) {
	doc, err := os.ReadFile("REFERENCE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## `[limits]`\n")
	if !ok {
		t.Fatal("REFERENCE.md has no [limits] section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| (duration|size) \\| `\"([^\"]*)\"` \\|")
	got := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		got[m[1]] = m[3]
	}
	d := limits.Default()
	want := map[string]string{"script_memory": FormatSize(d.ScriptMemory), "plugin_memory": pluginMemory(d.PluginMemory)}
	for _, f := range d.Durations() {
		want[f.Key] = units.FormatDuration(*f.Value)
	}
	if !maps.Equal(got, want) {
		t.Errorf("REFERENCE.md's [limits] defaults\n got %v\nwant %v (limits.Default)", got, want)
	}
	if !strings.Contains(section, fmt.Sprintf("at least `%q`", FormatSize(MinScriptMemory))) {
		t.Errorf("REFERENCE.md does not give the least script_memory, %s", FormatSize(MinScriptMemory))
	}
	if !strings.Contains(section, fmt.Sprintf("`plugin_memory` | size | `%q` | the memory of each plugin process", AutoMemory)) ||
		!strings.Contains(section, fmt.Sprintf("at least `%q`", FormatSize(MinPluginMemory))) {
		t.Errorf("REFERENCE.md does not give plugin_memory's default %q and its least, %s", AutoMemory, FormatSize(MinPluginMemory))
	}
}
