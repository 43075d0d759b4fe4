// Package npy reads and writes NumPy's .npy format (numpy.lib.format,
// versions 1.0 to 3.0): one n-dimensional array of numbers or of fixed
// width strings, in C order. Files come from outside: a header that is
// not NumPy's, a dtype it does not read, Fortran order, a shape whose
// elements overflow or pass the caller's bound, or data shorter or longer
// than the shape says, is an error naming the file and what would have
// been accepted, never a panic; memory grows with the bytes the file
// holds, never with what its header claims.
//
// NumPy's .npy format (1.0-3.0): read float, integer, bool and unicode
// arrays in C order with the shape checked against a bound (and a caller's
// check, ReadFileChecked, before the data is read) and memory growing with
// the file, not its header; write float32, int64 and bool arrays byte for
// byte as NumPy 1.24-2.x does (WriteHeader: its header with the growth
// room of the first dimension) (issue 22's input format; tested against
// files NumPy wrote, testdata/make.py).
package npy
