package plugin

import (
	"fmt"
	"time"

	"github.com/uaxai/uaxai/internal/units"
)

// Limits bound what a plugin may take. A call that has no answer within
// its limit is stopped by killing the plugin's process group, and the
// error names the plugin, the call and the limit. The recipe's [limits]
// table sets them (host/recipe.Limits, converted by host/runner); zero
// fields take DefaultLimits' values.
type Limits struct {
	Handshake time.Duration // start a plugin process until it has answered Info
	Check     time.Duration // each Check
	Fit       time.Duration // each Fit of a posterior
	Sample    time.Duration // each Sample (all the draws asked for)
	Load      time.Duration // each draw loaded into an explainer, and each Release
	Explain   time.Duration // each Explain call (one batch of records, one draw)
	Summarise time.Duration // each Summarise call (one batch of records)
	// ScriptMemory is the memory a summary script's process may use, in
	// bytes (on Linux its RLIMIT_DATA; the Go runtime's soft limit is set
	// a little below). A script that needs more ends its own process.
	ScriptMemory int64
}

// DefaultLimits are far above what a normal run takes, at the paper's
// sizes too; they are the defaults of the recipe's [limits] as well.
func DefaultLimits() Limits {
	return Limits{
		Handshake:    time.Minute,
		Check:        time.Minute,
		Fit:          6 * time.Hour,
		Sample:       30 * time.Minute,
		Load:         5 * time.Minute,
		Explain:      10 * time.Minute,
		Summarise:    10 * time.Minute,
		ScriptMemory: 2 << 30,
	}
}

// orDefault fills the zero fields of l with the defaults.
func (l Limits) orDefault() Limits {
	d := DefaultLimits()
	for _, f := range []struct{ dst, def *time.Duration }{
		{&l.Handshake, &d.Handshake}, {&l.Check, &d.Check}, {&l.Fit, &d.Fit}, {&l.Sample, &d.Sample},
		{&l.Load, &d.Load}, {&l.Explain, &d.Explain}, {&l.Summarise, &d.Summarise},
	} {
		if *f.dst <= 0 {
			*f.dst = *f.def
		}
	}
	if l.ScriptMemory <= 0 {
		l.ScriptMemory = d.ScriptMemory
	}
	return l
}

// limit is one bound of a call: its duration and the recipe key that
// sets it, for messages.
type limit struct {
	d   time.Duration
	key string
}

func (l limit) String() string {
	return fmt.Sprintf("%s (limits.%s)", units.FormatDuration(l.d), l.key)
}

// of returns the limit of a call.
func (l Limits) of(method string) limit {
	switch method {
	case "Check", "Parts":
		return limit{l.Check, "check"}
	case "Fit":
		return limit{l.Fit, "fit"}
	case "Sample":
		return limit{l.Sample, "sample"}
	case "Load", "Release":
		return limit{l.Load, "load"}
	case "Explain":
		return limit{l.Explain, "explain_batch"}
	case "Summarise":
		return limit{l.Summarise, "summarise_batch"}
	}
	return limit{l.Handshake, "handshake"}
}
