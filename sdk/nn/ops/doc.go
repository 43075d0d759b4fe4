// Package ops holds the numeric kernels of the graph ops of issue 24: 1-D
// convolution with padding, stride, dilation and groups; constant padding;
// max and average pooling; global pooling over time; pointwise activations
// and softmax; add and concat; linear; eval-mode batchnorm. Each op has a
// shape rule (PyTorch's output length), a forward and a backward pass.
//
// Tensors are plain float32 slices, batch-major and channel-major: a batch
// of B samples of C channels of T steps is B*C*T values, sample b's channel
// c at step t at index (b*C + c)*T + t (PyTorch's contiguous (B, C, T)).
//
// Conventions, as sdk/nn's: the output slice comes first; a backward pass
// WRITES the gradient with respect to its inputs (dx) and ADDS the
// gradients with respect to parameters (dw, db) to what is there, so that
// they sum over calls; a nil gradient slice is not computed. Kernels do not
// allocate. Hyper-parameters that a user (a file) chooses are checked by
// the ops' Check and OutLen methods, which return errors saying what is
// accepted; slices of the wrong length are programmer errors and panic
// before anything is written. Sums accumulate in float32 unless a doc
// comment says otherwise; NaN inputs propagate as in PyTorch.
//
// The kernels are written once for float32 and float64 (the float64
// instantiation is what the finite-difference tests differentiate).
//
// The float32 kernels of issue 24's graph ops, which sdk/nn/graph calls:
// Conv1D (asymmetric padding, stride, dilation, groups), Pad,
// MaxPool1D/AvgPool1D (PyTorch's padding semantics), global average/max
// pooling, ReLU/LeakyReLU/GELU/SiLU/Sigmoid/Tanh, Softmax over channels,
// Add, Concat, Linear, BatchNorm1D (eval mode; TrainForward/TrainBackward
// on batch statistics with PyTorch's running-statistics update, train.go),
// DropoutMask/Mul; forward, backward (dx written, parameter gradients
// added) and PyTorch's shape rules (ConvOutLen, PoolOutLen); the float32
// calls run on sdk/nn/internal/kern's AVX2+FMA kernels (convfast.go:
// stride 1, dilation 1, one group by the packed multi-output
// ConvMultiBias/ConvMultiGradW on a zero-padded copy of each sample, and
// dx as ConvMultiBias again with Cin and Cout swapped on dy padded by K-1
// zeros (flipped weights packed once per call, only dx's T steps
// computed); anything else by im2col and the same kernels with one tap;
// scratch from a sync.Pool; fast32.go: ReLU, batchnorm, stride-1 max
// pooling, global average pooling), the generic loops are the float64
// reference they are tested against (convfast_test.go, fast32_test.go:
// random shapes, a float32 rounding bound, NaNs and ties); checked against
// testdata/golden/ops and finite differences.
package ops

import "fmt"

// Float is the element type of the kernels.
type Float interface{ ~float32 | ~float64 }

func need(what string, have, want int) {
	if have != want {
		panic(fmt.Sprintf("ops: %s has length %d, want %d", what, have, want))
	}
}

func needOpt(what string, have []float32, want int) {
	if have != nil {
		need(what, len(have), want)
	}
}

func needOptF[F Float](what string, have []F, want int) {
	if have != nil {
		need(what, len(have), want)
	}
}

func positive(what string, v int) {
	if v < 1 {
		panic(fmt.Sprintf("ops: %s = %d, need >= 1", what, v))
	}
}
