package plugin

import (
	"fmt"
	"time"

	"github.com/uaxai/uaxai/host/limits"
	"github.com/uaxai/uaxai/internal/units"
)

// The Manager's limits are the recipe's [limits] (host/limits.Limits): a
// call that has no answer within its limit is stopped by killing the
// plugin's process group, and the error names the plugin, the call and
// the limit's key. Zero fields take limits.Default's values.

// limit is one bound of a call: its duration and the recipe key that
// sets it, for messages.
type limit struct {
	d   time.Duration
	key string
}

func (l limit) String() string {
	return fmt.Sprintf("%s (limits.%s)", units.FormatDuration(l.d), l.key)
}

// limitOf returns the limit of a call.
func limitOf(l limits.Limits, method string) limit {
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
		return limit{l.ExplainBatch, "explain_batch"}
	case "Summarise":
		return limit{l.SummariseBatch, "summarise_batch"}
	case "ModelCall":
		return limit{l.ModelCall, "model_call"}
	}
	return limit{l.Handshake, "handshake"}
}
