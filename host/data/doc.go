// Package data is the built-in synthetic power-quality-disturbance (PQD)
// dataset: a 16-class waveform generator that follows
// docs/spec/pqd-signals.md, the splits of the paper's recipes, and the
// dataset directories that `uaxai data generate` writes and recipes of
// source "files" read (ReadDir: CSV, NumPy .npy or safetensors). PQD3 is
// the three-phase generator of docs/spec/pqd-3phase.md (source
// "pqd-3phase").
//
// # Signal model
//
// With t_n = n/fs, n = 0..N-1, w = 2 pi f0, T = 1/f0 and L = N/fs:
//
//	x0(t) = sin(w t + phi)
//	u(t)  = 1[t1 <= t < t2]
//	H(t)  = x0(t) + sum_{k=3,5,7} a_k sin(k (w t + phi) + th_k)
//	F(t)  = 1 + lam sin(2 pi beta t + thf)
//
// and y(t) of every class as in the spec's class table (see Generate). The
// record holds x = y + noise, d = y - x0 (noise excluded) and event, the
// indicator of the drawn disturbance interval(s).
//
// # Randomness
//
// Generate draws everything from the one *rand.Rand it is given, in a fixed
// order (documented on Generate). MakeSplit seeds record i of split S with
// rng.For(seed, "data", S, i, -1), so a split is a pure function of
// (seed, S, config) and does not depend on the number of workers.
//
// The 16-class PQD generator (docs/spec/pqd-signals.md), the Generator
// table (Generators), splits, dataset directories: ReadDir reads three
// layouts (CSV of C x T values a line with ReadOptions.Channels; NumPy
// .npy: waveforms.npy (N, C, T) or (N, T) float32/float64, labels.npy
// integers or class names, optional classes.txt, masks.npy (the file's
// ground truth, Record.Mask), disturbance.npy, event.npy; one safetensors
// file of those tensors) into a Split with its channels and classes, every
// error naming file, tensor, record and the accepted shape; WriteCSV,
// WriteNPYDir (as np.save writes, masks |d| > eps); GenerateDir (a
// generator, CSV or NPY) for uaxai data generate, refusing before it
// generates a dataset whose records would hold more than MaxBytes
// (GenerateBytes: records x channels x samples x 17 bytes, float64 X and D
// and the event mask, with the allocator's rounding and each record's
// parameters; --max-memory); ScanWaveforms, the one reader of waveform
// CSVs (ReadWaveforms, the inputs of predict/explain): a value at a time
// through a 64 KiB buffer, a line above its bound refused once counted,
// never held whole; PQD3, the 13-class three-phase generator (source
// pqd-3phase, docs/spec/pqd-3phase.md): balanced phases with single-line-
// to-ground, line-to-line and three-phase fault sags and the one-phase
// disturbances on one or all phases, each phase the one-phase model,
// ground truth per phase.
package data
