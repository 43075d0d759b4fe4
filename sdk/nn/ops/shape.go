package ops

import (
	"fmt"

	"github.com/uaxai/uaxai/internal/checked"
)

// ConvOutLen is the output length of a 1-D convolution (PyTorch's Conv1d,
// with the padding of both ends given apart):
//
//	L = floor((T + padLeft + padRight - dilation*(kernel-1) - 1) / stride) + 1.
//
// It returns an error, as PyTorch refuses, when the padded input is shorter
// than the dilated kernel (L < 1), or when a size is out of range: T, kernel,
// stride and dilation >= 1, paddings >= 0.
func ConvOutLen(T, kernel, stride, padLeft, padRight, dilation int) (int, error) {
	if T < 1 {
		return 0, fmt.Errorf("conv1d: input length %d; need >= 1", T)
	}
	if err := convParams(kernel, stride, padLeft, padRight, dilation); err != nil {
		return 0, err
	}
	// The span and the padded length overflow only on sizes no input
	// has; they are refused rather than wrapped (a wrapped span of 1
	// would pass the check below).
	span, ok := checked.Mul(dilation, kernel-1)
	if ok {
		span, ok = checked.Add(span, 1)
	}
	if !ok {
		return 0, fmt.Errorf("conv1d: the dilated kernel, dilation %d x (kernel %d - 1) + 1, overflows an int; need a smaller dilation or kernel", dilation, kernel)
	}
	padded, ok := checked.Sum(T, padLeft, padRight)
	if !ok {
		return 0, fmt.Errorf("conv1d: the padded input length, T %d + padding %d + %d, overflows an int; need smaller paddings", T, padLeft, padRight)
	}
	if padded < span {
		return 0, fmt.Errorf("conv1d: padded input length %d (T %d + padding %d + %d) is shorter than the dilated kernel %d (dilation %d x (kernel %d - 1) + 1); need T + padLeft + padRight >= %d",
			padded, T, padLeft, padRight, span, dilation, kernel, span)
	}
	return (padded-span)/stride + 1, nil
}

func convParams(kernel, stride, padLeft, padRight, dilation int) error {
	switch {
	case kernel < 1:
		return fmt.Errorf("conv1d: kernel size %d; need >= 1", kernel)
	case stride < 1:
		return fmt.Errorf("conv1d: stride %d; need >= 1", stride)
	case dilation < 1:
		return fmt.Errorf("conv1d: dilation %d; need >= 1", dilation)
	case padLeft < 0 || padRight < 0:
		return fmt.Errorf("conv1d: padding (%d, %d); need both >= 0", padLeft, padRight)
	}
	return nil
}

// PoolOutLen is the output length of PyTorch's MaxPool1d and AvgPool1d
// (ceil_mode=False, dilation 1, the same padding at both ends):
//
//	L = floor((T + 2*pad - kernel) / stride) + 1.
//
// Like PyTorch it refuses pad > kernel/2 (a window could then lie wholly in
// the padding) and L < 1.
func PoolOutLen(T, kernel, stride, pad int) (int, error) {
	switch {
	case T < 1:
		return 0, fmt.Errorf("pool1d: input length %d; need >= 1", T)
	case kernel < 1:
		return 0, fmt.Errorf("pool1d: kernel size %d; need >= 1", kernel)
	case stride < 1:
		return 0, fmt.Errorf("pool1d: stride %d; need >= 1", stride)
	case pad < 0 || pad > kernel/2:
		return 0, fmt.Errorf("pool1d: padding %d with kernel %d; need 0 <= padding <= kernel/2 = %d", pad, kernel, kernel/2)
	}
	// pad <= kernel/2, so 2*pad <= kernel: only T + 2*pad can overflow.
	padded, ok := checked.Add(T, 2*pad)
	if !ok {
		return 0, fmt.Errorf("pool1d: the padded input length, T %d + 2 x padding %d, overflows an int; need a smaller padding", T, pad)
	}
	if padded < kernel {
		return 0, fmt.Errorf("pool1d: padded input length %d (T %d + 2 x padding %d) is shorter than the kernel %d; need T + 2*padding >= %d",
			padded, T, pad, kernel, kernel)
	}
	return (padded-kernel)/stride + 1, nil
}

// PadOutLen is the output length of constant padding: T + left + right.
// Negative paddings (PyTorch's cropping) are refused.
func PadOutLen(T, left, right int) (int, error) {
	switch {
	case T < 1:
		return 0, fmt.Errorf("pad: input length %d; need >= 1", T)
	case left < 0 || right < 0:
		return 0, fmt.Errorf("pad: padding (%d, %d); need both >= 0", left, right)
	}
	L, ok := checked.Sum(T, left, right)
	if !ok {
		return 0, fmt.Errorf("pad: the output length, T %d + %d + %d, overflows an int; need smaller paddings", T, left, right)
	}
	return L, nil
}
