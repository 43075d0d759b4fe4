package limits

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Limits is the [limits] table: how long each call to a plugin may take
// before the host kills the plugin's process group, how much memory each
// plugin process may use, and how much the process that runs a summary
// script may use. A zero field means its default (OrDefault; for
// PluginMemory, PluginMemoryBytes).
type Limits struct {
	Handshake      time.Duration // start a plugin process until it has said what it is (answered Info)
	Check          time.Duration // one Check of a recipe table
	Fit            time.Duration // one posterior Fit (the training)
	Sample         time.Duration // one Sample (every draw of a posterior)
	Load           time.Duration // one draw loaded into an explainer, or released
	ExplainBatch   time.Duration // one Explain call: a batch of records under one draw
	SummariseBatch time.Duration // one Summarise call: a batch of records, every draw
	// ModelCall is one call of a model service that serves a draw the
	// host computes with (Describe, Probs, InputGrad, Layer, Windows,
	// Spans, a batch each): a posterior's served draws (posterior.torch)
	// in the host's predictions, and the PyTorch model server of
	// `uaxai predict/explain --model`. Past it the process that serves
	// the draw is killed, group and all.
	ModelCall time.Duration
	// ScriptMemory is the memory a summary script's process may use, in
	// bytes (on Linux its RLIMIT_DATA; the Go runtime's soft limit is set
	// a little below). A script that needs more ends its own process.
	ScriptMemory int64
	// PluginMemory is the memory each plugin process may use, in bytes
	// (a built-in served by a process of its own, a plugin binary, a
	// Python plugin; not a script's, which ScriptMemory bounds): host/plugin
	// sets it from outside the process as it starts, by a cgroup v2
	// memory.max where the host may make one, else RLIMIT_DATA. Zero means
	// "auto", AutoPluginMemory, which depends on the machine, and stays
	// zero here so that a recipe's canonical form does not.
	PluginMemory int64
}

// MinPluginMemory is the least plugin_memory accepted, and the least
// AutoPluginMemory gives: what a Go plugin process (its runtime and
// gRPC) needs to start, with room for its work.
const MinPluginMemory int64 = 256 << 20

// PluginMemoryBytes is the memory each plugin process may use: l's
// PluginMemory, or AutoPluginMemory when that is zero.
func (l Limits) PluginMemoryBytes() int64 {
	if l.PluginMemory > 0 {
		return l.PluginMemory
	}
	return AutoPluginMemory()
}

// AutoPluginMemory is plugin_memory's default: half the memory the host
// may use, that is half the least of the machine's physical memory and
// the memory limits of the cgroups the host runs in (a Slurm job's
// allocation, a container's), but at least MinPluginMemory. One plugin
// that runs away then leaves the host and the other plugins half of it.
// Outside Linux, where the host does not limit a plugin's memory, it is
// MinPluginMemory's 8 times.
func AutoPluginMemory() int64 {
	n := HostMemory()
	if n <= 0 {
		return 8 * MinPluginMemory
	}
	return max(n/2, MinPluginMemory)
}

// Default returns the limits of a recipe without [limits]: far above
// what a normal run at the paper's sizes takes (an epoch of the paper's
// training set takes about a second, a batch of occlusion maps well under
// one), so that only a plugin that hangs meets them. host/recipe's
// REFERENCE.md prints them (a test there checks it does so).
func Default() Limits {
	return Limits{
		Handshake:      time.Minute,
		Check:          time.Minute,
		Fit:            6 * time.Hour,
		Sample:         30 * time.Minute,
		Load:           5 * time.Minute,
		ExplainBatch:   10 * time.Minute,
		SummariseBatch: 10 * time.Minute,
		ModelCall:      5 * time.Minute,
		ScriptMemory:   2 << 30, // 2 GiB
	}
}

// Duration is one duration key of [limits] and the field it sets.
type Duration struct {
	Key   string
	Value *time.Duration
}

// Durations returns the duration keys of [limits] in schema order, each
// with a pointer to its field of l. script_memory and plugin_memory,
// sizes, are not.
func (l *Limits) Durations() []Duration {
	return []Duration{
		{"handshake", &l.Handshake}, {"check", &l.Check}, {"fit", &l.Fit}, {"sample", &l.Sample},
		{"load", &l.Load}, {"explain_batch", &l.ExplainBatch}, {"summarise_batch", &l.SummariseBatch},
		{"model_call", &l.ModelCall},
	}
}

// Setting is one duration key of [limits] given outside the recipe (the
// command line's --limit key=duration), which Apply sets over the
// recipe's.
type Setting struct {
	Key   string
	Value time.Duration
}

// ParseSetting reads "key=duration" ("model_call=30s"): a duration key
// of [limits] (Durations) and a positive duration. The error says what
// is accepted.
func ParseSetting(s string) (Setting, error) {
	k, v, ok := strings.Cut(s, "=")
	k, v = strings.TrimSpace(k), strings.TrimSpace(v)
	if !ok || k == "" {
		return Setting{}, fmt.Errorf("%q: want key=duration, e.g. model_call=30s (keys: %s)", s, strings.Join(durationKeys(), ", "))
	}
	if !slices.Contains(durationKeys(), k) {
		return Setting{}, fmt.Errorf("%q: unknown key %q (accepted: %s; the sizes script_memory and plugin_memory only in the recipe's [limits])", s, k, strings.Join(durationKeys(), ", "))
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return Setting{}, fmt.Errorf("%q: %q is not a positive duration (accepted: a duration such as \"90s\", \"10m\" or \"6h\")", s, v)
	}
	return Setting{k, d}, nil
}

// durationKeys are the duration keys of [limits], in schema order.
func durationKeys() []string {
	var l Limits
	var keys []string
	for _, f := range l.Durations() {
		keys = append(keys, f.Key)
	}
	return keys
}

// Apply sets each setting's key of l, later settings over earlier ones.
// A key that is not a duration key of l is an error (ParseSetting
// accepts none).
func (l *Limits) Apply(settings []Setting) error {
	for _, s := range settings {
		i := slices.IndexFunc(l.Durations(), func(f Duration) bool { return f.Key == s.Key })
		if i < 0 || s.Value <= 0 {
			return fmt.Errorf("limit %s=%v: want a duration key (%s) and a positive duration", s.Key, s.Value, strings.Join(durationKeys(), ", "))
		}
		*l.Durations()[i].Value = s.Value
	}
	return nil
}

// OrDefault returns l with its zero (or negative) fields set to Default's.
func (l Limits) OrDefault() Limits {
	d := Default()
	defs := d.Durations()
	for i, f := range l.Durations() {
		if *f.Value <= 0 {
			*f.Value = *defs[i].Value
		}
	}
	if l.ScriptMemory <= 0 {
		l.ScriptMemory = d.ScriptMemory
	}
	return l
}
