// Package safetensors reads and writes the safetensors format
// (https://github.com/huggingface/safetensors), the format in which uaxai
// loads and saves model weights, so that a PyTorch state_dict exported with
// safetensors.torch.save_file runs here unchanged.
//
// A file is
//
//	8 bytes     N, the header length, unsigned little-endian
//	N bytes     a JSON object (padded with spaces on writing):
//	            {"name": {"dtype": "F32", "shape": [8, 1, 3], "data_offsets": [begin, end]},
//	             ...,
//	             "__metadata__": {"key": "value"}}
//	the rest    the data section: raw little-endian tensor data, row major;
//	            data_offsets are byte offsets relative to its first byte.
//
// Decode checks every structural rule: the header length fits the file and
// is at most MaxHeader bytes; the header is one JSON object with no
// duplicate key; every tensor has a known dtype, a nonnegative shape and
// data_offsets [begin, end] with end-begin = dtype size × product(shape);
// the tensors, sorted by offset, cover the data section exactly, without
// overlap, hole or trailing bytes. Every error names the file, the tensor
// and what was expected. Decode never panics, whatever the input.
//
// Float tensors (F32, F64, F16, BF16) are converted to float32 (Data);
// F64 tensors are also kept exactly (Float64). Integer and BOOL tensors
// are kept as int64 (Ints) with no Data: a PyTorch state_dict holds int64
// "*.num_batches_tracked" buffers for every batchnorm, which the caller
// ignores (see Tensor.IsFloat), and a dataset file holds int64 labels and
// boolean masks. 8-bit floats keep their DType only. NaN and infinite
// values are loaded as they are; the caller checks them.
//
// Encode writes F32 only, in a deterministic byte layout.
//
// The package depends on the standard library only.
package safetensors
