package proto

// The bounds of one model-service request, which the host's service
// enforces (sdk/driver.ModelService) and the sdk's models split their
// batches by (the Python sdk's uaxai_plugin.model has the same numbers).
const (
	// MaxServiceInputs is the most inputs (and targets) of one request.
	MaxServiceInputs = 1 << 16
	// MaxServiceValues is the most float32 values of x, of baseline_x,
	// and of each array of an answer (the probabilities of a batch, a
	// layer's activations, its gradients): 8 MiB each.
	MaxServiceValues = 1 << 21
	// MaxServiceWindows is the most windows (inputs x starts) of a
	// Windows request.
	MaxServiceWindows = 1 << 22
	// MaxServiceStarts is the most window starts of a Windows request.
	MaxServiceStarts = 1 << 20
	// MaxServicePerturbations is the most perturbations (ends) of a Spans
	// request, and MaxServicePairs its most (lo, hi) span pairs.
	MaxServicePerturbations = 1 << 16
	MaxServicePairs         = 1 << 20
	// MaxServiceLayerName is the longest layer name a Layer request may
	// carry, in bytes.
	MaxServiceLayerName = 256
	// MaxServiceMessage is the largest message the service receives or
	// sends: two arrays of MaxServiceValues float32 values (x and
	// baseline_x) and 8 MiB of indices (starts, bounds, targets as
	// varints), which the largest legal request fits.
	MaxServiceMessage = 2*4*MaxServiceValues + 8<<20
)

// MaxServiceBatch is the most inputs of n values (a network's InputLen)
// that one request may carry: MaxServiceInputs, or fewer when the inputs
// are long, so that x holds at most MaxServiceValues values. It is 0 when
// one input has more than MaxServiceValues values.
func MaxServiceBatch(n int) int {
	if n < 1 {
		panic("proto: MaxServiceBatch of a non-positive input length")
	}
	return min(MaxServiceInputs, MaxServiceValues/n)
}
