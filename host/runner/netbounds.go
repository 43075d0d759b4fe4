package runner

import (
	"fmt"

	"github.com/uaxai/uaxai/host/recipe"
)

// forwardBatch is the batch of one forward pass whose workspace the bound
// on a network's values counts (recipe.SizeBounds.BatchValues): the
// inputs of one pass of a built-in network (sdk/nn's inference batch) and
// of servedProbs.
const forwardBatch = 64

// checkNetSize refuses the network what, of size s, above the bounds b
// (recipe.SizeBounds, the flags that raise them named): its parameters,
// and forwardBatch times a sample's values. It is called once the
// network's shapes are known and before its workspace is made.
func checkNetSize(what string, s recipe.NetSize, b recipe.SizeBounds) error {
	if s.Params > b.Params {
		return fmt.Errorf("%s has %d parameters, above the bound of %d (%d MiB as float32; --max-params raises it)", what, s.Params, b.Params, mib(b.Params))
	}
	if v, ok := s.BatchValues(forwardBatch); !ok || v > b.BatchValues {
		held := fmt.Sprintf("%d", v)
		if !ok {
			held = "more than 2^63"
		}
		return fmt.Errorf("%s: a sample's values (the input and every layer's or node's output) are %d, and a forward pass of %d inputs holds %s of them, above the bound of %d values (%d MiB as float32; --max-batch-values raises it)", what, s.Values, forwardBatch, held, b.BatchValues, mib(b.BatchValues))
	}
	return nil
}

// mib is n float32 values in MiB.
func mib(n int) int { return n >> 18 }
