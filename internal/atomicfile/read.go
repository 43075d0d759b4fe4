package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"syscall"
)

// ErrNotRegular marks a path that is not a regular file (a FIFO, a
// device, a directory, a socket), which OpenRegular refuses.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge marks a regular file larger than its reader's Limit, which
// OpenRegular refuses before reading it.
var ErrTooLarge = errors.New("file too large")

// Limit is the most bytes a reader accepts of one kind of file: it is
// checked against the file's size before the file is read, so that a
// file too large to hold is refused without its cost. Each reader passes
// the bound of its kind of file (a graph spec's, an ONNX model's, a
// dataset's), defined beside the format it reads.
type Limit struct {
	// Bytes is the most bytes accepted.
	Bytes int64
	// What names the kind of file in the error, with its article ("a
	// graph spec", "an ONNX model").
	What string
	// Raise is the flag or [limits] key that raises Bytes ("--max-x",
	// "limits.y"), "" when none does.
	Raise string
}

// AnySize is the Limit of a reader whose memory does not grow with the
// file: one that reads a bounded head of it (a #! line), streams it
// through a hash or a copy, or reads a file the run itself wrote. Only
// the refusal of what is not a regular file applies.
var AnySize = Limit{Bytes: math.MaxInt64, What: "a file"}

// OpenRegular opens path for reading if it is a regular file (or a
// symbolic link to one) of at most lim.Bytes bytes, and refuses anything
// else without blocking and without reading: a FIFO put in a file's place
// would block an open or a read until a writer came, a device may act
// when opened (and /dev/zero never ends), a file larger than the reader
// can hold would be read before the reader found out.
//
// It checks with Stat before opening (so that a device is never opened),
// opens with O_NONBLOCK (so that a FIFO swapped in after the Stat does
// not block the open) and checks the open file again with Fstat (so that
// such a swap is refused too). O_NONBLOCK has no effect on the reads of a
// regular file, so it is left set. The error names the path and wraps
// ErrNotRegular ("accepted: a regular file"), ErrTooLarge (the file's
// size, the bound and what raises it), or the open's error (fs.ErrNotExist
// for a missing file); each is an *fs.PathError, "open PATH: reason", as
// os.Open's are.
func OpenRegular(path string, lim Limit) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := lim.check(path, fi); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if fi, err = f.Stat(); err != nil {
		f.Close()
		return nil, err
	}
	if err := lim.check(path, fi); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadRegular reads the whole of path, which must be a regular file of
// at most lim.Bytes bytes (OpenRegular). It reads no more than lim.Bytes
// and one byte, so a file that grows while it is read is refused as too
// large, not read on.
func ReadRegular(path string, lim Limit) ([]byte, error) {
	f, err := OpenRegular(path, lim)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, lim.stop()))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > lim.Bytes {
		return nil, lim.tooLarge(path, fmt.Sprintf("%d bytes or more (it grew while it was read)", len(b)))
	}
	return b, nil
}

// stop is the most a reader under lim reads: one byte past the bound, so
// that a file beyond it shows.
func (lim Limit) stop() int64 {
	if lim.Bytes == math.MaxInt64 {
		return lim.Bytes
	}
	return lim.Bytes + 1
}

// check refuses fi, the file at path, if it is not a regular file or is
// larger than lim.
func (lim Limit) check(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return notRegular(path, fi.Mode())
	}
	if fi.Size() > lim.Bytes {
		return lim.tooLarge(path, fmt.Sprintf("%d bytes", fi.Size()))
	}
	return nil
}

func (lim Limit) tooLarge(path, size string) error {
	what := lim.What
	if what == "" {
		what = "a file"
	}
	raise := "no setting raises it"
	if lim.Raise != "" {
		raise = "raise it with " + lim.Raise
	}
	return &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: %s, more than the %d accepted for %s (accepted: a regular file of at most %d bytes; %s)",
		ErrTooLarge, size, lim.Bytes, what, lim.Bytes, raise)}
}

func notRegular(path string, m fs.FileMode) error {
	what := "a file of mode " + m.String()
	switch {
	case m&fs.ModeNamedPipe != 0:
		what = "a FIFO"
	case m&fs.ModeDevice != 0:
		what = "a device"
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	}
	return &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (it is %s; accepted: a regular file)", ErrNotRegular, what)}
}
