package atomicfile

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
)

// Temp writes a complete temporary file for dir/name through write
// (buffered), syncs it, closes it, gives it mode 0644 and returns its path,
// ready to be renamed to dir/name. On error nothing is left behind and ""
// is returned. Renaming several temporaries only after all are written
// commits a set of files together.
func Temp(dir, name string, write func(w *bufio.Writer) error) (string, error) {
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return "", err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = write(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// WriteFile writes b to path atomically (Temp, a rename, and a sync of the
// directory so that the rename survives a crash).
func WriteFile(path string, b []byte) error {
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := Temp(dir, name, func(w *bufio.Writer) error { _, err := w.Write(b); return err })
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	SyncDir(dir)
	return nil
}

// SyncDir makes renames in dir durable, where the file system allows it
// (best effort: a failure to sync a directory loses nothing already
// written).
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Named is one file of a set: its name in the directory, and what writes it.
type Named struct {
	Name  string
	Write func(w *bufio.Writer) error
}

// WriteSet writes every file of a set into dir as one step as far as a
// reader can tell: each to its own temp file first (Temp), and only when
// all are written are they renamed into place, then the directory synced.
// If a write fails, no file of the set is replaced and the temp files are
// removed; the error names the file.
func WriteSet(dir string, files []Named) (err error) {
	var temps []string
	defer func() {
		if err != nil {
			for _, t := range temps {
				os.Remove(t)
			}
		}
	}()
	for _, f := range files {
		tmp, err := Temp(dir, f.Name, f.Write)
		if err != nil {
			return fmt.Errorf("writing %s: %w", filepath.Join(dir, f.Name), err)
		}
		temps = append(temps, tmp)
	}
	for i, f := range files {
		if err := os.Rename(temps[i], filepath.Join(dir, f.Name)); err != nil {
			return err
		}
	}
	temps = nil
	SyncDir(dir)
	return nil
}
