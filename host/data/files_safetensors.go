package data

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/uaxai/uaxai/host/data/npy"
	"github.com/uaxai/uaxai/internal/atomicfile"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
)

// maxSafetensorsBytes bounds a dataset's safetensors file: the elements
// npy reads (npy.DefaultMaxElements) as float64, and a header of the
// largest size safetensors accepts.
const maxSafetensorsBytes = 8*npy.DefaultMaxElements + safetensors.MaxHeader

// safetensorsNames are the tensors of the safetensors layout.
var safetensorsNames = []string{"waveforms", "labels", "masks", "disturbance", "event"}

// readSafetensorsDir reads the safetensors layout (see ReadDir).
func readSafetensorsDir(dir string, channels int) (Split, error) {
	path, err := safetensorsFile(dir)
	if err != nil {
		return Split{}, err
	}
	b, err := atomicfile.ReadRegular(path, atomicfile.Limit{Bytes: maxSafetensorsBytes, What: "a dataset's safetensors file"})
	if err != nil {
		return Split{}, fmt.Errorf("data: %w", err)
	}
	f, err := safetensors.Decode(b, path)
	if err != nil {
		return Split{}, fmt.Errorf("data: %w", err)
	}
	var a arrays
	dst := map[string]**array{"waveforms": &a.waveforms, "labels": &a.labels, "masks": &a.masks, "disturbance": &a.disturbance, "event": &a.event}
	for _, t := range f.Tensors {
		d, ok := dst[t.Name]
		if !ok {
			return Split{}, fmt.Errorf("data: %s: tensor %q: unknown (accepted: %s)", path, t.Name, strings.Join(safetensorsNames, ", "))
		}
		if t.Len() > npy.DefaultMaxElements {
			return Split{}, fmt.Errorf("data: %s: tensor %q: shape %v, more than %d elements", path, t.Name, t.Shape, npy.DefaultMaxElements)
		}
		ar := &array{where: fmt.Sprintf("%s: tensor %q", path, t.Name), dtype: t.DType, shape: t.Shape}
		switch t.DType {
		case "F32":
			ar.kind, ar.float = 'f', make([]float64, len(t.Data))
			for i, v := range t.Data {
				ar.float[i] = float64(v)
			}
		case "F64":
			ar.kind, ar.float = 'f', t.Float64
		case "BOOL":
			ar.kind, ar.ints = 'b', t.Ints
		case "I8", "I16", "I32", "I64", "U8", "U16", "U32", "U64":
			if t.Ints == nil {
				return Split{}, fmt.Errorf("data: %s: a value beyond int64 (accepted: integers below 2^63)", ar.where)
			}
			ar.kind, ar.ints, ar.u8 = 'i', t.Ints, t.DType == "U8"
		default:
			ar.kind = '?'
		}
		*d = ar
	}
	for _, name := range safetensorsNames[:2] {
		if *dst[name] == nil {
			return Split{}, fmt.Errorf("data: %s: no tensor %q (want %q [N, C, T] or [N, T] and %q [N])", path, name, "waveforms", "labels")
		}
	}
	cpath := filepath.Join(dir, ClassesFile)
	if exists(cpath) {
		if a.classes, err = ReadClasses(cpath); err != nil {
			return Split{}, err
		}
	}
	if m, ok := f.Meta["classes"]; ok {
		names := strings.Split(m, ",")
		for i := range names {
			names[i] = strings.TrimSpace(names[i])
		}
		if a.classes != nil && !slices.Equal(a.classes, names) {
			return Split{}, fmt.Errorf("data: %s: metadata classes %q differ from the %d classes of %s: want them equal, or one of them", path, m, len(a.classes), cpath)
		}
		sorted := slices.Sorted(slices.Values(names))
		if len(names) > maxClasses || slices.Contains(names, "") || len(slices.Compact(sorted)) != len(names) {
			return Split{}, fmt.Errorf("data: %s: metadata classes %.80q: want at most %d comma-separated names, nonempty, each once", path, m, maxClasses)
		}
		for i, name := range names {
			if err := checkClassName(fmt.Sprintf("%s: metadata classes, name %d", path, i+1), name); err != nil {
				return Split{}, err
			}
		}
		a.classes = names
	}
	s, err := buildSplit(a, channels)
	if err != nil {
		return Split{}, err
	}
	if err := readParams(filepath.Join(dir, ParamsFile), path, path, s.Records, s.Classes); err != nil {
		return Split{}, err
	}
	return s, nil
}
